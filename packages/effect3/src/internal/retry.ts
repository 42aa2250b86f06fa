/**
 * Retry schedules as the engine's waiting steps them (engine/waiting.ts
 * `Retry`). Those made from a delay, its jitter and a number of retries
 * (`Redlock.retry`, and the default retry) are Schedules like any other
 * retry, and also carry core's plain steps (core manager/retry.ts, which the
 * promise API steps them by): the waiting takes those instead of stepping
 * the Schedule as an effect. Any other Schedule is stepped as an effect, in
 * a fiber of the caller's runtime.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import { Problem } from "@effect-redlock/core/engine/options.js"
import * as CoreRetry from "@effect-redlock/core/manager/retry.js"
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
  const plain = CoreRetry.stepsOf(schedule)
  // Plain steps never read the refusal.
  return plain !== undefined ? plain.start(random) as Retry<Refusal> : new ScheduleRetry(schedule, runEffect)
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

/** The schedule for these options, with core's plain steps; InvalidOptions for options out of range. */
export const make = (
  options: RetryOptions
): Either.Either<Schedule.Schedule<unknown, LockNotAcquired>, InvalidOptions> => {
  const checked = CoreRetry.check(options)
  if (checked instanceof Problem) return Validate.invalid(checked.option, checked.detail)
  const { delayMillis, max, min, times } = checked
  const schedule = Schedule.spaced(Duration.millis(delayMillis)).pipe(
    Schedule.jitteredWith({ min, max }),
    // Whole milliseconds: the TestClock cannot hold fractional ones.
    Schedule.modifyDelay((_, jittered) => Duration.millis(Math.round(Duration.toMillis(jittered)))),
    Schedule.intersect(Schedule.recurs(times))
  )
  // The same delays for the same draws (Effect's jitter), drawn from the random source the caller
  // hands over (the fiber's Random, or Math.random when it is Effect's default: see
  // manager/acquisition.ts, `randomOf`).
  return Either.right(
    Object.assign(schedule, CoreRetry.policyOf(CoreRetry.jitteredSteps(delayMillis, times, min, max)))
  )
}

/** `make`, throwing its InvalidOptions (`Redlock.retry`, and the promise facade's `retry`). */
export const unsafeMake = (options: RetryOptions): Schedule.Schedule<unknown, LockNotAcquired> =>
  Either.getOrThrowWith(make(options), (invalid) => invalid)
