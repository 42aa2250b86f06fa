/**
 * Restart quarantine on in-memory nodes with the TestClock: a node that
 * restarted empty less than maxTtl ago does not count toward any quorum.
 * With it, maxTtl (what bounds the quarantine) and the options read from
 * configuration.
 *
 * One suite, run by both Effect lines (each package's test/quarantine.test.ts).
 */
import {
  assert,
  captureLogs,
  configFrom,
  Context,
  describe,
  Duration,
  Effect,
  Fiber,
  fork,
  it,
  Layer,
  RedisNode,
  Redlock,
  RedlockError,
  TestClock
} from "@effect-redlock/line"
import { failureOfType, invalidOf, memory, refusalOf } from "./support.js"

const tags = (outcomes: ReadonlyArray<RedisNode.NodeOutcome>) => outcomes.map((outcome) => outcome._tag)

/** 10 s plus the drift allowance: ceil(10 000 * 0.01) + 2. */
const quarantineMillis = 10_102

/**
 * The hazard: a holder has nodes 0-2 of 5 (3 and 4 were down); node 2 restarts
 * empty and 3, 4 come back. Counting node 2 would give a second client 3 of 5.
 */
const holderThenRestart = Effect.gen(function*() {
  const control = yield* RedisNode.MemoryNodes
  const holder = yield* Redlock.Redlock
  yield* control.setDown(3, true)
  yield* control.setDown(4, true)
  const fiber = yield* fork(holder.acquire("r", { ttl: "10 seconds", nodeTimeout: "20 millis" }))
  yield* TestClock.adjust("20 millis")
  const lock = yield* Fiber.join(fiber)
  assert.deepStrictEqual(tags(lock.outcomes).slice(0, 3), ["Ok", "Ok", "Ok"])
  yield* control.setDown(3, false)
  yield* control.setDown(4, false)
  yield* TestClock.adjust("1 second")
  yield* control.restart(2)
  return lock
})

