/**
 * Retry schedules as the engine's waiting steps them (engine/waiting.ts
 * `Retry`). Those made from a delay, its jitter and a number of retries
 * (`Redlock.retry`, and the default retry) are Schedules like any other
 * retry, and also have their steps as plain code (`PlainSchedule`): the
 * waiting takes those instead of stepping the Schedule as an effect, which
 * cost a contended waiter ~0.1 ms of the client's CPU per step
 * (bench/README.md). Any other Schedule is stepped as an effect, in a fiber
 * of the caller's runtime.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleIntervals from "effect/ScheduleIntervals"
import type { Retry } from "@effect-redlock/core/engine/waiting.js"
import type { RetryOptions } from "../Redlock.js"
import type { LockNotAcquired } from "../RedlockError.js"
import type { InvalidOptions } from "./errors.js"
import * as Validate from "./validate.js"

/**
 * A retry schedule's steps as plain code. Its input (the refusal) is not
 * read.
 */
export interface PlainSchedule {
  readonly initial: number
  /** The next state and the delay before the next attempt (ms), or undefined when the schedule is done; `random` draws in [0, 1). */
  step(state: number, random: () => number): { readonly state: number; readonly delayMillis: number } | undefined
}

/** Runs an effect and calls back with its exit (a fiber of the caller's runtime). */
export type EffectRunner = <X, E>(effect: Effect.Effect<X, E>, done: (exit: Exit.Exit<X, E>) => void) => void

/** The EffectRunner over a runtime: each effect in a fiber of its own. */
export const runnerOf = (runtime: Runtime.Runtime<never>): EffectRunner => {
  const runFork = Runtime.runFork(runtime)
  return (effect, done) => runFork(effect).addObserver(done)
}

/** A refused attempt: its error, which may be made only when it is read. */
export interface Refusal {
  readonly refusal: LockNotAcquired
}

/**
 * `schedule` for one wait: its plain steps where it has them (drawing from
 * `random`), else its own steps, run by `runEffect`. A Schedule is stepped on the
 * wall clock, as Effect's own retry does (a cron schedule needs it); the
 * delay is what it asks for beyond that time.
 */
export const forWait = (
  schedule: Schedule.Schedule<unknown, LockNotAcquired>,
  random: () => number,
  runEffect: EffectRunner
): Retry<Refusal> => {
  const plain = plainStepsOf.get(schedule)
  return plain !== undefined ? new PlainRetry(plain, random) : new ScheduleRetry(schedule, runEffect)
}

// One wait's steps: class instances, not literals (see engine/attempt.ts, AttemptFields).
class PlainRetry implements Retry<Refusal> {
  private state: number
  constructor(private readonly plain: PlainSchedule, private readonly random: () => number) {
    this.state = plain.initial
  }
  step(_: Refusal, __: number, next: (delayMillis: number | undefined) => void): void {
    const stepped = this.plain.step(this.state, this.random)
    if (stepped === undefined) return next(undefined)
    this.state = stepped.state
    next(stepped.delayMillis)
  }
}

class ScheduleRetry implements Retry<Refusal> {
  private state: unknown
  constructor(
    private readonly schedule: Schedule.Schedule<unknown, LockNotAcquired>,
    private readonly runEffect: EffectRunner
  ) {
    this.state = schedule.initial
  }
  step(
    refused: Refusal,
    wallNow: number,
    next: (delayMillis: number | undefined) => void,
    failed: (cause: unknown) => void
  ): void {
    this.runEffect(this.schedule.step(wallNow, refused.refusal, this.state), (exit) => {
      if (Exit.isFailure(exit)) return failed(exit.cause)
      const [stepped, , decision] = exit.value
      this.state = stepped
      next(ScheduleDecision.isDone(decision) ? undefined : ScheduleIntervals.start(decision.intervals) - wallNow)
    })
  }
}

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
