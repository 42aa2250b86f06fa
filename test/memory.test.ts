/**
 * Deterministic tests of the lock manager on in-memory nodes, with time on
 * the TestClock and jitter on a fixed Random.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Option, Random, TestClock } from "effect"
import * as Lock from "../src/Lock.js"
import * as Redlock from "../src/Redlock.js"
import * as RedisNode from "../src/RedisNode.js"
import { InvalidOptions, LockNotAcquired } from "../src/RedlockError.js"
import { failureOf, memory } from "./support.js"

const allKeys = Effect.gen(function*() {
  const control = yield* RedisNode.MemoryNodes
  return yield* Effect.forEach(Array.from({ length: control.size }, (_, i) => i), control.keys)
})

const assertNoKeys = Effect.gen(function*() {
  assert.deepStrictEqual((yield* allKeys).flat(), [])
})

/** Advance the TestClock 1 ms at a time, so that sleeps started along the way also fire in order. */
const tick = (millis: number) =>
  Effect.forEach(Array.from({ length: millis }), () => TestClock.adjust("1 millis"), { discard: true })

/** Every node up, fast and healthy again, so that the scope's own release is answered. */
const heal = Effect.gen(function*() {
  const control = yield* RedisNode.MemoryNodes
  for (let i = 0; i < control.size; i++) {
    yield* control.setDown(i, false)
    yield* control.setLatency(i, 0)
    yield* control.setFailure(i, Option.none())
  }
})

const tags = (error: LockNotAcquired) => error.outcomes.map((outcome) => outcome._tag)

describe("validity and expiry", () => {
  it.effect("validity = ttl - elapsed - drift, measured on the attempt, and remaining counts down", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      for (let i = 0; i < 5; i++) yield* control.setLatency(i, "10 millis")
      const fiber = yield* Effect.fork(Redlock.acquire("r", { ttl: "1 second", nodeTimeout: "50 millis" }))
      yield* TestClock.adjust("10 millis")
      const lock = yield* Fiber.join(fiber)
      // drift = ceil(1000 * 0.01) + 2 = 12; elapsed = 10
      assert.strictEqual(Duration.toMillis(lock.validity), 978)
      assert.strictEqual(lock.attempts, 1)
      yield* TestClock.adjust("500 millis")
      assert.strictEqual(Duration.toMillis(yield* lock.remaining), 478)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(Duration.toMillis(yield* lock.remaining), 0)
      for (let i = 0; i < 5; i++) yield* control.setLatency(i, 0) // lets the scope's release land without the clock
    }).pipe(Effect.scoped, Effect.provide(memory(5))))

  it.effect("an expired lock can be taken by another client; before expiry it cannot", () =>
    Effect.gen(function*() {
      const first = yield* Redlock.make()
      const second = yield* Redlock.make()
      const lock = yield* first.acquire("r", { ttl: "1 second", retry: Redlock.noRetry })
      const refused = failureOf(yield* Effect.exit(second.acquire("r", { ttl: "1 second", retry: Redlock.noRetry })))
      assert.instanceOf(refused, LockNotAcquired)
      assert.deepStrictEqual(tags(refused as LockNotAcquired), ["Held", "Held", "Held", "Held", "Held"])
      yield* TestClock.adjust("999 millis")
      assert.isTrue(Exit.isFailure(yield* Effect.exit(second.acquire("r", { ttl: "1 second", retry: Redlock.noRetry }))))
      yield* TestClock.adjust("1 millis")
      const next = yield* second.acquire("r", { ttl: "1 second", retry: Redlock.noRetry })
      assert.notStrictEqual(next.value, lock.value)
    }).pipe(Effect.scoped, Effect.provide(memory(5))))

  it.effect("an attempt whose validity is not positive has failed, and its keys are released", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      for (let i = 0; i < 5; i++) yield* control.setLatency(i, "106 millis")
      // drift = ceil(1.1) + 2 = 4; validity = 110 - 106 - 4 = 0
      const fiber = yield* Effect.fork(
        Effect.exit(Redlock.acquire("r", { ttl: "110 millis", nodeTimeout: "109 millis", retry: Redlock.noRetry }))
      )
      yield* TestClock.adjust("106 millis")
      yield* TestClock.adjust("106 millis") // the release travels through the same latency
      const error = failureOf(yield* Fiber.join(fiber)) as LockNotAcquired
      assert.strictEqual(error.reason, "ValidityExpired")
      yield* assertNoKeys
    }).pipe(Effect.scoped, Effect.provide(memory(5))))
})

