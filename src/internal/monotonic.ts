/** @internal */
import type * as Clock from "effect/Clock"
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
  try {
    return Number(clock.unsafeCurrentTimeNanos()) / 1e6
  } catch {
    return clock.unsafeCurrentTimeMillis()
  }
}

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
