/**
 * Retry schedules made from a delay, its jitter and a number of retries
 * (`Redlock.retry`, and the default retry). Each is a Schedule like any
 * other retry, and also has its steps as plain code (waiting.ts
 * `PlainSchedule`): the waiting that runs as plain code takes those instead
 * of stepping the Schedule as an effect, which cost a contended waiter
 * ~0.1 ms of the client's CPU per step (bench/README.md, eleventh session).
 * Any other Schedule is stepped as an effect.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Schedule from "effect/Schedule"
import type { RetryOptions } from "../Redlock.js"
import type { LockNotAcquired } from "../RedlockError.js"
import type { InvalidOptions } from "./errors.js"
import * as Validate from "./validate.js"
import type { PlainSchedule } from "./waiting.js"

const plainStepsOf = new WeakMap<Schedule.Schedule<unknown, LockNotAcquired>, PlainSchedule>()

/** The schedule for these options, with its plain steps; InvalidOptions for options out of range. */
export const make = (options: RetryOptions): Either.Either<Schedule.Schedule<unknown, LockNotAcquired>, InvalidOptions> => {
  if (typeof options !== "object" || options === null) return Validate.invalid("retry", "expected { delay, times, jitter? }")
  const delayMillis = Validate.millis("retry.delay", options.delay)
  if (Either.isLeft(delayMillis)) return Either.left(delayMillis.left)
  const { times } = options
  if (!Number.isSafeInteger(times) || times < 0) return Validate.invalid("retry.times", `must be a whole number, 0 or more; got ${times}`)
  const { max, min } = options.jitter ?? { min: 0.8, max: 1.2 }
  if (!(Number.isFinite(min) && Number.isFinite(max) && min >= 0 && min <= max)) {
    return Validate.invalid("retry.jitter", `must be factors with 0 <= min <= max; got min ${min}, max ${max}`)
  }
  const delay = delayMillis.right
  const schedule = Schedule.spaced(Duration.millis(delay)).pipe(
    Schedule.jitteredWith({ min, max }),
    // Whole milliseconds: the TestClock cannot hold fractional ones.
    Schedule.modifyDelay((_, jittered) => Duration.millis(Math.round(Duration.toMillis(jittered)))),
    Schedule.intersect(Schedule.recurs(times))
  )
  // The same delays for the same draws (Effect's jitter: delay * (min + (max - min) * draw)), drawn
  // from the random source the caller hands over (the fiber's Random, or Math.random when it is
  // Effect's default: see manager/acquisition.ts, `randomOf`).
  plainStepsOf.set(schedule, {
    initial: 0,
    step: (retries, random) =>
      retries >= times ? undefined : {
        state: retries + 1,
        delayMillis: Math.round(delay * (min + (max - min) * random()))
      }
  })
  return Either.right(schedule)
}

/** `make`, throwing its InvalidOptions (`Redlock.retry`, and the promise facade's `retry`). */
export const unsafeMake = (options: RetryOptions): Schedule.Schedule<unknown, LockNotAcquired> =>
  Either.getOrThrowWith(make(options), (invalid) => invalid)

/** A retry schedule's plain steps, if it was made here; otherwise it is stepped as an effect. */
export const plainSteps = (schedule: Schedule.Schedule<unknown, LockNotAcquired>): PlainSchedule | undefined =>
  plainStepsOf.get(schedule)
