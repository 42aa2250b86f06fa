/**
 * The Effect 3 line under the names the shared Effect suites
 * (`packages/fleet/effectSuites/`) import as `@effect-redlock/line`: this
 * major's modules, its `@effect/vitest`, this package, and the few
 * functions whose names or shapes differ between the majors. The Effect 4
 * package's `test/line.ts` exports the same names.
 */
import {
  Cause,
  Clock,
  ConfigError,
  ConfigProvider,
  Effect,
  Exit,
  Fiber,
  Layer,
  Logger,
  LogLevel,
  Metric,
  Option,
  Random,
  Schedule,
  ScheduleDecision,
  ScheduleIntervals,
  Scope,
  Tracer
} from "effect"
import * as Monotonic from "../src/internal/monotonic.js"
import type { Duration } from "effect"
import type { RetrySchedule } from "../src/Redlock.js"
import type { LockNotAcquired, RedisNodeErrorReason } from "../src/RedlockError.js"

export { assert, describe, it, layer } from "@effect/vitest"
export {
  Clock,
  Context,
  Deferred,
  Duration,
  Effect,
  Exit,
  Fiber,
  Layer,
  ManagedRuntime,
  Option,
  Redacted,
  Schedule,
  Scope,
  TestClock
} from "effect"
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
export { type Fleet, layerLocal as layerFleet, masterName, RedisFleet } from "@effect-redlock/fleet/effect3.js"

/** The line's name, for test titles. */
export const line = "Effect 3"

/** What a duration may be given as. */
export type DurationInput = Duration.DurationInput

/** Run an effect as a child fiber of the current one. */
export const fork = Effect.fork

/** Let other fibers run before this one goes on. */
export const yieldNow: Effect.Effect<void> = Effect.yieldNow()

/** A fiber's exit if it has ended, else `undefined`. */
export const poll = <A, E>(fiber: Fiber.Fiber<A, E>) => Effect.map(Fiber.poll(fiber), Option.getOrUndefined)

/** Whether an exit ended by interruption. */
export const isInterrupted = <A, E>(exit: Exit.Exit<A, E>) => Exit.isFailure(exit) && Cause.isInterrupted(exit.cause)

/** An effect whose `Random` draws the given numbers in turn, again and again. */
export const withFixedRandom = (draws: [number, ...Array<number>]) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.withRandom(self, Random.fixed(draws))

/** The memory nodes' `setFailure` argument: every operation fails with this reason, or none with `undefined`. */
export const failWith = (reason: RedisNodeErrorReason | undefined) => Option.fromNullable(reason)

/** The typed failure of an exit, if it failed with one. */
export const errorOf = <A, E>(exit: Exit.Exit<A, E>): Option.Option<E> =>
  Exit.isSuccess(exit) ? Option.none() : Cause.failureOption(exit.cause)

/**
 * A layer under which every log line is pushed to `logged`, and nothing else
 * logs: its message, after its level in capitals with `withLevel` ("WARN ...").
 */
export const captureLogs = (logged: Array<string>, options: { readonly withLevel?: boolean } = {}) =>
  Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ logLevel, message }) =>
      void logged.push(options.withLevel === true ? `${logLevel.label} ${String(message)}` : String(message))
    )
  )

/** A layer under which configuration is read from `env`, as from environment variables. */
export const configFrom = (env: Record<string, string>) =>
  Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

/** An effect that needs a scope, run in the given one (which the caller closes). */
export const inScope = (scope: Scope.Scope) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Scope.extend(effect, scope)

/** A schedule that stops after at most `times` recurrences. */
export const atMost = (times: number) => <Out, In, R>(self: Schedule.Schedule<Out, In, R>) =>
  Schedule.intersect(self, Schedule.recurs(times))

// The live clock, as the engine reads it.
const liveClock = Clock.make()

/** The live clock's own reading and the engine's monotonic milliseconds on it, in milliseconds. */
export const liveClockReadings = {
  clockMillis: () => Number(liveClock.unsafeCurrentTimeNanos()) / 1e6,
  oursMillis: () => Monotonic.unsafeMonotonicMillis(liveClock)
}

/** The delays (ms) a retry schedule asks for, step by step with `input`, until done (at most `steps`). */
export const scheduleDelays = (schedule: RetrySchedule, input: LockNotAcquired, steps: number) =>
  Effect.gen(function*() {
    const delays: Array<number | "done"> = []
    let state = schedule.initial
    for (let step = 0; step < steps; step++) {
      const [next, , decision] = yield* schedule.step(1_000, input, state)
      state = next
      delays.push(ScheduleDecision.isDone(decision) ? "done" : ScheduleIntervals.start(decision.intervals) - 1_000)
      if (ScheduleDecision.isDone(decision)) break
    }
    return delays
  })

/** A live clock whose wall time can be stepped back (`step.backMillis`) while its monotonic time runs on; `use` runs an effect on it. */
export const steppableClock = Effect.map(Effect.clock, (live) => {
  const step = { backMillis: 0 }
  const clock = {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => live.unsafeCurrentTimeMillis() - step.backMillis,
    currentTimeMillis: Effect.sync(() => live.unsafeCurrentTimeMillis() - step.backMillis),
    unsafeCurrentTimeNanos: () => live.unsafeCurrentTimeNanos(),
    currentTimeNanos: live.currentTimeNanos,
    // The live clock's timer scheduler (not in the Clock type), which the library uses when a clock offers it.
    scheduler: (live as unknown as { readonly scheduler: () => unknown }).scheduler.bind(live),
    sleep: (duration: Duration.Duration) => live.sleep(duration)
  } as Clock.Clock
  return { step, use: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.withClock(self, clock) }
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
  const spans: Array<RecordedSpan & { ended: boolean }> = []
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      const attributes = new Map<string, unknown>()
      const recorded = {
        name,
        spanId: `span-${spans.length}`,
        parentId: Option.getOrUndefined(Option.map(parent, (p) => p.spanId)),
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
  return {
    spans: (): ReadonlyArray<RecordedSpan> => spans,
    use: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.withTracer(self, tracer)
  }
}

/** Run an effect with the minimum log level at Debug. */
export const atDebugLevel = <A, E, R>(self: Effect.Effect<A, E, R>) => Logger.withMinimumLogLevel(self, LogLevel.Debug)

/** How many times a counter was incremented, or a histogram recorded, with the given tags. */
export const metricCount = (
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any counter or histogram
  metric: Metric.Metric<any, any, any>,
  tags: Record<string, string> = {}
): Effect.Effect<number> =>
  Effect.map(
    Metric.value(Object.entries(tags).reduce((tagged, [key, value]) => Metric.tagged(tagged, key, value), metric)),
    (state) => (state as { readonly count: number }).count
  )

/** Whether `u` is a configuration error (a `REDLOCK_*` variable missing or unreadable). */
export const isConfigError = (u: unknown): boolean => ConfigError.isConfigError(u)
