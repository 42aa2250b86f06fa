/**
 * Effect's `Clock` as the engine's time (engine/time.ts). On the live clock:
 * `performance.now()`, Node timers and microtasks (engine/liveTime.ts). On
 * any other clock (a test's `TestClock`): a timer is a fiber that sleeps on
 * that clock and then calls back, so the test's clock moves the engine's
 * timers.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as LiveTime from "@effect-redlock/core/engine/liveTime.js"
import type { Time } from "@effect-redlock/core/engine/time.js"

// Effect's live clock is the default value of the Clock reference: one class, whose instances read the real clocks.
const LiveClock = Clock.Clock.defaultValue().constructor

/** Whether `clock` is Effect's live clock (a test's clock, or a user's own, is not). */
export const isLive = (clock: Clock.Clock): boolean => clock.constructor === LiveClock

// Monotonic milliseconds on the live clock's own timeline (it reads process.hrtime): the offset is taken
// with the clock read first, so our readings come out no later than its own and a deadline errs early.
const liveOffsetMillis = Number(Clock.Clock.defaultValue().monotonicTimeNanosUnsafe()) / 1e6 - performance.now()

/** The live clock's time: one object for every caller. */
export const liveTime: Time = LiveTime.make(liveOffsetMillis)

/**
 * Milliseconds on `clock`'s monotonic timeline. A TestClock keeps
 * milliseconds, and may hold a fraction of one (a jittered sleep) that it
 * cannot turn into nanoseconds: it is read in milliseconds then.
 */
export const monotonicMillis = (clock: Clock.Clock): number => {
  if (isLive(clock)) return liveTime.now()
  try {
    return Number(clock.monotonicTimeNanosUnsafe()) / 1e6
  } catch {
    return clock.currentTimeMillisUnsafe()
  }
}

const times = new WeakMap<Clock.Clock, Time>()

/** The engine's time on `clock` (made once per clock). */
export const timeOf = (clock: Clock.Clock): Time => {
  if (isLive(clock)) return liveTime
  let time = times.get(clock)
  if (time === undefined) {
    const schedule = (millis: number, fn: () => void) => {
      const sleeper = Effect.runFork(Effect.andThen(clock.sleep(Duration.millis(millis)), Effect.sync(fn)))
      return () => sleeper.interruptUnsafe()
    }
    time = {
      now: () => monotonicMillis(clock),
      wallNow: () => clock.currentTimeMillisUnsafe(),
      schedule,
      timeout: schedule,
      defer: queueMicrotask
    }
    times.set(clock, time)
  }
  return time
}

/** The engine's time of a fiber: its clock. */
export const timeOfFiber = (fiber: Fiber.Fiber<unknown, unknown>): Time => timeOf(fiber.getRef(Clock.Clock))

/** The engine's time of the current fiber. */
export const currentTime: Effect.Effect<Time> = Effect.withFiber((fiber) => Effect.succeed(timeOfFiber(fiber)))

/** Monotonic milliseconds of the current fiber's clock. */
export const currentMillis: Effect.Effect<number> = Effect.withFiber((fiber) =>
  Effect.succeed(monotonicMillis(fiber.getRef(Clock.Clock)))
)
