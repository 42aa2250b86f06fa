/**
 * Spans where a tracer records them, and the metrics of acquisitions,
 * failures and releases (memory nodes, TestClock).
 */
import { assert, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Tracer from "effect/Tracer"
import { RedisNode, Redlock, RedlockMetrics } from "effect-redlock"

const memory = (n: number) => Redlock.layer().pipe(Layer.provideMerge(RedisNode.layerMemory(n)))

it.effect("with a recording tracer: a Redlock.acquire span (with its attributes) and a Redlock.release span", () =>
  Effect.gen(function*() {
    const spans: Array<Tracer.Span> = []
    const recording = Tracer.make({
      span: (options) => {
        const span = Tracer.nativeTracer.span(options)
        spans.push(span)
        return span
      }
    })
    yield* Effect.scoped(Redlock.acquire("job", { ttl: "10 seconds" })).pipe(Effect.withTracer(recording))
    const names = spans.map((span) => span.name)
    assert.includeMembers(names, ["Redlock.acquire", "Redlock.release"])
    const acquire = spans.find((span) => span.name === "Redlock.acquire")!
    assert.deepStrictEqual(acquire.attributes.get("redlock.resources"), ["job"])
    assert.strictEqual(acquire.attributes.get("redlock.attempts"), 1)
    assert.strictEqual(acquire.attributes.get("redlock.ttl_ms"), 10_000)
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
