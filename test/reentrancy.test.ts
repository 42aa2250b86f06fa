/**
 * A fiber that asks for what it holds (issue 32, "self-deadlock"): the same
 * lock again is served by its hold; a write of what it reads, or a lock on
 * some of a held lock's resources, fails at once with SelfDeadlock instead of
 * waiting for itself. A fiber's children (forked inside its hold, joined or
 * not) count as the holder; other fibers still wait as before.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option, Schedule, TestClock } from "effect"
import * as ReadWriteLock from "../src/ReadWriteLock.js"
import * as Redlock from "../src/Redlock.js"
import { LockNotAcquired, SelfDeadlock } from "../src/RedlockError.js"
import { failureOf, memory } from "./support.js"

const once = { ttl: "10 seconds", retry: Redlock.noRetry } as const

describe("a fiber that asks for what it holds (memory nodes, TestClock)", () => {
  it.effect("the same lock again, by the fiber or a child of it, is served by its hold and released with it", () =>
    Effect.gen(function*() {
      const inner = yield* Redlock.withLock("job", once)(
        Effect.gen(function*() {
          const outer = (yield* Redlock.inspect("job")).holder
          const again = yield* Effect.scoped(Redlock.acquire("job", once))
          const child = yield* Effect.fork(Effect.scoped(Redlock.acquire("job", once)))
          const fromChild = yield* Fiber.join(child)
          // The inner scope closed: the lock is still held, by the same value.
          const still = (yield* Redlock.inspect("job")).holder
          return { outer, again: again.value, fromChild: fromChild.value, still }
        })
      )
      assert.isTrue(Option.isSome(inner.outer))
      assert.deepStrictEqual([inner.again, inner.fromChild], [Option.getOrThrow(inner.outer), Option.getOrThrow(inner.outer)])
      assert.deepStrictEqual(inner.still, inner.outer, "the inner scopes did not release it")
      assert.isTrue(Option.isNone((yield* Redlock.inspect("job")).holder), "released with the outer hold")
    }).pipe(Effect.provide(memory(3))))

  it.effect("another fiber still waits for the lock, as before", () =>
    Effect.gen(function*() {
      const holder = yield* Effect.fork(Redlock.withLock("job", once)(Effect.never))
      yield* TestClock.adjust("1 millis")
      const refused = yield* Effect.exit(Effect.scoped(Redlock.acquire("job", once)))
      assert.instanceOf(failureOf(refused), LockNotAcquired, "this fiber is no child of the holder")
      yield* Fiber.interrupt(holder)
    }).pipe(Effect.provide(memory(3))))

  it.effect("a lock on some of a held lock's resources fails at once with SelfDeadlock", () =>
    Effect.gen(function*() {
      const refused = yield* Redlock.withLock("a", once)(Effect.exit(Effect.scoped(Redlock.acquire(["a", "b"], once))))
      const error = failureOf(refused)
      assert.instanceOf(error, SelfDeadlock)
      assert.deepInclude(error, { resource: "a", held: "lock", requested: "lock" })
    }).pipe(Effect.provide(memory(3))))

  it.effect("a write of what the fiber reads fails at once with SelfDeadlock, not at the end of its schedule", () =>
    Effect.gen(function*() {
      const retry = Schedule.spaced("1 second")
      const refused = yield* ReadWriteLock.withRead("doc", once)(
        Effect.exit(Effect.scoped(ReadWriteLock.acquireWrite("doc", { ttl: "10 seconds", retry })))
      )
      const error = failureOf(refused)
      assert.instanceOf(error, SelfDeadlock)
      assert.deepInclude(error, { resource: "doc", held: "read", requested: "write" })
      assert.strictEqual(yield* TestClock.currentTimeMillis, 0)
    }).pipe(Effect.provide(memory(3))))

  it.effect("a read again while a writer waits is served by the fiber's read (it would wait behind the writer for itself)", () =>
    Effect.gen(function*() {
      const forever = Schedule.spaced("1 second")
      const order: Array<string> = []
      const readerGoesOn = yield* Deferred.make<void>()
      const reader = yield* Effect.fork(ReadWriteLock.withRead("doc", once)(
        Effect.gen(function*() {
          yield* Deferred.await(readerGoesOn)
          yield* ReadWriteLock.withRead("doc", { ...once, retry: forever })(Effect.sync(() => order.push("read again")))
        })
      ))
      yield* TestClock.adjust("1 millis")
      const writer = yield* Effect.fork(
        ReadWriteLock.withWrite("doc", { ttl: "10 seconds", retry: forever })(Effect.sync(() => order.push("write")))
      )
      yield* TestClock.adjust("10 millis") // the writer waits in line
      yield* Deferred.succeed(readerGoesOn, undefined)
      yield* TestClock.adjust("10 millis")
      yield* Fiber.join(reader)
      yield* Fiber.join(writer)
      assert.deepStrictEqual(order, ["read again", "write"])
    }).pipe(Effect.provide(memory(3))))

  it.effect("a write holder's read and write are served by its hold", () =>
    Effect.gen(function*() {
      const served = yield* ReadWriteLock.withWrite("doc", once)(
        Effect.gen(function*() {
          const read = yield* Effect.scoped(ReadWriteLock.acquireRead("doc", once))
          const write = yield* Effect.scoped(ReadWriteLock.acquireWrite("doc", once))
          return [read.value, write.value]
        })
      )
      assert.strictEqual(served[0], served[1])
      // Released with the hold: a reader gets in now.
      yield* Effect.scoped(ReadWriteLock.acquireRead("doc", once))
    }).pipe(Effect.provide(memory(3))))
})
