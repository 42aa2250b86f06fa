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
export const liveScheduler = (clock: Clock.Clock): Effect.Effect<Clock.ClockScheduler> | undefined =>
  (clock as { scheduler?: () => Effect.Effect<Clock.ClockScheduler> }).scheduler?.()

export const monotonicMillis: Effect.Effect<number> = Effect.clockWith((clock) =>
  Effect.sync(() => unsafeMonotonicMillis(clock))
)
