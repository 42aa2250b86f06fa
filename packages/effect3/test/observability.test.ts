/**
 * Spans, metrics and debug logs of the lock manager, on in-memory nodes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Logger, LogLevel, Metric, MetricState, Option, TestClock, Tracer } from "effect"
import * as Redlock from "../src/Redlock.js"
import * as RedisNode from "../src/RedisNode.js"
import * as RedlockMetrics from "../src/RedlockMetrics.js"
import { memory } from "./support.js"

interface RecordedSpan {
  readonly name: string
  readonly parent: Option.Option<string>
  readonly spanId: string
  readonly attributes: Map<string, unknown>
  ended: boolean
}

/** A tracer that keeps every span it starts. */
const recordingTracer = () => {
  const spans: Array<RecordedSpan> = []
  let next = 0
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      const attributes = new Map<string, unknown>()
      const recorded: RecordedSpan = {
        name,
        parent: Option.map(parent, (p) => p.spanId),
        spanId: `span-${next++}`,
        attributes,
        ended: false
      }
      spans.push(recorded)
      const span: Tracer.Span = {
        _tag: "Span",
        name,
        spanId: recorded.spanId,
        traceId: "trace",
        parent,
        context,
        status: { _tag: "Started", startTime },
        attributes,
        links,
        sampled: true,
        kind,
        end: () => void (recorded.ended = true),
        attribute: (key, value) => void attributes.set(key, value),
        event: () => {},
        addLinks: () => {}
      }
      return span
    },
    context: (f) => f()
  })
  return { tracer, spans }
}

const count = (metric: Metric.Metric.Counter<number>) =>
  Effect.map(Metric.value(metric), (state: MetricState.MetricState.Counter<number>) => state.count)
const histogramCount = (metric: Metric.Metric.Histogram<number>) =>
  Effect.map(Metric.value(metric), (state) => state.count)

describe("spans", () => {
  it.effect("acquire has one span per attempt under it, with resources, outcomes, attempts and validity; release and extend have their own", () => {
    const { spans, tracer } = recordingTracer()
    return Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      yield* control.putString(0, "redlock:r", "someone else", 50)
      yield* control.putString(1, "redlock:r", "someone else", 50)
      const retry = Redlock.defaultRetry
      const fiber = yield* Effect.fork(Redlock.acquire("r", { ttl: "1 second", retry }))
      yield* TestClock.adjust("200 millis")
      const lock = yield* Fiber.join(fiber)
      yield* Redlock.extend(lock)
      yield* Redlock.release(lock)

      const acquire = spans.find((span) => span.name === "Redlock.acquire")!
      assert.deepStrictEqual(acquire.attributes.get("redlock.resources"), ["r"])
      assert.strictEqual(acquire.attributes.get("redlock.ttl_ms"), 1000)
      assert.strictEqual(acquire.attributes.get("redlock.attempts"), 2)
      assert.isAbove(acquire.attributes.get("redlock.validity_ms") as number, 900)
      const attempts = spans.filter((span) => span.name === "Redlock.attempt")
      assert.strictEqual(attempts.length, 2)
      for (const attempt of attempts) assert.deepStrictEqual(attempt.parent, Option.some(acquire.spanId))
      assert.strictEqual(attempts[0].attributes.get("redlock.granted"), 1)
      assert.include(attempts[0].attributes.get("redlock.outcomes") as string, "memory-0=Held")
      assert.strictEqual(attempts[1].attributes.get("redlock.granted"), 3)
      const extend = spans.find((span) => span.name === "Redlock.extend")!
      assert.include(extend.attributes.get("redlock.outcomes") as string, "memory-2=Ok")
      const release = spans.find((span) => span.name === "Redlock.release")!
      assert.strictEqual(release.attributes.get("redlock.status"), "Released")
      assert.isTrue(spans.every((span) => span.ended), "every span ended")
    }).pipe(Effect.scoped, Effect.provide(memory(3)), Effect.withTracer(tracer))
  })
})

