/**
 * Spans and metrics to OpenTelemetry: provide `@effect/opentelemetry` and the
 * lock manager's spans (Redlock.acquire, Redlock.attempt, Redlock.extend,
 * Redlock.release) and metrics (see `RedlockMetrics`) go to its exporters.
 * Here, spans go to the console and the metrics are read once at the end.
 *
 *   npm install @effect/opentelemetry@0.64 @effect/platform@0.97 @opentelemetry/api@1 \
 *     @opentelemetry/sdk-trace-base@2 @opentelemetry/sdk-trace-node@2 @opentelemetry/sdk-metrics@2 \
 *     @opentelemetry/resources@2 @opentelemetry/semantic-conventions@1   # the versions for effect 3
 *   REDLOCK_NODES=redis://127.0.0.1:6379,... npx tsx examples/opentelemetry.ts
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { ConsoleMetricExporter, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { ConsoleSpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer, Metric } from "effect"
import { Redlock, RedlockMetrics } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"

const TelemetryLive = NodeSdk.layer(() => ({
  resource: { serviceName: "effect-redlock-example" },
  spanProcessor: new SimpleSpanProcessor(new ConsoleSpanExporter()),
  metricReader: new PeriodicExportingMetricReader({
    exporter: new ConsoleMetricExporter(),
    exportIntervalMillis: 60_000
  })
}))

const program = Effect.gen(function*() {
  yield* Effect.scoped(Redlock.acquire("telemetry:demo", { ttl: "5 seconds" }))
  const acquired = yield* Metric.value(RedlockMetrics.acquisitions)
  yield* Effect.log(`acquisitions so far: ${acquired.count}`)
}).pipe(Effect.withSpan("example"))

const MainLive = Redlock.layerConfig().pipe(Layer.provide(Ioredis.layerConfig()), Layer.merge(TelemetryLive))

Effect.runPromise(program.pipe(Effect.provide(MainLive)))
