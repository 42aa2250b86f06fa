/**
 * Spans, metrics and logs of the lock manager, on in-memory nodes: what a
 * tracer, the metrics and a logger see of acquisitions, attempts,
 * extensions and releases, and that observing changes nothing sent.
 *
 * One suite, run by both Effect lines (each package's test/observability.test.ts).
 */
import {
  assert,
  atDebugLevel,
  captureLogs,
  Clock,
  describe,
  Effect,
  Fiber,
  fork,
  it,
  metricCount,
  recordSpans,
  RedisNode,
  Redlock,
  RedlockMetrics,
  TestClock
} from "@effect-redlock/line"
import { memory } from "./support.js"

export const observabilitySuite = () => {
  describe("spans", () => {
    it.effect("acquire has one span per attempt under it, with resources, outcomes, attempts and validity; release and extend have their own", () => {
      const { spans, use } = recordSpans()
      return Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* control.putString(0, "redlock:r", "someone else", 50)
        yield* control.putString(1, "redlock:r", "someone else", 50)
        const fiber = yield* fork(Redlock.acquire("r", { ttl: "1 second", retry: Redlock.defaultRetry }))
        yield* TestClock.adjust("200 millis")
        const lock = yield* Fiber.join(fiber)
        yield* Redlock.extend(lock)
        yield* Redlock.release(lock)

        const acquire = spans().find((span) => span.name === "Redlock.acquire")!
        assert.deepStrictEqual(acquire.attributes.get("redlock.resources"), ["r"])
        assert.strictEqual(acquire.attributes.get("redlock.ttl_ms"), 1000)
        assert.strictEqual(acquire.attributes.get("redlock.attempts"), 2)
        assert.isAbove(acquire.attributes.get("redlock.validity_ms") as number, 900)
        const attempts = spans().filter((span) => span.name === "Redlock.attempt")
        assert.strictEqual(attempts.length, 2)
        for (const attempt of attempts) assert.strictEqual(attempt.parentId, acquire.spanId)
        assert.strictEqual(attempts[0].attributes.get("redlock.granted"), 1)
        assert.include(attempts[0].attributes.get("redlock.outcomes") as string, "memory-0=Held")
        assert.strictEqual(attempts[1].attributes.get("redlock.granted"), 3)
        const extend = spans().find((span) => span.name === "Redlock.extend")!
        assert.deepStrictEqual(extend.attributes.get("redlock.resources"), ["r"])
        assert.include(extend.attributes.get("redlock.outcomes") as string, "memory-2=Ok")
        assert.isAbove(extend.attributes.get("redlock.validity_ms") as number, 900)
        const release = spans().find((span) => span.name === "Redlock.release")!
        assert.strictEqual(release.attributes.get("redlock.status"), "Released")
        assert.include(release.attributes.get("redlock.outcomes") as string, "memory-0=Ok")
        assert.isTrue(spans().every((span) => span.ended), "every span ended")
      }).pipe(Effect.scoped, Effect.provide(memory(3)), use)
    })
  })

  describe("metrics", () => {
    it.effect("acquisitions, failures by reason, attempts, durations, lost locks, extension lag, time left at release", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const counts = Effect.all({
          acquisitions: metricCount(RedlockMetrics.acquisitions),
          held: metricCount(RedlockMetrics.acquireFailures, { reason: "Held" }),
          expired: metricCount(RedlockMetrics.lostLocks, { reason: "Expired" }),
          durations: metricCount(RedlockMetrics.acquireDuration),
          attempts: metricCount(RedlockMetrics.attemptsPerAcquire),
          lag: metricCount(RedlockMetrics.extensionLag),
          released: metricCount(RedlockMetrics.remainingAtRelease)
        })
        const before = yield* counts
        // One acquisition that is auto-extended once, then released.
        yield* Effect.scoped(Effect.gen(function*() {
          yield* Redlock.acquire("a", { ttl: "1 second", autoExtend: true })
          yield* TestClock.adjust("600 millis")
        }))
        // One that fails: every node is held by someone else.
        for (let i = 0; i < 3; i++) yield* control.putString(i, "redlock:b", "other", 10_000)
        yield* Effect.exit(Effect.scoped(Redlock.acquire("b", { ttl: "1 second", retry: Redlock.noRetry })))
        // One that runs out of validity before its release.
        yield* Effect.scoped(Effect.gen(function*() {
          yield* Redlock.acquire("c", { ttl: "100 millis" })
          yield* TestClock.adjust("200 millis")
        }))
        const after = yield* counts
        const added = Object.fromEntries(
          Object.entries(after).map(([name, count]) => [name, count - before[name as keyof typeof before]])
        )
        assert.deepStrictEqual(added, {
          acquisitions: 2,
          held: 1,
          expired: 1,
          durations: 3,
          attempts: 3,
          lag: 1,
          released: 2
        })
      }).pipe(Effect.provide(memory(3))))
  })

  describe("logs", () => {
    it.effect("a refused attempt is logged at debug level with each node's answer; nothing is logged above it", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        for (let i = 0; i < 3; i++) yield* control.putString(i, "redlock:r", "other", 10_000)
        const logs: Array<string> = []
        const refused = Effect.exit(Effect.scoped(Redlock.acquire("r", { ttl: "1 second", retry: Redlock.noRetry })))
        yield* refused.pipe(Effect.provide(captureLogs(logs, { withLevel: true })))
        assert.deepStrictEqual(logs, [], "not at the default level")
        yield* refused.pipe(Effect.provide(captureLogs(logs, { withLevel: true })), atDebugLevel)
        assert.strictEqual(logs.length, 1, logs.join("\n"))
        assert.match(logs[0], /^DEBUG effect-redlock: attempt 1 on r: 0 of 2 needed \(memory-0=Held, memory-1=Held/)
      }).pipe(Effect.provide(memory(3))))

    it.effect("a release that a majority did not confirm is logged as a warning as the lock's scope closes, naming how many nodes it missed", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const logs: Array<string> = []
        const release = Effect.scoped(Effect.andThen(
          Redlock.acquire("r", { ttl: "10 seconds", nodeTimeout: "10 millis" }),
          Effect.forEach([0, 1], (index) => control.setDown(index, true))
        ))
        const fiber = yield* fork(release.pipe(Effect.provide(captureLogs(logs, { withLevel: true }))))
        yield* TestClock.adjust("10 millis")
        yield* Fiber.join(fiber)
        assert.strictEqual(logs.length, 1, logs.join("\n"))
        assert.match(
          logs[0],
          /^WARN effect-redlock: release of r did not reach 2 node\(s\); their keys expire within 10s/
        )
      }).pipe(Effect.provide(memory(3))))
  })

  describe("observability changes no code path", () => {
    /**
     * One contended acquisition on in-memory nodes: a holder, a waiter woken by
     * the release, then the waiter's own release. Each operation the engine
     * sends is recorded with its node, its time and its arguments, lock values
     * named in the order they appear and tickets counted from the start.
     */
    const operationsSent = Effect.gen(function*() {
      const nodes = yield* RedisNode.RedisNodes
      const start = yield* Clock.currentTimeMillis
      const sent: Array<string> = []
      const names = new Map<string, string>()
      const named = (arg: unknown): unknown => {
        if (typeof arg === "string" && arg.length >= 20 && !arg.startsWith("redlock:")) {
          if (!names.has(arg)) names.set(arg, `value-${names.size}`)
          return names.get(arg)
        }
        if (Array.isArray(arg)) return arg.map(named)
        if (typeof arg === "object" && arg !== null && "ticket" in arg) {
          const turn = arg as RedisNode.Turn
          return { ticket: turn.ticket - start, leaseMillis: turn.leaseMillis }
        }
        return arg
      }
      // The nodes' promises, recorded: the engine calls these (a copy of a node has no callbacks of its own).
      const recorded = nodes.map((node, index): RedisNode.RedisNode => ({
        ...node,
        promises: Object.fromEntries(
          Object.entries(node.promises!).map(([method, call]) => [
            method,
            (...args: Array<unknown>) => {
              sent.push(`${index} ${method} ${JSON.stringify(args.map(named))}`)
              return (call as (...args: Array<unknown>) => Promise<unknown>)(...args)
            }
          ])
        ) as unknown as RedisNode.NodePromises
      }))
      const manager = yield* Effect.provideService(Redlock.make(), RedisNode.RedisNodes, recorded)
      const held = yield* manager.acquire("r", { ttl: "1 second" })
      const retry = Redlock.retry({ delay: 100, times: 5, jitter: { min: 1, max: 1 } })
      const waiting = yield* fork(Effect.scoped(manager.acquire("r", { ttl: "1 second", retry })))
      yield* TestClock.adjust("150 millis")
      yield* manager.release(held)
      yield* TestClock.adjust("10 millis")
      yield* Fiber.join(waiting)
      return sent
    }).pipe(Effect.scoped, Effect.provide(memory(3)))

    it.effect("traced and logged at debug level, an acquisition sends the same operations in the same order as without", () => {
      const { spans, use } = recordSpans()
      const logs: Array<string> = []
      return Effect.gen(function*() {
        const plain = yield* operationsSent
        const observed = yield* operationsSent.pipe(
          use,
          Effect.provide(captureLogs(logs)),
          atDebugLevel
        )
        assert.isAbove(plain.length, 6, plain.join("\n"))
        assert.deepStrictEqual(observed, plain)
        // Not for lack of observing: the attempts were traced and the refused one logged.
        assert.isAtLeast(spans().filter((span) => span.name === "Redlock.attempt").length, 3)
        assert.isTrue(logs.some((line) => line.startsWith("effect-redlock: attempt 1 on r")), logs.join("\n"))
      })
    })
  })
}