describe("retry", () => {
  it.effect("the default retry waits 100-200 ms at random between attempts, 4 attempts in all", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      for (let i = 0; i < 5; i++) yield* control.putString(i, "redlock:r", "someone else")
      const fiber = yield* Effect.fork(
        Effect.exit(Redlock.acquire("r", { ttl: "1 second" })).pipe(Effect.withRandom(Random.fixed([0, 0.5, 1])))
      )
      const attempts = () => control.operations(0)
      yield* TestClock.adjust("0 millis")
      assert.strictEqual(yield* attempts(), 1)
      // delays: 200 * (0.5 + 0.5 * r) for r = 0, 0.5, 1
      for (const [delay, expected] of [[100, 2], [150, 3], [200, 4]] as const) {
        yield* TestClock.adjust(`${delay - 1} millis`)
        assert.strictEqual(yield* attempts(), expected - 1)
        yield* TestClock.adjust("1 millis")
        assert.strictEqual(yield* attempts(), expected)
      }
      const error = failureOf(yield* Fiber.join(fiber)) as LockNotAcquired
      assert.strictEqual(error.attempts, 4)
      assert.strictEqual(error.elapsedMillis, 450)
      assert.include(error.message, "not acquired after 4 attempt(s)")
    }).pipe(Effect.scoped, Effect.provide(memory(5))))

  it.effect("a split vote (2/2/1 of 5 nodes) fails for all three contenders, then resolves on a jittered retry", () =>
    Effect.gen(function*() {
      const shared = yield* RedisNode.RedisNodes
      // Each contender reaches its own nodes first: A nodes 0-1, B nodes 2-3, C node 4.
      const contender = (fast: ReadonlyArray<number>) =>
        Redlock.make().pipe(Effect.provideService(
          RedisNode.RedisNodes,
          shared.map((node, index) => fast.includes(index) ? node : delayed(node, Duration.millis(5)))
        ))
      const [a, b, c] = [yield* contender([0, 1]), yield* contender([2, 3]), yield* contender([4])]
      const run = (manager: Redlock.RedlockService, jitter: number) =>
        Effect.fork(Effect.exit(manager.acquire("r", { ttl: "10 seconds" })).pipe(
          Effect.withRandom(Random.fixed([jitter]))
        ))
      const fibers = [yield* run(a, 0), yield* run(b, 0.5), yield* run(c, 1)]
      // Let all three send their first attempt at the same instant before time moves.
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
      yield* tick(1000)
      const exits = yield* Effect.forEach(fibers, Fiber.join)
      const winners = exits.filter(Exit.isSuccess)
      assert.strictEqual(winners.length, 1)
      const lock = winners[0].value
      assert.strictEqual(lock.attempts, 2, "the first attempt of every contender was a split vote")
      for (const exit of exits.filter(Exit.isFailure)) {
        const error = failureOf(exit) as LockNotAcquired
        assert.strictEqual(error.attempts, 4)
      }
      const control = yield* RedisNode.MemoryNodes
      for (let i = 0; i < 5; i++) assert.deepStrictEqual(yield* control.keys(i), ["redlock:r"])
      // Only the manager that acquired the lock releases it.
      const released = yield* Effect.forEach([a, b, c], (manager) => manager.release(lock))
      assert.deepStrictEqual(released.map((r) => r.released).sort(), [0, 0, 5])
      yield* assertNoKeys
    }).pipe(Effect.scoped, Effect.provide(memory(5))))
})

/**
 * A node behind a slower link for acquire: the request arrives after `latency`
 * and the answer takes as long again, so every contender's request lands
 * before any contender learns the outcome.
 */
const delayed = (node: RedisNode.RedisNode, latency: Duration.Duration): RedisNode.RedisNode => ({
  ...node,
  acquire: (keys, value, ttl) =>
    Effect.sleep(latency).pipe(Effect.zipRight(node.acquire(keys, value, ttl)), Effect.zipLeft(Effect.sleep(latency)))
})

