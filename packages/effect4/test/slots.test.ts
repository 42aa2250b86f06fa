/**
 * A permit's or a reader's round over the slots (issue 32): one call per
 * node per round, and a waiting reader keeps its place (a writer that came
 * later goes after it). Memory nodes on the TestClock, so counts are exact.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as TestClock from "effect/testing/TestClock"
import { ReadWriteLock, RedisNode, Redlock, Semaphore } from "effect-redlock"

const memory = (n: number) => Redlock.layer().pipe(Layer.provideMerge(RedisNode.layerMemory(n)))
const patient = Schedule.spaced("1 hour")

/** Every node's operation count. */
const operations = Effect.flatMap(RedisNode.MemoryNodes, (nodes) =>
  Effect.forEach(Array.from({ length: nodes.size }, (_, index) => index), (index) => nodes.operations(index)))

describe("slots (memory nodes, TestClock)", () => {
  it.effect("a refused permit of 4 and a read of 16 slots each cost one call per node", () =>
    Effect.gen(function*() {
      const full = { limit: 4, ttl: "10 seconds", retry: Redlock.noRetry } as const
      yield* Effect.replicateEffect(Semaphore.acquire("four", full), 4)
      let before = yield* operations
      assert.isTrue(Exit.isFailure(yield* Effect.exit(Effect.scoped(Semaphore.acquire("four", full)))))
      assert.deepStrictEqual((yield* operations).map((count, index) => count - before[index]), [1, 1, 1, 1, 1])
      before = yield* operations
      yield* Effect.scoped(ReadWriteLock.acquireRead("doc", { ttl: "10 seconds", retry: Redlock.noRetry }))
      // The read's round, then its release.
      assert.deepStrictEqual((yield* operations).map((count, index) => count - before[index]), [2, 2, 2, 2, 2])
    }).pipe(Effect.scoped, Effect.provide(memory(5))))

  it.effect("a waiting reader goes before a writer that came after it", () =>
    Effect.gen(function*() {
      const options = { ttl: "10 seconds", maxReaders: 4, retry: patient } as const
      const done = yield* Deferred.make<void>()
      const writer = yield* Effect.forkChild(ReadWriteLock.withWrite("doc", options)(Deferred.await(done)))
      yield* TestClock.adjust("1 millis")
      const order: Array<string> = []
      const reader = yield* Effect.forkChild(ReadWriteLock.withRead("doc", options)(
        Effect.andThen(Effect.sync(() => order.push("reader")), Effect.sleep("10 millis"))
      ))
      yield* TestClock.adjust("5 millis")
      const laterWriter = yield* Effect.forkChild(ReadWriteLock.withWrite("doc", options)(Effect.sync(() => order.push("later writer"))))
      yield* TestClock.adjust("5 millis")
      yield* Deferred.succeed(done, undefined)
      yield* TestClock.adjust("100 millis")
      yield* Fiber.join(writer)
      yield* Fiber.join(reader)
      yield* Fiber.join(laterWriter)
      assert.deepStrictEqual(order, ["reader", "later writer"])
    }).pipe(Effect.provide(memory(3))))
})
