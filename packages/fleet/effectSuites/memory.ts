/**
 * Deterministic tests of the lock manager on in-memory nodes, with time on
 * the TestClock and jitter on a fixed Random: one suite, run by both Effect
 * lines (each package's test/memory.test.ts).
 */
import {
  assert,
  describe,
  Duration,
  Effect,
  Exit,
  failWith,
  Fiber,
  fork,
  isInterrupted,
  it,
  Lock,
  poll,
  RedisNode,
  Redlock,
  RedlockError,
  TestClock,
  withFixedRandom,
  yieldNow
} from "@effect-redlock/line"
import {
  allKeys,
  assertNoKeys,
  effectsOf,
  failureOf,
  heal,
  invalidOf,
  memory,
  refusalOf,
  tags,
  tick
} from "./support.js"

/**
 * A node behind a slower link for acquire: the request arrives after `latency`
 * and the answer takes as long again, so every contender's request lands
 * before any contender learns the outcome.
 */
const delayed = (node: RedisNode.RedisNode, latency: Duration.Duration): Effect.Effect<RedisNode.RedisNode> => {
  // A node written with effects (on the test's clock): fromEffects runs them.
  const effects = effectsOf(node)
  return RedisNode.fromEffects({
    ...effects,
    acquire: (keys, value, ttl) =>
      Effect.sleep(latency).pipe(
        Effect.andThen(effects.acquire(keys, value, ttl)),
        Effect.tap(() => Effect.sleep(latency))
      ),
    acquireInTurn: (keys, value, ttl, turn) =>
      Effect.sleep(latency).pipe(
        Effect.andThen(effects.acquireInTurn(keys, value, ttl, turn)),
        Effect.tap(() => Effect.sleep(latency))
      )
  })
}

