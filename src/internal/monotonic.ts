/** @internal */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

/**
 * Milliseconds on the monotonic timeline of `Clock.currentTimeNanos` (the
 * live clock uses `process.hrtime`, which no wall-clock change moves).
 *
 * The TestClock keeps milliseconds and cannot turn a fractional value (left by
 * a jittered sleep) into nanoseconds; it is read in milliseconds then, which
 * is the same timeline for it.
 */
export const unsafeMonotonicMillis = (clock: Clock.Clock): number => {
  if (clock.unsafeCurrentTimeNanos === liveNanos) return performance.now() + liveOffsetMillis
  try {
    return Number(clock.unsafeCurrentTimeNanos()) / 1e6
  } catch {
    return clock.unsafeCurrentTimeMillis()
  }
}

// Effect's live clock reads process.hrtime.bigint() (plus a constant): a
// BigInt on every read, which cost 8% of a lock+unlock's library CPU at
// N = 1. performance.now() reads the same monotonic source as a number, so on
// that clock it is read instead, moved onto the clock's timeline. The offset
// is taken with the clock read first: our readings come out no later than the
// clock's own (by the microsecond between the two reads), so a deadline
// computed from them errs early, never late.
const liveNanos = Clock.make().unsafeCurrentTimeNanos
const liveOffsetMillis = Number(Clock.make().unsafeCurrentTimeNanos()) / 1e6 - performance.now()

/**
 * The live clock's timer scheduler; `undefined` for a test clock (or any
 * other), whose time only moves when the test says so.
 */
export const liveScheduler = (clock: Clock.Clock): Clock.ClockScheduler | undefined => {
  let scheduler = schedulers.get(clock)
  if (scheduler === undefined && !schedulers.has(clock)) {
    const effect = (clock as { scheduler?: () => Effect.Effect<Clock.ClockScheduler> }).scheduler?.()
    scheduler = effect === undefined ? undefined : Effect.runSync(effect)
    schedulers.set(clock, scheduler)
  }
  return scheduler
}

// The live clock's scheduler is a constant: read once per clock, not on every fan-out.
const schedulers = new WeakMap<Clock.Clock, Clock.ClockScheduler | undefined>()

export const monotonicMillis: Effect.Effect<number> = Effect.clockWith((clock) =>
  Effect.sync(() => unsafeMonotonicMillis(clock))
)
