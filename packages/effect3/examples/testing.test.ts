/**
 * Testing code that takes locks: in-memory nodes with fault controls, time
 * driven by the TestClock. No Redis needed.
 *
 *   npm install --save-dev vitest@3 @effect/vitest@0.30   # the versions for effect 3 (their latest need effect 4)
 *   npx vitest run examples/testing.test.ts
 */
import { assert, it } from "@effect/vitest"
import { Effect, Fiber, Layer, TestClock } from "effect"
import { RedisNode, Redlock } from "effect-redlock"

// The code under test: runs a job at most once at a time.
const runJobOnce = (job: Effect.Effect<void>) =>
  job.pipe(
    Redlock.withLock("jobs:nightly", { ttl: "10 seconds", retry: Redlock.noRetry }),
    Effect.as("ran"),
    Effect.catchTag("LockNotAcquired", () => Effect.succeed("skipped"))
  )

const TestLive = Redlock.layer().pipe(Layer.provideMerge(RedisNode.layerMemory(3)))

it.effect("a second run is skipped while the first holds the lock", () =>
  Effect.gen(function*() {
    const first = yield* Effect.fork(runJobOnce(Effect.sleep("5 seconds")))
    yield* TestClock.adjust("1 second")
    assert.strictEqual(yield* runJobOnce(Effect.void), "skipped")
    yield* TestClock.adjust("5 seconds")
    assert.strictEqual(yield* Fiber.join(first), "ran")
    assert.strictEqual(yield* runJobOnce(Effect.void), "ran")
  }).pipe(Effect.provide(TestLive)))

it.effect("the job still runs when one node of three is down", () =>
  Effect.gen(function*() {
    const nodes = yield* RedisNode.MemoryNodes
    yield* nodes.setDown(0, true)
    const run = yield* Effect.fork(runJobOnce(Effect.void))
    yield* TestClock.adjust("100 millis") // the down node's per-node timeout
    assert.strictEqual(yield* Fiber.join(run), "ran")
  }).pipe(Effect.provide(TestLive)))
