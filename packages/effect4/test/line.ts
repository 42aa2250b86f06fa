/**
 * The Effect 4 line under the names the shared Effect suites
 * (`packages/fleet/effectSuites/`) import as `@effect-redlock/line`: this
 * major's modules, its `@effect/vitest`, this package, and the few
 * functions whose names or shapes differ between the majors. The Effect 3
 * package's `test/line.ts` exports the same names.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as References from "effect/References"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Tracer from "effect/Tracer"
import * as Monotonic from "../src/internal/monotonic.js"
import type { RetrySchedule } from "../src/Redlock.js"
import type { LockNotAcquired, RedisNodeErrorReason } from "../src/RedlockError.js"

export { assert, describe, it, layer } from "@effect/vitest"
export * as Clock from "effect/Clock"
export * as Context from "effect/Context"
export * as Deferred from "effect/Deferred"
export * as Duration from "effect/Duration"
export * as Effect from "effect/Effect"
export * as Exit from "effect/Exit"
export * as Fiber from "effect/Fiber"
export * as Layer from "effect/Layer"
export * as ManagedRuntime from "effect/ManagedRuntime"
export * as Option from "effect/Option"
export * as Redacted from "effect/Redacted"
export * as Schedule from "effect/Schedule"
export * as Scope from "effect/Scope"
export * as TestClock from "effect/testing/TestClock"
export { Lock, ReadWriteLock, RedisNode, Redlock, RedlockError, Semaphore } from "../src/index.js"
export * as RedlockMetrics from "../src/RedlockMetrics.js"
/** The package's promise API (`effect-redlock/Promise`). */
export * as PromiseApi from "../src/Promise.js"
export * as Fenced from "../src/Fencing/Ioredis.js"
/** The engine's time in this line (internal). */
export * as Monotonic from "../src/internal/monotonic.js"
export * as Ioredis from "../src/RedisNode/Ioredis.js"
export * as Iovalkey from "../src/RedisNode/Iovalkey.js"
export * as NodeRedis from "../src/RedisNode/NodeRedis.js"
export * as Glide from "../src/RedisNode/Glide.js"
/** The test fleet: local redis-servers, as a layer of this line. */
export { type Fleet, layerLocal as layerFleet, masterName, RedisFleet } from "./fleet.js"

/** The line's name, for test titles. */
export const line = "Effect 4"

/** What a duration may be given as. */
export type DurationInput = Duration.Input

/** Run an effect as a child fiber of the current one. */
export const fork = Effect.forkChild

/** Let other fibers run before this one goes on. */
export const yieldNow: Effect.Effect<void> = Effect.yieldNow

/** A fiber's exit if it has ended, else `undefined`. */
export const poll = <A, E>(fiber: Fiber.Fiber<A, E>) => Effect.sync(() => fiber.pollUnsafe())

/** Whether an exit ended by interruption. */
export const isInterrupted = <A, E>(exit: Exit.Exit<A, E>) => Exit.hasInterrupts(exit)

/** An effect whose `Random` draws the given numbers in turn, again and again. */
export const withFixedRandom = (draws: [number, ...Array<number>]) => <A, E, R>(self: Effect.Effect<A, E, R>) => {
  let next = 0
  const draw = () => draws[next++ % draws.length]
  return Effect.provideService(self, Random.Random, {
    nextDoubleUnsafe: draw,
    nextIntUnsafe: () => Math.floor(draw() * Number.MAX_SAFE_INTEGER)
  })
}

/** The memory nodes' `setFailure` argument: every operation fails with this reason, or none with `undefined`. */
export const failWith = (reason: RedisNodeErrorReason | undefined) => reason

/** The typed failure of an exit, if it failed with one. */
export const errorOf = <A, E>(exit: Exit.Exit<A, E>): Option.Option<E> => Exit.findErrorOption(exit)

/**
 * A layer under which every log line is pushed to `logged`, and nothing else
 * logs: its message, after its level in capitals with `withLevel` ("WARN ...").
 */
export const captureLogs = (logged: Array<string>, options: { readonly withLevel?: boolean } = {}) =>
  Logger.layer([
    Logger.make(({ logLevel, message }) =>
      void logged.push(options.withLevel === true ? `${logLevel.toUpperCase()} ${String(message)}` : String(message))
    )
  ])

/** A layer under which configuration is read from `env`, as from environment variables. */
export const configFrom = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))