describe("faults", () => {
  it.effect("2 of 5 nodes down: acquired at once, without waiting for the per-node timeout", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      yield* control.setDown(1, true)
      yield* control.setDown(3, true)
      const fiber = yield* Effect.fork(Redlock.acquire("r", { ttl: "10 seconds", nodeTimeout: "100 millis" }))
      yield* TestClock.adjust("1 millis")
      const polled = yield* Fiber.poll(fiber)
      assert.isTrue(Option.isSome(polled) && Exit.isSuccess(polled.value))
      const lock = yield* Fiber.join(fiber)
      assert.deepStrictEqual(lock.outcomes.map((o) => o._tag), ["Ok", "NotAwaited", "Ok", "NotAwaited", "Ok"])
      assert.strictEqual(Duration.toMillis(lock.validity), 10_000 - 102)
      yield* heal
    }).pipe(Effect.scoped, Effect.provide(memory(5))))

  it.effect("3 of 5 nodes down: fails after the per-node timeout, naming each node's outcome, and leaves no key", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      for (const i of [0, 2, 4]) yield* control.setDown(i, true)
      const fiber = yield* Effect.fork(
        Effect.exit(Redlock.acquire("r", { ttl: "10 seconds", nodeTimeout: "100 millis", retry: Redlock.noRetry }))
      )
      yield* tick(99)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* tick(101) // the timeout, then the release's own timeout on the down nodes
      const error = failureOf(yield* Fiber.join(fiber)) as LockNotAcquired
      assert.strictEqual(error.reason, "NoQuorum")
      assert.deepStrictEqual(tags(error), ["TimedOut", "Ok", "TimedOut", "Ok", "TimedOut"])
      assert.match(error.message, /memory-0=TimedOut, memory-1=Ok/)
      yield* assertNoKeys
    }).pipe(Effect.scoped, Effect.provide(memory(5))))

  it.effect("node errors (READONLY, OOM) are per-node outcomes; a majority of them means not acquired", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      yield* control.setFailure(0, Option.some("ReadOnly"))
      yield* control.setFailure(1, Option.some("OutOfMemory"))
      const lock = yield* Redlock.acquire("r", { ttl: "1 second" })
      // Nodes 0 and 1 may not be awaited: the other three decide the attempt.
      assert.deepStrictEqual(lock.outcomes.map((o) => o._tag === "Ok"), [false, false, true, true, true])
      yield* control.setFailure(2, Option.some("Auth"))
      const error = failureOf(yield* Effect.exit(Redlock.acquire("s", { ttl: "1 second", retry: Redlock.noRetry })))
      assert.instanceOf(error, LockNotAcquired)
      const reasons = (error as LockNotAcquired).outcomes.flatMap((o) => o._tag === "Failed" ? [o.error.reason] : [])
      assert.deepStrictEqual(reasons, ["ReadOnly", "OutOfMemory", "Auth"])
      yield* heal
    }).pipe(Effect.scoped, Effect.provide(memory(5))))

  it.effect("a key of another type counts as held, and is left untouched", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      for (let i = 0; i < 3; i++) yield* control.putForeign(i, "redlock:r")
      const error = failureOf(yield* Effect.exit(Redlock.acquire("r", { ttl: "1 second", retry: Redlock.noRetry })))
      assert.deepStrictEqual(tags(error as LockNotAcquired), ["Held", "Held", "Held", "Ok", "Ok"])
      const nodes = yield* RedisNode.RedisNodes
      const inspected = yield* Effect.exit(nodes[0].inspect("redlock:r"))
      assert.strictEqual((failureOf(inspected) as RedisNode.RedisNodeError).reason, "WrongType")
      assert.deepStrictEqual(yield* allKeys, [["redlock:r"], ["redlock:r"], ["redlock:r"], [], []])
    }).pipe(Effect.scoped, Effect.provide(memory(5))))

  it.effect("a restart that loses all keys makes the node grant the key again (the hazard quarantine is for)", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      yield* Redlock.acquire("r", { ttl: "10 seconds" })
      yield* control.restart(0)
      assert.deepStrictEqual(yield* control.keys(0), [])
      assert.deepStrictEqual(yield* control.keys(1), ["redlock:r"])
    }).pipe(Effect.scoped, Effect.provide(memory(3))))
})

