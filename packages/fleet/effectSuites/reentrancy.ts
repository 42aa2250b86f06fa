/**
 * A fiber that asks for a read-write lock it holds (issue 32,
 * "self-deadlock"): a write of what it reads or writes, or a read of what it
 * writes, fails at once with SelfDeadlock instead of waiting for itself;
 * another read of what it reads is acquired ahead of the line, so a writer
 * waiting behind its first read does not make it wait for itself. A fiber's
 * children (forked inside its hold, joined or not) count as the holder;
 * other fibers wait as before.
 *
 * One suite, run by both Effect lines (each package's test/reentrancy.test.ts).
 */
import {
  assert,
  Clock,
  Deferred,
  describe,
  Effect,
  Fiber,
  fork,
  it,
  ReadWriteLock,
  Redlock,
  RedlockError,
  Schedule,
  TestClock
} from "@effect-redlock/line"
import { failureOf, failureOfType, memory } from "./support.js"

const once = { ttl: "10 seconds", maxReaders: 3, retry: Redlock.noRetry } as const

export const reentrancySuite = () => {
  describe("a fiber that asks for a read-write lock it holds (memory nodes, TestClock)", () => {
    it.effect("a write of what the fiber reads fails at once with SelfDeadlock, not at the end of its schedule", () =>
      Effect.gen(function*() {
        const retry = Schedule.spaced("1 second")
        const refused = yield* ReadWriteLock.withRead("doc", once)(
          Effect.exit(Effect.scoped(ReadWriteLock.acquireWrite("doc", { ...once, retry })))
        )
        const error = failureOfType(refused, RedlockError.SelfDeadlock)
        assert.deepInclude(error, { resource: "doc", held: "read", requested: "write" })
        assert.match(error.message, /a read cannot be upgraded/)
        assert.strictEqual(yield* Clock.currentTimeMillis, 0)
      }).pipe(Effect.provide(memory(3))))

    it.effect("a read or a write of what the fiber writes, by it or a child of it, fails at once with SelfDeadlock", () =>
      Effect.gen(function*() {
        const errors = yield* ReadWriteLock.withWrite("doc", once)(
          Effect.gen(function*() {
            const read = failureOf(yield* Effect.exit(Effect.scoped(ReadWriteLock.acquireRead("doc", once))))
            const child = yield* fork(Effect.exit(Effect.scoped(ReadWriteLock.acquireWrite("doc", once))))
            return [read, failureOf(yield* Fiber.join(child))]
          })
        )
        assert.instanceOf(errors[0], RedlockError.SelfDeadlock)
        assert.deepInclude(errors[0], { held: "write", requested: "read" })
        assert.instanceOf(errors[1], RedlockError.SelfDeadlock)
        assert.deepInclude(errors[1], { held: "write", requested: "write" })
      }).pipe(Effect.provide(memory(3))))

    it.effect("another fiber still waits, as before: refused with LockNotAcquired", () =>
      Effect.gen(function*() {
        const holder = yield* fork(ReadWriteLock.withWrite("doc", once)(Effect.never))
        yield* TestClock.adjust("1 millis")
        assert.instanceOf(
          failureOf(yield* Effect.exit(Effect.scoped(ReadWriteLock.acquireRead("doc", once)))),
          RedlockError.LockNotAcquired
        )
        yield* Fiber.interrupt(holder)
      }).pipe(Effect.provide(memory(3))))

    it.effect("a read again while a writer waits behind the first is taken ahead of the line (it would wait for itself)", () =>
      Effect.gen(function*() {
        const forever = Schedule.spaced("1 second")
        const order: Array<string> = []
        const readerGoesOn = yield* Deferred.make<void>()
        const reader = yield* fork(
          ReadWriteLock.withRead("doc", once)(
            Effect.andThen(
              Deferred.await(readerGoesOn),
              ReadWriteLock.withRead("doc", { ...once, retry: forever })(
                Effect.sync(() => order.push("read again"))
              )
            )
          )
        )
        yield* TestClock.adjust("1 millis")
        const writer = yield* fork(
          ReadWriteLock.withWrite("doc", { ...once, retry: forever })(Effect.sync(() => order.push("write")))
        )
        yield* TestClock.adjust("10 millis") // the writer waits in line
        yield* Deferred.succeed(readerGoesOn, undefined)
        yield* TestClock.adjust("10 millis")
        yield* Fiber.join(reader)
        yield* Fiber.join(writer)
        assert.deepStrictEqual(order, ["read again", "write"])
      }).pipe(Effect.provide(memory(3))))

    it.effect("reads of one fiber without a writer waiting take a slot each, as before", () =>
      Effect.gen(function*() {
        const slots = yield* ReadWriteLock.withRead("doc", once)(
          ReadWriteLock.withRead("doc", once)(Effect.map(ReadWriteLock.inspect("doc", 3), (read) => read.readers))
        )
        assert.strictEqual(slots, 2)
      }).pipe(Effect.provide(memory(3))))
  })
}