describe("metrics", () => {
  it.effect("acquisitions, failures by reason, attempts, durations, lost locks, extension lag, time left at release", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      const before = {
        acquisitions: yield* count(RedlockMetrics.acquisitions),
        held: yield* count(Metric.tagged(RedlockMetrics.acquireFailures, "reason", "Held")),
        expired: yield* count(Metric.tagged(RedlockMetrics.lostLocks, "reason", "Expired")),
        durations: yield* histogramCount(RedlockMetrics.acquireDuration),
        attempts: yield* histogramCount(RedlockMetrics.attemptsPerAcquire),
        lag: yield* histogramCount(RedlockMetrics.extensionLag),
        released: yield* histogramCount(RedlockMetrics.remainingAtRelease)
      }
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

      assert.strictEqual((yield* count(RedlockMetrics.acquisitions)) - before.acquisitions, 2)
      assert.strictEqual(
        (yield* count(Metric.tagged(RedlockMetrics.acquireFailures, "reason", "Held"))) - before.held,
        1
      )
      assert.strictEqual((yield* count(Metric.tagged(RedlockMetrics.lostLocks, "reason", "Expired"))) - before.expired, 1)
      assert.strictEqual((yield* histogramCount(RedlockMetrics.acquireDuration)) - before.durations, 3)
      assert.strictEqual((yield* histogramCount(RedlockMetrics.attemptsPerAcquire)) - before.attempts, 3)
      assert.strictEqual((yield* histogramCount(RedlockMetrics.extensionLag)) - before.lag, 1)
      assert.strictEqual((yield* histogramCount(RedlockMetrics.remainingAtRelease)) - before.released, 2)
    }).pipe(Effect.provide(memory(3))))
})

describe("debug logs", () => {
  it.effect("a failed attempt is logged at debug level with each node's answer", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      for (let i = 0; i < 3; i++) yield* control.putString(i, "redlock:r", "other", 10_000)
      const logs: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => logs.push(`${logLevel.label} ${String(message)}`))
      yield* Effect.exit(Effect.scoped(Redlock.acquire("r", { ttl: "1 second", retry: Redlock.noRetry }))).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
        Logger.withMinimumLogLevel(LogLevel.Debug)
      )
      assert.strictEqual(logs.length, 1, logs.join("\n"))
      assert.match(logs[0], /^DEBUG effect-redlock: attempt 1 on r: 0 of 2 needed \(memory-0=Held, memory-1=Held/)
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
      promises: Object.fromEntries(Object.entries(node.promises!).map(([method, call]) => [
        method,
        (...args: Array<unknown>) => {
          sent.push(`${index} ${method} ${JSON.stringify(args.map(named))}`)
          return (call as (...args: Array<unknown>) => Promise<unknown>)(...args)
        }
      ])) as unknown as RedisNode.NodePromises
    }))
    const manager = yield* Effect.provideService(Redlock.make(), RedisNode.RedisNodes, recorded)
    const held = yield* manager.acquire("r", { ttl: "1 second" })
    const retry = Redlock.retry({ delay: 100, times: 5, jitter: { min: 1, max: 1 } })
    const waiting = yield* Effect.fork(Effect.scoped(manager.acquire("r", { ttl: "1 second", retry })))
    yield* TestClock.adjust("150 millis")
    yield* manager.release(held)
    yield* TestClock.adjust("10 millis")
    yield* Fiber.join(waiting)
    return sent
  }).pipe(Effect.scoped, Effect.provide(memory(3)))

  it.effect("traced and logged at debug level, an acquisition sends the same operations in the same order as without", () => {
    const { spans, tracer } = recordingTracer()
    const logs: Array<string> = []
    const logger = Logger.make(({ message }) => logs.push(String(message)))
    return Effect.gen(function*() {
      const plain = yield* operationsSent
      const observed = yield* operationsSent.pipe(
        Effect.withTracer(tracer),
        Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
        Logger.withMinimumLogLevel(LogLevel.Debug)
      )
      assert.isAbove(plain.length, 6, plain.join("\n"))
      assert.deepStrictEqual(observed, plain)
      // Not for lack of observing: the attempts were traced and the refused one logged.
      assert.isAtLeast(spans.filter((span) => span.name === "Redlock.attempt").length, 3)
      assert.isTrue(logs.some((line) => line.startsWith("effect-redlock: attempt 1 on r")), logs.join("\n"))
    })
  })
})
