/**
 * A permit's or a reader's round over the slots (issue 32): one call per
 * node per round, whatever the limit; a release wakes as many waiters as it
 * frees slots, not every waiter; and a waiter keeps its place across rounds
 * (a waiting reader is not overtaken by a writer that came later). Memory
 * nodes and TestClock, so each count is exact.
 *
 * One suite, run by both Effect lines (each package's test/slots.test.ts).
 */
import {
  assert,
  Deferred,
  describe,
  Effect,
  Exit,
  Fiber,
  fork,
  inScope,
  it,
  ReadWriteLock,
  RedisNode,
  Redlock,
  Schedule,
  Scope,
  Semaphore,
  TestClock
} from "@effect-redlock/line"
import { memory } from "./support.js"

/** Every node's operation count. */
const operations = Effect.flatMap(
  RedisNode.MemoryNodes,
  (nodes) => Effect.forEach(Array.from({ length: nodes.size }, (_, index) => index), (index) => nodes.operations(index))
)

/** What each node was asked between two counts. */
const since = (before: ReadonlyArray<number>) =>
  Effect.map(operations, (after) => after.map((count, index) => count - before[index]))

/** Held in a scope of its own, closed by the caller. */
const hold = <A, E, R>(acquire: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* inScope(scope)(acquire)
    return Scope.close(scope, Exit.void)
  })

// Waiters that never poll within a test: only a release (or the end of a place) wakes them.
const patient = Schedule.spaced("1 hour")

export const slotsSuite = () => {
  describe("slots: one call per node per round (memory nodes, TestClock)", () => {
    it.effect("a permit of 8, a read of 16 slots and a refused permit of 4 each cost one call per node", () =>
      Effect.gen(function*() {
        const permits = { limit: 8, ttl: "10 seconds", retry: Redlock.noRetry } as const
        let before = yield* operations
        const permit = yield* hold(Semaphore.acquire("jobs", permits))
        assert.deepStrictEqual(yield* since(before), [1, 1, 1, 1, 1], "a free semaphore: one round")

        const reads = { ttl: "10 seconds", retry: Redlock.noRetry } as const
        before = yield* operations
        const read = yield* hold(ReadWriteLock.acquireRead("doc", reads))
        assert.deepStrictEqual(yield* since(before), [1, 1, 1, 1, 1], "a read of 16 slots: one round")

        const full = { limit: 4, ttl: "10 seconds", retry: Redlock.noRetry } as const
        const holders = yield* Effect.all(Array.from({ length: 4 }, () => hold(Semaphore.acquire("four", full))))
        before = yield* operations
        assert.isTrue(Exit.isFailure(yield* Effect.exit(Effect.scoped(Semaphore.acquire("four", full)))))
        assert.deepStrictEqual(
          yield* since(before),
          [1, 1, 1, 1, 1],
          "a full semaphore of 4: one round, nothing to undo"
        )
        yield* Effect.all(holders)
        yield* permit
        yield* read
      }).pipe(Effect.provide(memory(5))))

    it.effect("a release of one slot hands it to the first of four waiters: its call per node is all, the waiter sends no round", () =>
      Effect.gen(function*() {
        const options = { limit: 2, ttl: "10 seconds", retry: patient } as const
        const holders = [
          yield* hold(Semaphore.acquire("jobs", options)),
          yield* hold(Semaphore.acquire("jobs", options))
        ]
        const granted: Array<number> = []
        // One millisecond apart: their tickets, hence their places, differ.
        const waiters = yield* Effect.forEach([0, 1, 2, 3], (waiter) =>
          Effect.tap(
            fork(
              Semaphore.withPermit("jobs", options)(Effect.andThen(
                Effect.sync(() => granted.push(waiter)),
                Effect.never
              ))
            ),
            TestClock.adjust("1 millis")
          ))
        yield* TestClock.adjust("10 millis")
        const before = yield* operations
        yield* holders[0]
        yield* TestClock.adjust("10 millis")
        // The release hands the slot to the first waiter on every node, which holds it on their word: one call per node.
        assert.deepStrictEqual(yield* since(before), [1, 1, 1], "one release, no round")
        assert.deepStrictEqual(granted, [0])
        yield* Effect.forEach(waiters, Fiber.interrupt)
        yield* holders[1]
      }).pipe(Effect.provide(memory(3))))
  })

  describe("slots: a waiter keeps its place across rounds (memory nodes, TestClock)", () => {
    it.effect("waiters for a permit are served in the order they came, whoever asks after a release", () =>
      Effect.gen(function*() {
        const options = { limit: 1, ttl: "10 seconds", retry: patient } as const
        const holder = yield* hold(Semaphore.acquire("jobs", options))
        const order: Array<string> = []
        const waiter = (name: string) =>
          fork(
            Semaphore.withPermit("jobs", options)(Effect.andThen(
              Effect.sync(() => order.push(name)),
              Effect.sleep("10 millis")
            ))
          )
        const first = yield* waiter("first")
        yield* TestClock.adjust("5 millis")
        const second = yield* waiter("second")
        yield* TestClock.adjust("5 millis")
        yield* holder
        // A newcomer after the release stands behind both.
        const third = yield* waiter("third")
        yield* TestClock.adjust("100 millis")
        yield* Effect.forEach([first, second, third], Fiber.join)
        assert.deepStrictEqual(order, ["first", "second", "third"])
      }).pipe(Effect.provide(memory(3))))

    it.effect("a waiting reader goes before a writer that came after it", () =>
      Effect.gen(function*() {
        const options = { ttl: "10 seconds", maxReaders: 4, retry: patient } as const
        // Another client's write: a fiber of its own (a fiber's own write would make its read a self-deadlock).
        const done = yield* Deferred.make<void>()
        const writer = yield* fork(ReadWriteLock.withWrite("doc", options)(Deferred.await(done)))
        yield* TestClock.adjust("1 millis")
        const order: Array<string> = []
        const reader = yield* fork(
          ReadWriteLock.withRead("doc", options)(Effect.andThen(
            Effect.sync(() => order.push("reader")),
            Effect.sleep("10 millis")
          ))
        )
        yield* TestClock.adjust("5 millis")
        const laterWriter = yield* fork(
          ReadWriteLock.withWrite("doc", options)(Effect.sync(() => order.push("later writer")))
        )
        yield* TestClock.adjust("5 millis")
        yield* Deferred.succeed(done, undefined)
        yield* TestClock.adjust("100 millis")
        yield* Fiber.join(writer)
        yield* Fiber.join(reader)
        yield* Fiber.join(laterWriter)
        assert.deepStrictEqual(order, ["reader", "later writer"])
      }).pipe(Effect.provide(memory(3))))
  })
}