describe("release and interruption", () => {
  it.effect("interrupted mid-fan-out: every key that may have been set is released", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      for (let i = 0; i < 5; i++) yield* control.setLatency(i, `${10 + i} millis`)
      const fiber = yield* Effect.fork(Redlock.acquire("r", { ttl: "10 seconds", nodeTimeout: "50 millis" }))
      yield* tick(5)
      const interruption = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* tick(100)
      const exit = yield* Fiber.join(interruption)
      assert.isTrue(Exit.isInterrupted(exit))
      yield* assertNoKeys
    }).pipe(Effect.scoped, Effect.provide(memory(5))))

  it.effect("interrupted while waiting to retry: nothing of ours is left, the holder's key is intact", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      for (let i = 0; i < 3; i++) yield* control.putString(i, "redlock:r", "holder")
      const fiber = yield* Effect.fork(Redlock.acquire("r", { ttl: "10 seconds" }))
      yield* TestClock.adjust("50 millis")
      assert.strictEqual(yield* control.operations(0), 1)
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual(yield* allKeys, [["redlock:r"], ["redlock:r"], ["redlock:r"], [], []])
    }).pipe(Effect.scoped, Effect.provide(memory(5))))

  it.effect("withLock releases after success, failure, defect and interruption", () =>
    Effect.gen(function*() {
      const guarded = <A, E, R>(body: Effect.Effect<A, E, R>) => body.pipe(Redlock.withLock("r", { ttl: "10 seconds" }))
      const inside = Effect.map(allKeys, (keys) => keys.flat())
      assert.deepStrictEqual(yield* guarded(inside), ["redlock:r", "redlock:r", "redlock:r"])
      yield* assertNoKeys
      assert.isTrue(Exit.isFailure(yield* Effect.exit(guarded(Effect.fail("boom")))))
      yield* assertNoKeys
      assert.isTrue(Exit.isFailure(yield* Effect.exit(guarded(Effect.die("defect")))))
      yield* assertNoKeys
      const fiber = yield* Effect.fork(guarded(Effect.never))
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual((yield* allKeys).flat().length, 3)
      yield* Fiber.interrupt(fiber)
      yield* assertNoKeys
    }).pipe(Effect.scoped, Effect.provide(memory(3))))

  it.effect("a failed release is reported but never hides the body's result", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      const body = Effect.as(Effect.forEach([0, 1, 2], (i) => control.setDown(i, true)), 42)
      const fiber = yield* Effect.fork(body.pipe(Redlock.withLock("r", { ttl: "10 seconds", nodeTimeout: "20 millis" })))
      yield* tick(20)
      assert.strictEqual(yield* Fiber.join(fiber), 42)
      assert.deepStrictEqual((yield* allKeys).flat().length, 3, "the keys stay until they expire")
    }).pipe(Effect.scoped, Effect.provide(memory(3))))

  it.effect("release reports each node; a second release and the scope's finalizer then do nothing", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      const lock = yield* Redlock.acquire(["a", "b"], { ttl: "10 seconds" })
      const result = yield* Redlock.release(lock)
      assert.strictEqual(result.released, 3)
      yield* assertNoKeys
      const operations = yield* control.operations(0)
      assert.strictEqual((yield* Redlock.release(lock)).released, 0)
      assert.strictEqual(yield* control.operations(0), operations)
    }).pipe(Effect.scoped, Effect.provide(memory(3))))

  it.effect("a release by a holder whose key expired does not delete the next holder's key", () =>
    Effect.gen(function*() {
      const first = yield* Redlock.make()
      const second = yield* Redlock.make()
      const stale = yield* first.acquire("r", { ttl: "100 millis" })
      yield* TestClock.adjust("100 millis")
      const current = yield* second.acquire("r", { ttl: "10 seconds" })
      const result = yield* first.release(stale)
      assert.strictEqual(result.released, 0)
      assert.deepStrictEqual(result.outcomes.map((o) => o._tag), ["Held", "Held", "Held"])
      const nodes = yield* RedisNode.RedisNodes
      for (const node of nodes) {
        assert.deepStrictEqual((yield* node.inspect("redlock:r")).value, Option.some(current.value))
      }
    }).pipe(Effect.scoped, Effect.provide(memory(3))))
})

