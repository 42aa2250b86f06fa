/**
 * A fiber that asks for what it holds (issue 32, "self-deadlock"): the same
 * lock again is served by its hold; a write of what it reads, or a lock on
 * some of a held lock's resources, fails at once with SelfDeadlock instead of
 * waiting for itself. A fiber's children (forked inside its hold, joined or
 * not) count as the holder; other fibers still wait as before.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as TestClock from "effect/testing/TestClock"
import { ReadWriteLock, RedisNode, Redlock, RedlockError } from "effect-redlock"

const memory = (n: number) => Redlock.layer().pipe(Layer.provideMerge(RedisNode.layerMemory(n)))
const once = { ttl: "10 seconds", retry: Redlock.noRetry } as const
const holderOf = (resource: string) => Effect.map(Redlock.inspect(resource), (inspected) => inspected.holder)

describe("a fiber that asks for what it holds (memory nodes, TestClock)", () => {
  it.effect("the same lock again, by the fiber or a child of it, is served by its hold and released with it", () =>
    Effect.gen(function*() {
      const seen = yield* Redlock.withLock("job", once)(
        Effect.gen(function*() {
          const outer = yield* holderOf("job")
          const again = yield* Effect.scoped(Redlock.acquire("job", once))
          const fromChild = yield* Fiber.join(yield* Effect.forkChild(Effect.scoped(Redlock.acquire("job", once))))
          return { outer, values: [again.value, fromChild.value], still: yield* holderOf("job") }
        })
      )
      const outer = Option.getOrThrow(seen.outer)
      assert.deepStrictEqual(seen.values, [outer, outer])
      assert.deepStrictEqual(seen.still, seen.outer, "the inner scopes did not release it")
      assert.isTrue(Option.isNone(yield* holderOf("job")), "released with the outer hold")
    }).pipe(Effect.provide(memory(3))))

  it.effect("another fiber still waits for the lock, as before", () =>
    Effect.gen(function*() {
      const holder = yield* Effect.forkChild(Redlock.withLock("job", once)(Effect.never))
      yield* TestClock.adjust("1 millis")
      const refused = yield* Effect.flip(Effect.scoped(Redlock.acquire("job", once)))
      assert.strictEqual(refused._tag, "LockNotAcquired")
      yield* Fiber.interrupt(holder)
    }).pipe(Effect.provide(memory(3))))

  it.effect("a lock on some of a held lock's resources, or a write of what the fiber reads, fails at once with SelfDeadlock", () =>
    Effect.gen(function*() {
      const partial = yield* Redlock.withLock("a", once)(Effect.flip(Effect.scoped(Redlock.acquire(["a", "b"], once))))
      assert.instanceOf(partial, RedlockError.SelfDeadlock)
      assert.deepInclude(partial, { resource: "a", held: "lock", requested: "lock" })
      const retry = Schedule.spaced("1 second")
      const upgrade = yield* ReadWriteLock.withRead("doc", once)(
        Effect.flip(Effect.scoped(ReadWriteLock.acquireWrite("doc", { ttl: "10 seconds", retry })))
      )
      assert.instanceOf(upgrade, RedlockError.SelfDeadlock)
      assert.deepInclude(upgrade, { resource: "doc", held: "read", requested: "write" })
      assert.strictEqual(yield* Effect.clockWith((clock) => clock.currentTimeMillis), 0, "at once")
    }).pipe(Effect.provide(memory(3))))

  it.effect("a read again while a writer waits is served by the fiber's read (it would wait behind the writer for itself)", () =>
    Effect.gen(function*() {
      const forever = Schedule.spaced("1 second")
      const order: Array<string> = []
      const readerGoesOn = yield* Deferred.make<void>()
      const reader = yield* Effect.forkChild(ReadWriteLock.withRead("doc", once)(
        Effect.andThen(
          Deferred.await(readerGoesOn),
          ReadWriteLock.withRead("doc", { ...once, retry: forever })(Effect.sync(() => order.push("read again")))
        )
      ))
      yield* TestClock.adjust("1 millis")
      const writer = yield* Effect.forkChild(
        ReadWriteLock.withWrite("doc", { ttl: "10 seconds", retry: forever })(Effect.sync(() => order.push("write")))
      )
      yield* TestClock.adjust("10 millis") // the writer waits in line
      yield* Deferred.succeed(readerGoesOn, undefined)
      yield* TestClock.adjust("10 millis")
      yield* Fiber.join(reader)
      yield* Fiber.join(writer)
      assert.deepStrictEqual(order, ["read again", "write"])
    }).pipe(Effect.provide(memory(3))))
})
