/**
 * Retry schedules as the engine's waiting steps them (engine/waiting.ts
 * `Retry`). Those made from a delay, its jitter and a number of retries
 * (`Redlock.retry`, the default retry, `Redlock.noRetry`) are Schedules like
 * any other, and also carry core's plain steps (core manager/retry.ts, which
 * the promise API steps them by): the waiting takes those instead of
 * running the Schedule's step as an effect on every refusal. Any other Schedule is stepped with `Schedule.toStep`, in a fiber
 * that runs with the caller's services (its `Random` draws the jitter).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import { Problem } from "@effect-redlock/core/engine/options.js"
import * as CoreRetry from "@effect-redlock/core/manager/retry.js"
import type { Retry } from "@effect-redlock/core/engine/waiting.js"
import type { InvalidOptions, LockNotAcquired } from "./errors.js"
import * as Validate from "./validate.js"

/** A retry schedule: any Schedule fed with each refusal, needing no service. */
export type RetrySchedule = Schedule.Schedule<unknown, LockNotAcquired>

/** See `Redlock.retry`. */
export interface RetryOptions {
  readonly delay: Duration.Input
  readonly times: number
  readonly jitter?: { readonly min: number; readonly max: number } | undefined
}

/** The schedule for these options, with core's plain steps; InvalidOptions for options out of range. */
export const make = (options: RetryOptions): RetrySchedule | InvalidOptions => {
  const checked = CoreRetry.check(options)
  if (checked instanceof Problem) return Validate.invalid(checked.option, checked.detail)
  const { delayMillis, max, min, times } = checked
  // As a Schedule: the same delays for the same draws of the fiber's Random, in whole milliseconds (the
  // TestClock cannot hold fractional ones).
  const jittered = Schedule.spaced(Duration.millis(delayMillis)).pipe(
    Schedule.modifyDelay(() =>
      Effect.map(Random.next, (draw) => Duration.millis(Math.round(delayMillis * (min + (max - min) * draw))))
    )
  )
  const schedule: RetrySchedule = Schedule.max([jittered, Schedule.recurs(times)])
  return Object.assign(schedule, CoreRetry.policyOf(CoreRetry.jitteredSteps(delayMillis, times, min, max)))
}

/** Whether a schedule never retries: an acquisition with it takes no place in line. */
export const isNoRetry = (schedule: RetrySchedule): boolean => CoreRetry.stepsOf(schedule)?.waits === false

/** `make`, throwing its InvalidOptions (`Redlock.retry`). */
export const makeOrThrow = (options: RetryOptions): RetrySchedule => {
  const made = make(options)
  if (Schedule.isSchedule(made)) return made
  throw made
}

/** Try once (`Redlock.noRetry`). */
export const noRetry: RetrySchedule = makeOrThrow({ delay: "1 millis", times: 0 })

/**
 * `schedule` for one wait: its plain steps where it has them (drawing from
 * `random`), else its own steps, each run in a fiber with `context`. A
 * Schedule is stepped on the wall clock, as Effect's own retry does (a cron
 * schedule needs it); the delay is what it asks for beyond that time.
 */
export const forWait = (
  schedule: RetrySchedule,
  random: () => number,
  context: Context.Context<never>
): Retry<{ readonly refusal: LockNotAcquired }> => {
  const plain = CoreRetry.stepsOf(schedule)
  // Plain steps never read the refusal.
  return plain !== undefined
    ? plain.start(random) as Retry<Refusal>
    : new ScheduleRetry(schedule, Effect.runForkWith(context))
}

type Refusal = { readonly refusal: LockNotAcquired }

class ScheduleRetry implements Retry<Refusal> {
  private stepOf:
    | ((now: number, input: LockNotAcquired) => Effect.Effect<readonly [unknown, Duration.Duration], unknown>)
    | undefined
  constructor(
    private readonly schedule: RetrySchedule,
    private readonly runFork: ReturnType<typeof Effect.runForkWith<never>>
  ) {}
  step(
    refused: Refusal,
    wallNow: number,
    next: (delayMillis: number | undefined) => void,
    failed: (cause: unknown) => void
  ): void {
    const stepped = this.stepOf === undefined
      ? Effect.flatMap(Schedule.toStep(this.schedule), (made) => (this.stepOf = made)(wallNow, refused.refusal))
      : this.stepOf(wallNow, refused.refusal)
    this.runFork(stepped).addObserver((exit) => {
      if (Exit.isSuccess(exit)) return next(Duration.toMillis(exit.value[1]))
      // The schedule is done: it ends its steps with `Cause.Done`.
      if (exit.cause.reasons.some((reason) => Cause.isFailReason(reason) && Cause.isDone(reason.error))) {
        return next(undefined)
      }
      failed(exit.cause)
    })
  }
}