export const quarantineSuite = () => {
  describe("restart quarantine", () => {
    it.effect("a node that restarted empty does not give a second client a quorum while the holder is valid", () =>
      Effect.gen(function*() {
        const lock = yield* holderThenRestart
        const other = yield* Redlock.make({ maxTtl: "10 seconds" })
        const error = refusalOf(
          yield* Effect.exit(Effect.scoped(other.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry })))
        )
        assert.strictEqual(error.reason, "NoQuorum")
        // Decided once three nodes said no: the last two may not have been awaited.
        assert.deepStrictEqual(tags(error.outcomes).slice(0, 3), ["Held", "Held", "Abstained"])
        const abstained = error.outcomes[2]
        assert.isTrue(abstained._tag === "Abstained" && abstained.detail.includes("restart quarantine"), error.message)
        assert.include(error.message, "memory-2=Abstained(server started 0.0 s ago, votes again in 10.1 s")
        assert.isAbove(Duration.toMillis(yield* lock.remaining), 0, "the first holder is still valid")
        const control = yield* RedisNode.MemoryNodes
        assert.deepStrictEqual(yield* control.keys(3), [], "the failed attempt released what it set")
      }).pipe(Effect.scoped, Effect.provide(memory(5, { maxTtl: "10 seconds" }))))

    it.effect("without quarantine the same schedule gives two holders at once (the hazard it prevents)", () =>
      Effect.gen(function*() {
        const lock = yield* holderThenRestart
        const other = yield* Redlock.make({ maxTtl: "10 seconds", restartQuarantine: false })
        const second = yield* other.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry })
        assert.deepStrictEqual(tags(second.outcomes), ["Held", "Held", "Ok", "Ok", "Ok"])
        assert.isAbove(Duration.toMillis(yield* lock.remaining), 0)
        assert.isAbove(Duration.toMillis(yield* second.remaining), 0)
      }).pipe(Effect.scoped, Effect.provide(memory(5, { maxTtl: "10 seconds" }))))

    it.effect("the restarted node votes again once maxTtl plus the drift allowance has passed", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* control.restart(0)
        yield* control.setDown(1, true)
        const attempt = fork(
          Redlock.acquire("r", { ttl: "1 second", nodeTimeout: "10 millis", retry: Redlock.noRetry })
        )
        yield* TestClock.adjust(Duration.millis(quarantineMillis - 20))
        const early = yield* attempt
        yield* TestClock.adjust("10 millis")
        assert.deepStrictEqual(tags(refusalOf(yield* Fiber.await(early)).outcomes), ["Abstained", "TimedOut", "Ok"])
        yield* TestClock.adjust("10 millis")
        const late = yield* attempt
        const lock = yield* Fiber.join(late)
        assert.deepStrictEqual(tags(lock.outcomes), ["Ok", "NotAwaited", "Ok"], "decided by two yes votes")
      }).pipe(Effect.scoped, Effect.provide(memory(3, { maxTtl: "10 seconds" }))))

    it.effect("an extension does not count a quarantined node's yes", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* control.restart(0)
        const lock = yield* Redlock.acquire("r", { ttl: "1 second", nodeTimeout: "10 millis" })
        assert.deepStrictEqual(tags(lock.outcomes), ["Abstained", "Ok", "Ok"])
        yield* control.setDown(1, true)
        const fiber = yield* fork(Effect.exit(Redlock.extend(lock)))
        yield* TestClock.adjust("10 millis")
        const error = failureOfType(yield* Fiber.join(fiber), RedlockError.LockNotExtended)
        assert.deepStrictEqual(tags(error.outcomes), ["Abstained", "TimedOut", "Ok"])
        yield* control.setDown(1, false)
      }).pipe(Effect.scoped, Effect.provide(memory(3, { maxTtl: "10 seconds" }))))

    it.effect("fencing rounds do not count a quarantined node (its counters were lost with the restart)", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* control.restart(0)
        const lock = yield* Redlock.acquire("r", { ttl: "1 second", nodeTimeout: "10 millis" })
        yield* control.setDown(2, true)
        const fiber = yield* fork(Effect.exit(lock.fencingToken))
        yield* TestClock.adjust("10 millis")
        const error = failureOfType(yield* Fiber.join(fiber), RedlockError.FencingTokenUnavailable)
        assert.deepStrictEqual(tags(error.outcomes), ["Abstained", "Ok", "TimedOut"])
        yield* control.setDown(2, false)
      }).pipe(Effect.scoped, Effect.provide(memory(3, { maxTtl: "10 seconds" }))))

    it.effect("a durable node keeps its keys across a restart and votes at once: the holder keeps its lock", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* control.setDurable(2, true)
        const lock = yield* holderThenRestart
        assert.deepStrictEqual(yield* control.keys(2), ["redlock:r"], "the key survived the restart")
        const other = yield* Redlock.make({ maxTtl: "10 seconds" })
        const error = refusalOf(
          yield* Effect.exit(Effect.scoped(other.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry })))
        )
        assert.deepStrictEqual(tags(error.outcomes).slice(0, 3), ["Held", "Held", "Held"], error.message)
        assert.isAbove(Duration.toMillis(yield* lock.remaining), 0)
        // And on a free resource, its vote counts at once (no Abstained), 0.0 s after its restart.
        const free = yield* other.acquire("s", { ttl: "1 second" })
        assert.notInclude(tags(free.outcomes), "Abstained")
        assert.strictEqual(free.outcomes[2]._tag, "Ok")
      }).pipe(Effect.scoped, Effect.provide(memory(5, { maxTtl: "10 seconds" }))))

    it.effect("a manager that starts while nodes abstain says so once: which nodes, why, when they vote", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* control.restart(0)
        yield* control.restart(1)
        yield* TestClock.adjust("2 seconds")
        const logged: Array<string> = []
        const capture = captureLogs(logged)
        yield* Redlock.make({ maxTtl: "10 seconds" }).pipe(Effect.provide(capture))
        assert.strictEqual(logged.length, 1)
        assert.match(
          logged[0],
          /^effect-redlock: 2 of 3 nodes do not vote yet \(memory-0: server started 2\.0 s ago, votes again in 8\.1 s/
        )
        assert.include(logged[0], "1 vote, 2 needed: acquisitions fail until then")
        assert.include(logged[0], "appendonly yes, appendfsync always")
        // Durable nodes, or nodes up for maxTtl, make no notice; nor does a manager without the quarantine.
        yield* Redlock.make({ maxTtl: "10 seconds", restartQuarantine: false }).pipe(Effect.provide(capture))
        yield* control.setDurable(0, true)
        yield* control.setDurable(1, true)
        yield* Redlock.make({ maxTtl: "10 seconds" }).pipe(Effect.provide(capture))
        assert.strictEqual(logged.length, 1)
      }).pipe(Effect.provide(RedisNode.layerMemory(3))))

    it.effect("a release still deletes the key a quarantined node holds", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* control.restart(0)
        const lock = yield* Redlock.acquire("r", { ttl: "1 second" })
        assert.deepStrictEqual(yield* control.keys(0), ["redlock:r"])
        yield* Redlock.release(lock)
        assert.deepStrictEqual(yield* control.keys(0), [])
      }).pipe(Effect.scoped, Effect.provide(memory(3, { maxTtl: "10 seconds" }))))
  })

  describe("a node's clock jumps (Kleppmann's scenario, on memory nodes)", () => {
    /**
     * The scenario of docs/safety.md on the TestClock: a holder has nodes 0-2
     * of 5 (3 and 4 were down), 3 and 4 come back, and node 2's clock leaps
     * 20 s: its copy of the key expires at once.
     */
    const holderThenJump = Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      // Every node is durable: the restart quarantine is not in play, only the jump.
      for (let i = 0; i < control.size; i++) yield* control.setDurable(i, true)
      const holder = yield* Redlock.Redlock
      // Each node reads its server's clock with each vote: this round is what the jump is held against.
      yield* Effect.scoped(holder.acquire("warm-up", { ttl: "1 second" }))
      yield* control.setDown(3, true)
      yield* control.setDown(4, true)
      const fiber = yield* fork(holder.acquire("r", { ttl: "10 seconds", nodeTimeout: "20 millis" }))
      yield* TestClock.adjust("20 millis")
      const lock = yield* Fiber.join(fiber)
      yield* control.setDown(3, false)
      yield* control.setDown(4, false)
      yield* TestClock.adjust("1 second")
      yield* control.jumpClock(2, 20_000)
      assert.deepStrictEqual(yield* control.keys(2), [], "node 2's copy expired at the jump")
      return lock
    })

    it.effect("the jumped node's vote does not count while the holder is valid: the second client is refused, and told why", () =>
      Effect.gen(function*() {
        const lock = yield* holderThenJump
        const logged: Array<string> = []
        const other = yield* Redlock.make({ maxTtl: "10 seconds" }).pipe(Effect.provide(captureLogs(logged)))
        const attempt = Effect.exit(Effect.scoped(other.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry })))
        const error = refusalOf(yield* attempt)
        assert.deepStrictEqual(tags(error.outcomes).slice(0, 3), ["Held", "Held", "Abstained"], error.message)
        assert.include(error.message, "memory-2=Abstained(its clock jumped forward 20.0 s 0.0 s ago")
        assert.isAbove(Duration.toMillis(yield* lock.remaining), 0, "the first holder is still valid")
        // The manager says so once, however many attempts the node sits out.
        yield* TestClock.adjust("1 second")
        assert.include(
          refusalOf(yield* attempt).message,
          "memory-2=Abstained(its clock jumped forward 20.0 s 1.0 s ago"
        )
        assert.deepStrictEqual(logged, [
          "effect-redlock: memory-2's clock jumped forward 20.0 s: keys it holds may have expired early, " +
          "so its votes do not count for 10.1 s from then (restart quarantine)"
        ])
      }).pipe(Effect.scoped, Effect.provide(memory(5, { maxTtl: "10 seconds" }))))

    it.effect("without the restart quarantine the jump is not acted on: two holders at once (the hazard)", () =>
      Effect.gen(function*() {
        const lock = yield* holderThenJump
        const other = yield* Redlock.make({ maxTtl: "10 seconds", restartQuarantine: false })
        const second = yield* other.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry })
        assert.deepStrictEqual(tags(second.outcomes), ["Held", "Held", "Ok", "Ok", "Ok"])
        assert.isAbove(Duration.toMillis(yield* lock.remaining), 0)
      }).pipe(Effect.scoped, Effect.provide(memory(5, { maxTtl: "10 seconds", restartQuarantine: false }))))

    it.effect("the jumped node votes again once the quarantine has passed; a step back is no jump to sit out", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* holderThenJump
        // The jump is seen by the first vote after it: the quarantine runs from then.
        const seen = yield* Redlock.acquire("s", { ttl: "1 second" })
        assert.deepStrictEqual(tags(seen.outcomes), ["Ok", "Ok", "Abstained", "Ok", "Ok"])
        yield* TestClock.adjust(Duration.millis(quarantineMillis - 100))
        const early = yield* Redlock.acquire("s2", { ttl: "1 second" })
        assert.deepStrictEqual(tags(early.outcomes), ["Ok", "Ok", "Abstained", "Ok", "Ok"])
        yield* TestClock.adjust("100 millis")
        const late = yield* Redlock.acquire("t", { ttl: "1 second" })
        assert.deepStrictEqual(tags(late.outcomes), ["Ok", "Ok", "Ok", "Ok", "Ok"])
        // Back 30 s: the node's keys last longer, which no holder relies on against it.
        yield* control.jumpClock(1, -30_000)
        const back = yield* Redlock.acquire("u", { ttl: "1 second" })
        assert.deepStrictEqual(tags(back.outcomes), ["Ok", "Ok", "Ok", "Ok", "Ok"])
      }).pipe(Effect.scoped, Effect.provide(memory(5, { maxTtl: "10 seconds" }))))
  })

  describe("maxTtl", () => {
    it.effect("acquire and extend reject a ttl above maxTtl before any node is asked", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const error = invalidOf(yield* Effect.exit(Redlock.acquire("r", { ttl: "11 seconds" })))
        assert.strictEqual(error.option, "ttl")
        assert.include(error.message, "above the manager's maxTtl of 10000 ms")
        assert.strictEqual(yield* control.operations(0), 0)
        const lock = yield* Redlock.acquire("r", { ttl: "10 seconds" })
        const extended = invalidOf(yield* Effect.exit(Redlock.extend(lock, "10001 millis")))
        assert.strictEqual(extended.option, "ttl")
        assert.strictEqual(yield* control.operations(0), 1)
      }).pipe(Effect.scoped, Effect.provide(memory(3, { maxTtl: "10 seconds" }))))

    it.effect("invalid maxTtl or restartQuarantine fail the manager with InvalidOptions", () =>
      Effect.gen(function*() {
        for (
          const [options, option] of [
            [{ maxTtl: 0 }, "maxTtl"],
            [{ maxTtl: "forever" }, "maxTtl"],
            [{ maxTtl: "400 days" }, "maxTtl"],
            [{ restartQuarantine: "yes" }, "restartQuarantine"]
          ] as const
        ) {
          const error = invalidOf(yield* Effect.exit(Redlock.make(options as Redlock.Options)))
          assert.strictEqual(error.option, option)
        }
      }).pipe(Effect.provide(RedisNode.layerMemory(1))))
  })

  describe("options from configuration", () => {
    it.effect("Redlock.layerConfig reads REDLOCK_* variables; missing ones keep their defaults", () =>
      Effect.gen(function*() {
        const configured = Redlock.layerConfig().pipe(
          Layer.provide(configFrom({ REDLOCK_MAX_TTL: "2 seconds", REDLOCK_KEY_PREFIX: "app:" }))
        )
        const redlock = Context.get(yield* Layer.build(configured), Redlock.Redlock)
        const error = invalidOf(yield* Effect.exit(redlock.acquire("r", { ttl: "3 seconds" })))
        assert.include(error.message, "maxTtl of 2000 ms")
        yield* redlock.acquire("r", { ttl: "2 seconds" })
        const control = yield* RedisNode.MemoryNodes
        assert.deepStrictEqual(yield* control.keys(0), ["app:r"])
        const invalid = Redlock.layerConfig().pipe(Layer.provide(configFrom({ REDLOCK_DRIFT_FACTOR: "2" })))
        invalidOf(yield* Effect.exit(Layer.build(invalid)))
      }).pipe(Effect.scoped, Effect.provide(RedisNode.layerMemory(3))))
  })
}