/** An effect that needs a scope, run in the given one (which the caller closes). */
export const inScope = (scope: Scope.Scope) => Scope.provide(scope)

/** A schedule that stops after at most `times` recurrences. */
export const atMost = (times: number) => Schedule.upTo({ times })

// The live clock, as the engine reads it.
const liveClock = Clock.Clock.defaultValue()

/** The live clock's own reading and the engine's monotonic milliseconds on it, in milliseconds. */
export const liveClockReadings = {
  clockMillis: () => Number(liveClock.monotonicTimeNanosUnsafe()) / 1e6,
  oursMillis: () => Monotonic.monotonicMillis(liveClock)
}

/** The delays (ms) a retry schedule asks for, step by step with `input`, until done (at most `steps`). */
export const scheduleDelays = (schedule: RetrySchedule, input: LockNotAcquired, steps: number) =>
  Effect.gen(function*() {
    const delays: Array<number | "done"> = []
    const step = yield* Schedule.toStep(schedule)
    for (let i = 0; i < steps; i++) {
      const exit = yield* Effect.exit(step(1_000, input))
      // A schedule ends its steps with `Cause.Done`.
      if (
        Exit.isFailure(exit) &&
        exit.cause.reasons.some((reason) => Cause.isFailReason(reason) && Cause.isDone(reason.error))
      ) {
        delays.push("done")
        break
      }
      if (Exit.isFailure(exit)) return yield* Effect.failCause(exit.cause)
      delays.push(Duration.toMillis(exit.value[1]))
    }
    return delays
  })

/** A live clock whose wall time can be stepped back (`step.backMillis`) while its monotonic time runs on; `use` runs an effect on it. */
export const steppableClock = Effect.sync(() => {
  const live = Clock.Clock.defaultValue()
  const step = { backMillis: 0 }
  const clock: Clock.Clock = {
    currentTimeMillisUnsafe: () => live.currentTimeMillisUnsafe() - step.backMillis,
    currentTimeMillis: Effect.sync(() => live.currentTimeMillisUnsafe() - step.backMillis),
    currentTimeNanosUnsafe: () => live.currentTimeNanosUnsafe() - BigInt(step.backMillis) * 1_000_000n,
    currentTimeNanos: Effect.sync(() => live.currentTimeNanosUnsafe() - BigInt(step.backMillis) * 1_000_000n),
    monotonicTimeNanosUnsafe: () => live.monotonicTimeNanosUnsafe(),
    monotonicTimeNanos: live.monotonicTimeNanos,
    sleep: (duration) => live.sleep(duration)
  }
  return { step, use: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.provideService(self, Clock.Clock, clock) }
})

/** A span as a recording tracer kept it. */
export interface RecordedSpan {
  readonly name: string
  readonly spanId: string
  readonly parentId: string | undefined
  readonly attributes: ReadonlyMap<string, unknown>
  readonly ended: boolean
}

/** A tracer that keeps every span it starts: `spans()` reads them, `use` runs an effect under it. */
export const recordSpans = () => {
  const spans: Array<Tracer.Span> = []
  const tracer = Tracer.make({
    span: (options) => {
      const span = Tracer.nativeTracer.span(options)
      spans.push(span)
      return span
    }
  })
  return {
    spans: (): ReadonlyArray<RecordedSpan> =>
      spans.map((span) => ({
        name: span.name,
        spanId: span.spanId,
        parentId: Option.getOrUndefined(Option.map(span.parent, (parent) => parent.spanId)),
        attributes: span.attributes,
        ended: span.status._tag === "Ended"
      })),
    use: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.withTracer(self, tracer)
  }
}

/** Run an effect with the minimum log level at Debug. */
export const atDebugLevel = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.provideService(self, References.MinimumLogLevel, "Debug")

/** How many times a counter was incremented, or a histogram recorded, with the given tags. */
export const metricCount = (
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any counter or histogram
  metric: Metric.Metric<any, any>,
  tags: Record<string, string> = {}
): Effect.Effect<number> =>
  Effect.map(Metric.value(Metric.withAttributes(metric, tags)), (state) => (state as { readonly count: number }).count)

/** Whether `u` is a configuration error (a `REDLOCK_*` variable missing or unreadable). */
export const isConfigError = (u: unknown): boolean => u instanceof Config.ConfigError