describe("locks", () => {
  it.effect("multi-resource locks are all or nothing", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      for (let i = 0; i < 5; i++) yield* control.putString(i, "redlock:b", "holder")
      const refused = yield* Effect.exit(Redlock.acquire(["a", "b", "c"], { ttl: "1 second", retry: Redlock.noRetry }))
      assert.isTrue(Exit.isFailure(refused))
      assert.deepStrictEqual((yield* allKeys).flat(), Array(5).fill("redlock:b"))
      const lock = yield* Redlock.acquire(["a", "c"], { ttl: "1 second" })
      assert.deepStrictEqual(lock.keys, ["redlock:a", "redlock:c"])
      assert.deepStrictEqual([...(yield* control.keys(0))].sort(), ["redlock:a", "redlock:b", "redlock:c"])
    }).pipe(Effect.scoped, Effect.provide(memory(5))))

  it.effect("N = 1 works: quorum is that one node", () =>
    Effect.gen(function*() {
      const redlock = yield* Redlock.Redlock
      assert.strictEqual(redlock.quorum, 1)
      const lock = yield* Redlock.acquire("r", { ttl: "1 second" })
      assert.deepStrictEqual(lock.outcomes.map((o) => o._tag), ["Ok"])
      const control = yield* RedisNode.MemoryNodes
      yield* control.setDown(0, true)
      const fiber = yield* Effect.fork(Effect.exit(Redlock.acquire("s", { ttl: "1 second", retry: Redlock.noRetry })))
      yield* tick(20)
      assert.deepStrictEqual(tags(failureOf(yield* Fiber.join(fiber)) as LockNotAcquired), ["TimedOut"])
      yield* heal
    }).pipe(Effect.scoped, Effect.provide(memory(1))))

  it.effect("each acquisition gets a fresh value of at least 128 bits", () =>
    Effect.gen(function*() {
      const values = new Set<string>()
      for (let i = 0; i < 100; i++) {
        const lock = yield* Effect.scoped(Redlock.acquire(`r${i}`, { ttl: "1 second" }))
        assert.isAtLeast(Buffer.from(lock.value, "base64url").length * 8, 128)
        values.add(lock.value)
      }
      assert.strictEqual(values.size, 100)
    }).pipe(Effect.provide(memory(3))))

  it.effect("the key prefix is configurable and the lock reports resources and keys", () =>
    Effect.gen(function*() {
      const lock = yield* Redlock.acquire("jobs:nightly", { ttl: "1 second" })
      assert.deepStrictEqual(lock.resources, ["jobs:nightly"])
      assert.deepStrictEqual(lock.keys, ["locks/jobs:nightly"])
      assert.isTrue(Lock.isLock(lock))
      assert.deepStrictEqual((yield* allKeys).flat(), ["locks/jobs:nightly", "locks/jobs:nightly", "locks/jobs:nightly"])
    }).pipe(Effect.scoped, Effect.provide(memory(3, { keyPrefix: "locks/" }))))
})

describe("invalid input", () => {
  const cases: ReadonlyArray<[string, unknown, Record<string, unknown>]> = [
    ["ttl", "r", { ttl: 0 }],
    ["ttl", "r", { ttl: -5 }],
    ["ttl", "r", { ttl: Infinity }],
    ["ttl", "r", { ttl: NaN }],
    ["ttl", "r", { ttl: "soon" }],
    ["ttl", "r", {}],
    ["ttl", "r", { ttl: "2 millis" }],
    ["nodeTimeout", "r", { ttl: "1 second", nodeTimeout: "1 second" }],
    ["nodeTimeout", "r", { ttl: "1 second", nodeTimeout: -1 }],
    ["resources", [], { ttl: "1 second" }],
    ["resources", "", { ttl: "1 second" }],
    ["resources", ["a", "a"], { ttl: "1 second" }],
    ["resources", ["a", 7], { ttl: "1 second" }],
    ["resources", Array.from({ length: 2000 }, (_, i) => `k${i}`), { ttl: "1 second" }]
  ]
  for (const [option, resources, options] of cases) {
    it.effect(`${option}: ${JSON.stringify(options)} on ${JSON.stringify(resources).slice(0, 20)} fails before any I/O`, () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(Redlock.acquire(resources as string, options as unknown as Redlock.AcquireOptions))
        const error = failureOf(exit)
        assert.instanceOf(error, InvalidOptions)
        assert.strictEqual((error as InvalidOptions).option, option)
        const control = yield* RedisNode.MemoryNodes
        assert.strictEqual(yield* control.operations(0), 0)
      }).pipe(Effect.scoped, Effect.provide(memory(3))))
  }

  it.effect("invalid manager options fail the layer with InvalidOptions", () =>
    Effect.gen(function*() {
      for (const [options, option] of [[{ driftFactor: 1 }, "driftFactor"], [{ driftFactor: -0.1 }, "driftFactor"], [{
        nodeTimeout: "never"
      }, "nodeTimeout"], [{ keyPrefix: 5 }, "keyPrefix"]] as const) {
        const exit = yield* Effect.exit(Effect.scoped(Redlock.make(options as Redlock.Options)))
        assert.strictEqual((failureOf(exit) as InvalidOptions).option, option)
      }
      const none = yield* Effect.exit(Redlock.make().pipe(Effect.provideService(RedisNode.RedisNodes, [])))
      assert.strictEqual((failureOf(none) as InvalidOptions).option, "nodes")
    }).pipe(Effect.provide(RedisNode.layerMemory(1))))
})
