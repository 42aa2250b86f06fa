/**
 * A fiber that asks for a read-write lock it holds (issue 32,
 * "self-deadlock"): a write of what it reads or writes, or a read of what it
 * writes, fails at once with SelfDeadlock instead of waiting for itself;
 * another read of what it reads is acquired ahead of the line, so a writer
 * waiting behind its first read does not make it wait for itself. A fiber's
 * children (forked inside its hold, joined or not) count as the holder;
 * other fibers wait as before.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as TestClock from "effect/testing/TestClock"
import { ReadWriteLock, RedisNode, Redlock, RedlockError } from "effect-redlock"

const memory = (n: number) => Redlock.layer().pipe(Layer.provideMerge(RedisNode.layerMemory(n)))
const once = { ttl: "10 seconds", maxReaders: 3, retry: Redlock.noRetry } as const

describe("a fiber that asks for a read-write lock it holds (memory nodes, TestClock)", () => {
  it.effect("a write of what it reads, a read or write of what it writes (by it or a child), fail at once with SelfDeadlock", () =>
    Effect.gen(function*() {
      const retry = Schedule.spaced("1 second")
      const upgrade = yield* ReadWriteLock.withRead("doc", once)(
        Effect.flip(Effect.scoped(ReadWriteLock.acquireWrite("doc", { ...once, retry })))
      )
      assert.instanceOf(upgrade, RedlockError.SelfDeadlock)
      assert.deepInclude(upgrade, { resource: "doc", held: "read", requested: "write" })
      assert.strictEqual(yield* Effect.clockWith((clock) => clock.currentTimeMillis), 0, "at once")
      const [read, write] = yield* ReadWriteLock.withWrite("doc", once)(
        Effect.all([
          Effect.flip(Effect.scoped(ReadWriteLock.acquireRead("doc", once))),
          Effect.flatMap(Effect.forkChild(Effect.flip(Effect.scoped(ReadWriteLock.acquireWrite("doc", once)))), Fiber.join)
        ])
      )
      assert.deepInclude(read, { _tag: "SelfDeadlock", held: "write", requested: "read" })
      assert.deepInclude(write, { _tag: "SelfDeadlock", held: "write", requested: "write" })
    }).pipe(Effect.provide(memory(3))))

  it.effect("another fiber still waits, as before: refused with LockNotAcquired", () =>
    Effect.gen(function*() {
      const holder = yield* Effect.forkChild(ReadWriteLock.withWrite("doc", once)(Effect.never))
      yield* TestClock.adjust("1 millis")
      const refused = yield* Effect.flip(Effect.scoped(ReadWriteLock.acquireRead("doc", once)))
      assert.strictEqual(refused._tag, "LockNotAcquired")
      yield* Fiber.interrupt(holder)
    }).pipe(Effect.provide(memory(3))))

  it.effect("a read again while a writer waits behind the first is taken ahead of the line (it would wait for itself)", () =>
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
        ReadWriteLock.withWrite("doc", { ...once, retry: forever })(Effect.sync(() => order.push("write")))
      )
      yield* TestClock.adjust("10 millis") // the writer waits in line
      yield* Deferred.succeed(readerGoesOn, undefined)
      yield* TestClock.adjust("10 millis")
      yield* Fiber.join(reader)
      yield* Fiber.join(writer)
      assert.deepStrictEqual(order, ["read again", "write"])
    }).pipe(Effect.provide(memory(3))))
})
