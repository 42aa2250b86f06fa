/**
 * Spans where a tracer records them, and the metrics of acquisitions,
 * failures and releases (memory nodes, TestClock).
 */
import { assert, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as References from "effect/References"
import * as TestClock from "effect/testing/TestClock"
import * as Tracer from "effect/Tracer"
import { RedisNode, Redlock, RedlockMetrics } from "effect-redlock"

/** A tracer that keeps every span it makes. */
const recordingTracer = () => {
  const spans: Array<Tracer.Span> = []
  const recording = Tracer.make({
    span: (options) => {
      const span = Tracer.nativeTracer.span(options)
      spans.push(span)
      return span
    }
  })
  return { recording, spans }
}

const memory = (n: number) => Redlock.layer().pipe(Layer.provideMerge(RedisNode.layerMemory(n)))

it.effect("with a recording tracer: a Redlock.acquire span (with its attributes) and a Redlock.release span", () =>
  Effect.gen(function*() {
    const { recording, spans } = recordingTracer()
    yield* Effect.scoped(Redlock.acquire("job", { ttl: "10 seconds" })).pipe(Effect.withTracer(recording))
    const names = spans.map((span) => span.name)
    assert.includeMembers(names, ["Redlock.acquire", "Redlock.release"])
    const acquire = spans.find((span) => span.name === "Redlock.acquire")!
    assert.deepStrictEqual(acquire.attributes.get("redlock.resources"), ["job"])
    assert.strictEqual(acquire.attributes.get("redlock.attempts"), 1)
    assert.strictEqual(acquire.attributes.get("redlock.ttl_ms"), 10_000)
  }).pipe(Effect.provide(memory(3))))

it.effect("one Redlock.attempt span per attempt under the acquisition's, with each node's answer; extend has its own span", () =>
  Effect.gen(function*() {
    const { recording, spans } = recordingTracer()
    const control = yield* RedisNode.MemoryNodes
    yield* control.putString(0, "redlock:r", "someone else", 50)
    yield* control.putString(1, "redlock:r", "someone else", 50)
    yield* Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(Redlock.acquire("r", { ttl: "1 second" }))
      yield* TestClock.adjust("200 millis")
      const lock = yield* Fiber.join(fiber)
      yield* Redlock.extend(lock)
      yield* Redlock.release(lock)
    }).pipe(Effect.scoped, Effect.withTracer(recording))
    const acquire = spans.find((span) => span.name === "Redlock.acquire")!
    assert.strictEqual(acquire.attributes.get("redlock.attempts"), 2)
    assert.isAbove(acquire.attributes.get("redlock.validity_ms") as number, 900)
    const attempts = spans.filter((span) => span.name === "Redlock.attempt")
    assert.strictEqual(attempts.length, 2)
    for (const attempt of attempts) assert.deepStrictEqual(Option.map(attempt.parent, (parent) => parent.spanId), Option.some(acquire.spanId))
    assert.strictEqual(attempts[0].attributes.get("redlock.granted"), 1)
    assert.include(attempts[0].attributes.get("redlock.outcomes") as string, "memory-0=Held")
    assert.strictEqual(attempts[1].attributes.get("redlock.granted"), 3)
    assert.isTrue(attempts[0].status._tag === "Ended" && attempts[1].status._tag === "Ended")
    if (attempts[0].status._tag === "Ended" && acquire.status._tag === "Ended") {
      assert.isTrue(attempts[0].status.startTime >= acquire.status.startTime, "inside the acquisition's span")
      assert.isTrue(attempts[0].status.endTime <= acquire.status.endTime)
    }
    const extend = spans.find((span) => span.name === "Redlock.extend")!
    assert.deepStrictEqual(extend.attributes.get("redlock.resources"), ["r"])
    assert.include(extend.attributes.get("redlock.outcomes") as string, "memory-2=Ok")
    assert.isAbove(extend.attributes.get("redlock.validity_ms") as number, 900)
    const release = spans.find((span) => span.name === "Redlock.release")!
    assert.strictEqual(release.attributes.get("redlock.status"), "Released")
    assert.include(release.attributes.get("redlock.outcomes") as string, "memory-0=Ok")
  }).pipe(Effect.provide(memory(3))))

it.live("a release that a majority did not confirm is logged as a warning as the lock's scope closes, naming how many nodes it missed", () =>
  Effect.gen(function*() {
    const control = yield* RedisNode.MemoryNodes
    const logs: Array<string> = []
    const capture = Logger.layer([Logger.make(({ logLevel, message }) => void logs.push(`${logLevel} ${String(message)}`))])
    yield* Effect.scoped(Effect.andThen(
      Redlock.acquire("r", { ttl: "10 seconds" }),
      Effect.forEach([0, 1], (index) => control.setDown(index, true))
    )).pipe(Effect.provide(capture))
    assert.strictEqual(logs.length, 1, logs.join("\n"))
    assert.match(logs[0], /^Warn effect-redlock: release of r did not reach 2 node\(s\); their keys expire within 10s/)
  }).pipe(Effect.provide(memory(3))))

it.effect("a refused attempt is logged at debug level with each node's answer; nothing is logged above it", () =>
  Effect.gen(function*() {
    const control = yield* RedisNode.MemoryNodes
    for (let i = 0; i < 3; i++) yield* control.putString(i, "redlock:r", "other", 10_000)
    const logs: Array<string> = []
    const capture = Logger.layer([Logger.make(({ logLevel, message }) => void logs.push(`${logLevel} ${String(message)}`))])
    const refused = Effect.exit(Effect.scoped(Redlock.acquire("r", { ttl: "1 second", retry: Redlock.noRetry })))
    yield* refused.pipe(Effect.provide(capture))
    assert.deepStrictEqual(logs, [], "not at the default level")
    yield* refused.pipe(Effect.provide(capture), Effect.provideService(References.MinimumLogLevel, "Debug"))
    assert.strictEqual(logs.length, 1, logs.join("\n"))
    assert.match(logs[0], /^Debug effect-redlock: attempt 1 on r: 0 of 2 needed \(memory-0=Held, memory-1=Held/)
  }).pipe(Effect.provide(memory(3))))

it.effect("metrics: acquisitions, failures by reason, attempts and the validity left at release", () =>
  Effect.gen(function*() {
    const before = (yield* Metric.value(RedlockMetrics.acquisitions)).count
    const refusedBefore = (yield* Metric.value(Metric.withAttributes(RedlockMetrics.acquireFailures, { reason: "Held" }))).count
    const releasedBefore = (yield* Metric.value(RedlockMetrics.remainingAtRelease)).count
    yield* Effect.scoped(Effect.gen(function*() {
      yield* Redlock.acquire("job", { ttl: "10 seconds" })
      yield* Effect.flip(Effect.scoped(Redlock.acquire("job", { ttl: "10 seconds", retry: Redlock.noRetry })))
    }))
    assert.strictEqual((yield* Metric.value(RedlockMetrics.acquisitions)).count - before, 1)
    assert.strictEqual((yield* Metric.value(Metric.withAttributes(RedlockMetrics.acquireFailures, { reason: "Held" }))).count - refusedBefore, 1)
    assert.strictEqual((yield* Metric.value(RedlockMetrics.remainingAtRelease)).count - releasedBefore, 1)
  }).pipe(Effect.provide(memory(3))))