export const memorySuite = () => {
  describe("validity and expiry", () => {
    it.effect("validity = ttl - elapsed - drift, measured on the attempt, and remaining counts down", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        for (let i = 0; i < 5; i++) yield* control.setLatency(i, "10 millis")
        const fiber = yield* fork(Redlock.acquire("r", { ttl: "1 second", nodeTimeout: "50 millis" }))
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
        const refused = refusalOf(yield* Effect.exit(second.acquire("r", { ttl: "1 second", retry: Redlock.noRetry })))
        assert.deepStrictEqual(tags(refused), ["Held", "Held", "Held", "Held", "Held"])
        yield* TestClock.adjust("999 millis")
        assert.isTrue(
          Exit.isFailure(yield* Effect.exit(second.acquire("r", { ttl: "1 second", retry: Redlock.noRetry })))
        )
        yield* TestClock.adjust("1 millis")
        const next = yield* second.acquire("r", { ttl: "1 second", retry: Redlock.noRetry })
        assert.notStrictEqual(next.value, lock.value)
      }).pipe(Effect.scoped, Effect.provide(memory(5))))

    it.effect("an attempt whose validity is not positive has failed, and its keys are released", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        for (let i = 0; i < 5; i++) yield* control.setLatency(i, "106 millis")
        // drift = ceil(1.1) + 2 = 4; validity = 110 - 106 - 4 = 0
        const fiber = yield* fork(
          Effect.exit(Redlock.acquire("r", { ttl: "110 millis", nodeTimeout: "109 millis", retry: Redlock.noRetry }))
        )
        yield* TestClock.adjust("106 millis")
        yield* TestClock.adjust("106 millis") // the release travels through the same latency
        const error = refusalOf(yield* Fiber.join(fiber))
        assert.strictEqual(error.reason, "ValidityExpired")
        yield* assertNoKeys
      }).pipe(Effect.scoped, Effect.provide(memory(5))))
  })

  describe("retry", () => {
    it.effect("the default retry waits 100-200 ms at random between attempts, 4 attempts in all", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        for (let i = 0; i < 5; i++) yield* control.putString(i, "redlock:r", "someone else")
        const fiber = yield* fork(
          Effect.exit(Redlock.acquire("r", { ttl: "1 second" })).pipe(withFixedRandom([0, 0.5, 1]))
        )
        const attempts = () => control.operations(0)
        yield* TestClock.adjust("0 millis")
        // The first attempt: the probe (plain acquire), then the script that joins the line.
        assert.strictEqual(yield* attempts(), 2)
        // delays: 200 * (0.5 + 0.5 * r) for r = 0, 0.5, 1
        // The last operation after the 4th attempt: the waiter leaves the line it joined.
        for (const [delay, expected] of [[100, 3], [150, 4], [200, 6]] as const) {
          yield* TestClock.adjust(`${delay - 1} millis`)
          assert.strictEqual(yield* attempts(), expected === 6 ? 4 : expected - 1)
          yield* TestClock.adjust("1 millis")
          assert.strictEqual(yield* attempts(), expected)
        }
        const error = refusalOf(yield* Fiber.join(fiber))
        assert.strictEqual(error.attempts, 4)
        assert.strictEqual(error.elapsedMillis, 450)
        assert.include(error.message, "not acquired after 4 attempt(s)")
        assert.deepStrictEqual(yield* control.keys(0), ["redlock:r"], "no place in line left")
      }).pipe(Effect.scoped, Effect.provide(memory(5))))

    it.effect("a split vote (2/2/1 of 5 nodes) fails for all three contenders, then resolves on a jittered retry", () =>
      Effect.gen(function*() {
        const shared = yield* RedisNode.RedisNodes
        // Each contender reaches its own nodes first: A nodes 0-1, B nodes 2-3, C node 4.
        const contender = (fast: ReadonlyArray<number>) =>
          Effect.flatMap(
            Effect.forEach(shared, (node, index) =>
              fast.includes(index) ? Effect.succeed(node) : delayed(node, Duration.millis(5))),
            (nodes) =>
              Redlock.make().pipe(Effect.provideService(RedisNode.RedisNodes, nodes))
          )
        const [a, b, c] = [yield* contender([0, 1]), yield* contender([2, 3]), yield* contender([4])]
        const run = (manager: Redlock.RedlockService, jitter: number) =>
          fork(Effect.exit(manager.acquire("r", { ttl: "10 seconds" })).pipe(withFixedRandom([jitter])))
        const fibers = [yield* run(a, 0), yield* run(b, 0.5), yield* run(c, 1)]
        // Let all three send their first attempt at the same instant before time moves.
        for (let i = 0; i < 20; i++) yield* yieldNow
        yield* tick(1000)
        const exits = yield* Effect.forEach(fibers, Fiber.join)
        const winners = exits.filter(Exit.isSuccess)
        assert.strictEqual(winners.length, 1)
        const lock = winners[0].value
        assert.strictEqual(lock.attempts, 2, "the first attempt of every contender was a split vote")
        for (const exit of exits.filter(Exit.isFailure)) {
          const error = refusalOf(exit)
          // The first attempt, its re-check (the effect nodes' watches are ready later), three retries.
          assert.strictEqual(error.attempts, 5)
        }
        const control = yield* RedisNode.MemoryNodes
        for (let i = 0; i < 5; i++) assert.deepStrictEqual(yield* control.keys(i), ["redlock:r"])
        // The winner releases it; another manager refuses a lock it did not acquire (a programmer error).
        const winner = [a, b, c][exits.findIndex(Exit.isSuccess)]
        const loser = [a, b, c][exits.findIndex(Exit.isFailure)]
        assert.isTrue(Exit.isFailure(yield* Effect.exit(loser.release(lock))))
        assert.strictEqual((yield* winner.release(lock)).status, "Released")
        yield* assertNoKeys
      }).pipe(Effect.scoped, Effect.provide(memory(5))))
  })

  describe("faults", () => {
    it.effect("2 of 5 nodes down: acquired at once, without waiting for the per-node timeout", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* control.setDown(1, true)
        yield* control.setDown(3, true)
        const fiber = yield* fork(Redlock.acquire("r", { ttl: "10 seconds", nodeTimeout: "100 millis" }))
        yield* TestClock.adjust("1 millis")
        const polled = yield* poll(fiber)
        assert.isTrue(polled !== undefined && Exit.isSuccess(polled))
        const lock = yield* Fiber.join(fiber)
        assert.deepStrictEqual(lock.outcomes.map((o) => o._tag), ["Ok", "NotAwaited", "Ok", "NotAwaited", "Ok"])
        assert.strictEqual(Duration.toMillis(lock.validity), 10_000 - 102)
        yield* heal
      }).pipe(Effect.scoped, Effect.provide(memory(5))))

    it.effect("3 of 5 nodes down: fails after the per-node timeout, naming each node's outcome, and leaves no key", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        for (const i of [0, 2, 4]) yield* control.setDown(i, true)
        const fiber = yield* fork(
          Effect.exit(Redlock.acquire("r", { ttl: "10 seconds", nodeTimeout: "100 millis", retry: Redlock.noRetry }))
        )
        yield* tick(99)
        assert.isUndefined(yield* poll(fiber))
        yield* tick(101) // the timeout, then the release's own timeout on the down nodes
        const error = refusalOf(yield* Fiber.join(fiber))
        assert.strictEqual(error.reason, "NoQuorum")
        assert.deepStrictEqual(tags(error), ["TimedOut", "Ok", "TimedOut", "Ok", "TimedOut"])
        assert.match(error.message, /memory-0=TimedOut, memory-1=Ok/)
        yield* assertNoKeys
      }).pipe(Effect.scoped, Effect.provide(memory(5))))

    it.effect("node errors (READONLY, OOM) are per-node outcomes; a majority of them means not acquired", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* control.setFailure(0, failWith("ReadOnly"))
        yield* control.setFailure(1, failWith("OutOfMemory"))
        const lock = yield* Redlock.acquire("r", { ttl: "1 second" })
        // Nodes 0 and 1 may not be awaited: the other three decide the attempt.
        assert.deepStrictEqual(lock.outcomes.map((o) => o._tag === "Ok"), [false, false, true, true, true])
        yield* control.setFailure(2, failWith("Auth"))
        const error = refusalOf(yield* Effect.exit(Redlock.acquire("s", { ttl: "1 second", retry: Redlock.noRetry })))
        const reasons = error.outcomes.flatMap((o) => o._tag === "Failed" ? [o.error.reason] : [])
        assert.deepStrictEqual(reasons, ["ReadOnly", "OutOfMemory", "Auth"])
        yield* heal
      }).pipe(Effect.scoped, Effect.provide(memory(5))))

    it.effect("heal clears every fault of a node (down, latency, failure) and keeps its keys", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* Redlock.acquire("held", { ttl: "10 seconds" })
        yield* control.setDown(0, true)
        yield* control.setLatency(1, "1 second")
        yield* control.setFailure(2, failWith("Busy"))
        const all = { ttl: "10 seconds", nodeTimeout: "100 millis", retry: Redlock.noRetry } as const
        const faulty = yield* fork(Effect.exit(Redlock.acquire("r", all)))
        yield* tick(250) // the attempt's timeout, then the undo's
        assert.deepStrictEqual(tags(refusalOf(yield* Fiber.join(faulty))), ["TimedOut", "TimedOut", "Failed"])
        for (const i of [0, 1, 2]) yield* control.heal(i)
        yield* TestClock.adjust("2 seconds") // node 1 answers, in order, what it was sent while slow
        const lock = yield* Redlock.acquire("s", all)
        assert.deepStrictEqual(lock.outcomes.map((o) => o._tag), ["Ok", "Ok", "Ok"])
        assert.deepStrictEqual((yield* control.keys(0)).includes("redlock:held"), true)
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("a key of another type is a WrongType failure naming the type, and is left untouched", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        for (let i = 0; i < 3; i++) yield* control.putForeign(i, "redlock:r")
        const error = refusalOf(yield* Effect.exit(Redlock.acquire("r", { ttl: "1 second", retry: Redlock.noRetry })))
        assert.deepStrictEqual(tags(error), ["Failed", "Failed", "Failed", "Ok", "Ok"])
        assert.match(error.message, /memory-0=Failed\(WrongType: WRONGTYPE lock key redlock:r holds a list/)
        const nodes = yield* RedisNode.RedisNodes
        const inspected = yield* Effect.exit(effectsOf(nodes[0]).inspect("redlock:r"))
        assert.strictEqual((failureOf(inspected) as RedlockError.RedisNodeError).reason, "WrongType")
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
        const fiber = yield* fork(Redlock.acquire("r", { ttl: "10 seconds", nodeTimeout: "50 millis" }))
        yield* tick(5)
        const interruption = yield* fork(Effect.andThen(Fiber.interrupt(fiber), Fiber.await(fiber)))
        yield* tick(100)
        const exit = yield* Fiber.join(interruption)
        assert.isTrue(isInterrupted(exit))
        yield* assertNoKeys
      }).pipe(Effect.scoped, Effect.provide(memory(5))))

    it.effect("interrupted while waiting to retry: nothing of ours is left, the holder's key is intact", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        for (let i = 0; i < 3; i++) yield* control.putString(i, "redlock:r", "holder")
        const fiber = yield* fork(Redlock.acquire("r", { ttl: "10 seconds" }))
        yield* TestClock.adjust("50 millis")
        assert.strictEqual(yield* control.operations(0), 2, "the probe, then the script that joins the line")
        yield* Fiber.interrupt(fiber)
        assert.deepStrictEqual(yield* allKeys, [["redlock:r"], ["redlock:r"], ["redlock:r"], [], []])
      }).pipe(Effect.scoped, Effect.provide(memory(5))))

    it.effect("a key the manager found held within the last second is attempted without the probe", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        for (let i = 0; i < 3; i++) yield* control.putString(i, "redlock:r", "holder")
        // The operations on node 0 of one acquisition's first attempt; the waiter is then interrupted (it leaves the line).
        const firstAttempt = Effect.gen(function*() {
          const before = yield* control.operations(0)
          const fiber = yield* fork(Redlock.acquire("r", { ttl: "10 seconds" }))
          yield* TestClock.adjust("0 millis")
          const sent = (yield* control.operations(0)) - before
          yield* Fiber.interrupt(fiber)
          return sent
        })
        assert.strictEqual(yield* firstAttempt, 2, "the probe, then the script that joins the line")
        yield* TestClock.adjust("500 millis")
        assert.strictEqual(yield* firstAttempt, 1, "held half a second ago: the script alone")
        yield* TestClock.adjust("1001 millis")
        assert.strictEqual(yield* firstAttempt, 2, "held over a second ago: the probe again")
      }).pipe(Effect.scoped, Effect.provide(memory(5))))

    it.effect("withLock releases after success, failure, defect and interruption", () =>
      Effect.gen(function*() {
        const guarded = <A, E, R>(body: Effect.Effect<A, E, R>) =>
          body.pipe(Redlock.withLock("r", { ttl: "10 seconds" }))
        const inside = Effect.map(allKeys, (keys) => keys.flat())
        assert.deepStrictEqual(yield* guarded(inside), ["redlock:r", "redlock:r", "redlock:r"])
        yield* assertNoKeys
        assert.isTrue(Exit.isFailure(yield* Effect.exit(guarded(Effect.fail("boom")))))
        yield* assertNoKeys
        assert.isTrue(Exit.isFailure(yield* Effect.exit(guarded(Effect.die("defect")))))
        yield* assertNoKeys
        const fiber = yield* fork(guarded(Effect.never))
        yield* TestClock.adjust("1 millis")
        assert.deepStrictEqual((yield* allKeys).flat().length, 3)
        yield* Fiber.interrupt(fiber)
        yield* assertNoKeys
        // Takes "r" again right after each release: no fair-handoff pause (it would wait on the TestClock).
      }).pipe(Effect.scoped, Effect.provide(memory(3, { fairHandoff: false }))))

    it.effect("withLock interrupted while it waits leaves nothing of its own; the holder's key is intact", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        for (let i = 0; i < 3; i++) yield* control.putString(i, "redlock:r", "holder")
        let ran = false
        const fiber = yield* fork(
          Effect.sync(() => void (ran = true)).pipe(Redlock.withLock("r", { ttl: "10 seconds" }))
        )
        yield* TestClock.adjust("50 millis")
        assert.isUndefined(yield* poll(fiber), "still waiting")
        yield* Fiber.interrupt(fiber)
        assert.isFalse(ran)
        assert.deepStrictEqual(yield* allKeys, [["redlock:r"], ["redlock:r"], ["redlock:r"], [], []])
      }).pipe(Effect.scoped, Effect.provide(memory(5))))

    it.effect("withLock over a manager of the user's own making (ours wrapped) holds in a scope of its own, released when the body ends", () =>
      Effect.gen(function*() {
        const ours = yield* Redlock.make()
        let acquired = 0
        const wrapped = Redlock.Redlock.of({
          ...ours,
          acquire: (resources, options) =>
            Effect.tap(ours.acquire(resources, options), () => Effect.sync(() => void acquired++))
        })
        const inside = Effect.map(allKeys, (keys) => keys.flat())
        const held = yield* inside.pipe(
          Redlock.withLock("r", { ttl: "10 seconds" }),
          Effect.provideService(Redlock.Redlock, wrapped)
        )
        assert.deepStrictEqual(held, ["redlock:r", "redlock:r", "redlock:r"])
        assert.strictEqual(acquired, 1, "through the wrapper")
        yield* assertNoKeys
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("a failed release is reported but never hides the body's result", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const body = Effect.as(Effect.forEach([0, 1, 2], (i) => control.setDown(i, true)), 42)
        const fiber = yield* fork(body.pipe(Redlock.withLock("r", { ttl: "10 seconds", nodeTimeout: "20 millis" })))
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
  })

  describe("locks", () => {
    it.effect("multi-resource locks are all or nothing", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        for (let i = 0; i < 5; i++) yield* control.putString(i, "redlock:b", "holder")
        const refused = yield* Effect.exit(
          Redlock.acquire(["a", "b", "c"], { ttl: "1 second", retry: Redlock.noRetry })
        )
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
        const fiber = yield* fork(Effect.exit(Redlock.acquire("s", { ttl: "1 second", retry: Redlock.noRetry })))
        yield* tick(20)
        assert.deepStrictEqual(tags(refusalOf(yield* Fiber.join(fiber))), ["TimedOut"])
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
        assert.deepStrictEqual((yield* allKeys).flat(), [
          "locks/jobs:nightly",
          "locks/jobs:nightly",
          "locks/jobs:nightly"
        ])
      }).pipe(Effect.scoped, Effect.provide(memory(3, { keyPrefix: "locks/" }))))
  })

  describe("invalid input", () => {
    // The option named, and what the message must say of the value given.
    const cases: ReadonlyArray<[string, unknown, Record<string, unknown>, RegExp?]> = [
      ["ttl", "r", { ttl: 0 }, /got 0$/],
      ["ttl", "r", { ttl: -5 }, /got -5$/],
      ["ttl", "r", { ttl: "-5 seconds" }, /got "-5 seconds"$/],
      ["ttl", "r", { ttl: [-1, 0] }, /got \[-1, 0\]$/],
      ["ttl", "r", { ttl: Infinity }],
      ["ttl", "r", { ttl: NaN }, /got NaN$/],
      ["ttl", "r", { ttl: "soon" }],
      ["ttl", "r", {}],
      ["ttl", "r", { ttl: "2 millis" }],
      ["nodeTimeout", "r", { ttl: "1 second", nodeTimeout: "1 second" }],
      ["nodeTimeout", "r", { ttl: "1 second", nodeTimeout: -1 }, /got -1$/],
      ["retry", "r", { ttl: "1 second", retry: 3 }, /must be a Schedule, got 3$/],
      ["retry", "r", { ttl: "1 second", retry: "200 millis" }, /got "200 millis"$/],
      [
        "retry",
        "r",
        { ttl: "1 second", retry: { times: 3 } },
        /got object \(a \{ delay, times \} object makes one through retry\(\.\.\.\)/
      ],
      ["retry", "r", { ttl: "1 second", retry: new Map() }, /got object$/],
      ["options", "r", null as unknown as Record<string, unknown>, /expected \{ ttl, \.\.\. \}$/],
      // node-redlock's settings, as a migrating caller passes them: said where they go, not ignored.
      [
        "retryCount",
        "r",
        { ttl: "1 second", retryCount: 0 },
        /^is node-redlock's setting; here it is retry: retry\(\{ delay, times \}\)/
      ],
      ["retryDelay", "r", { ttl: "1 second", retryDelay: 200 }],
      ["retryJitter", "r", { ttl: "1 second", retryJitter: 200 }, /retry: retry\(\{ delay, times, jitter \}\)/],
      ["automaticExtensionThreshold", "r", { ttl: "1 second", automaticExtensionThreshold: 500 }, /autoExtend: true/],
      ["resources", [], { ttl: "1 second" }],
      ["resources", "", { ttl: "1 second" }],
      ["resources", ["a", "a"], { ttl: "1 second" }],
      ["resources", ["a", 7], { ttl: "1 second" }],
      ["resources", Array.from({ length: 2000 }, (_, i) => `k${i}`), { ttl: "1 second" }]
    ]
    for (const [option, resources, options, detail] of cases) {
      it.effect(`${option}: ${JSON.stringify(options, (_, v) => Number.isNaN(v) || Math.abs(v) === Infinity ? String(v) : v)} on ${JSON.stringify(resources).slice(0, 20)} fails before any I/O`, () =>
        Effect.gen(function*() {
          const exit = yield* Effect.exit(
            Redlock.acquire(resources as string, options as unknown as Redlock.AcquireOptions)
          )
          const error = invalidOf(exit)
          assert.strictEqual(error.option, option)
          if (detail !== undefined) assert.match(error.detail, detail)
          const control = yield* RedisNode.MemoryNodes
          assert.strictEqual(yield* control.operations(0), 0)
        }).pipe(Effect.scoped, Effect.provide(memory(3))))
    }

    it.effect("inspect reads one resource: anything but one valid string is InvalidOptions naming it, before any I/O", () =>
      Effect.gen(function*() {
        for (const [input, detail] of [[5, /got 5$/], [["a", "b"], /got \[a, b\]$/], ["", /empty string/]] as const) {
          const error = invalidOf(yield* Effect.exit(Redlock.inspect(input as unknown as string)))
          assert.strictEqual(error.option, "resource")
          assert.match(error.detail, detail)
        }
        const control = yield* RedisNode.MemoryNodes
        assert.strictEqual(yield* control.operations(0), 0)
      }).pipe(Effect.provide(memory(3))))

    it.effect("invalid manager options fail the layer with InvalidOptions", () =>
      Effect.gen(function*() {
        for (
          const [options, option] of [
            [{ driftFactor: 1 }, "driftFactor"],
            [{ driftFactor: -0.1 }, "driftFactor"],
            [{
              nodeTimeout: "never"
            }, "nodeTimeout"],
            [{ keyPrefix: 5 }, "keyPrefix"],
            [{ retry: 200 }, "retry"],
            [{ retryCount: 10, retryDelay: 200 }, "retryCount"]
          ] as const
        ) {
          const exit = yield* Effect.exit(Effect.scoped(Redlock.make(options as Redlock.Options)))
          assert.strictEqual(invalidOf(exit).option, option)
        }
        const none = yield* Effect.exit(Redlock.make().pipe(Effect.provideService(RedisNode.RedisNodes, [])))
        assert.strictEqual(invalidOf(none).option, "nodes")
      }).pipe(Effect.provide(RedisNode.layerMemory(1))))
  })
}
