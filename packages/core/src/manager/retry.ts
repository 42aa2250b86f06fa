/**
 * Retry policies as the engine's waiting steps them (engine/waiting.ts
 * `Retry`): a delay, its jitter and a number of retries, stepped as plain
 * code. A policy is any object that carries its steps under `RetryStepsId`:
 * the plain manager's `retry()`, and the Effect packages' `Redlock.retry()`
 * Schedules, which carry the same steps beside their Effect ones.
 *
 * @internal
 */
import { Problem } from "../engine/options.js"
import * as Options from "../engine/options.js"
import type { Retry } from "../engine/waiting.js"
import { readMillis } from "./durations.js"
import type { DurationInput } from "./durations.js"
import type * as FrontEnd from "./frontEndTypes.js"

/** Where a retry policy keeps its steps. */
export const RetryStepsId: unique symbol = Symbol.for("effect-redlock/RetrySteps") as never

/** A refused attempt, as a policy's steps are given it: its error made when read. */
export interface Refusal {
  readonly refusal: unknown
}

/** How a policy steps one acquisition's waiting. */
export interface RetrySteps {
  /** Whether it retries at all: an acquisition that does not takes no place in line. */
  readonly waits: boolean
  /** The steps of one wait, drawing jitter from `random` (in [0, 1)). */
  readonly start: (random: () => number) => Retry<Refusal>
}

/**
 * A retry policy: `retry({ delay, times, jitter })`, `noRetry`, or a
 * Schedule of the Effect packages' `Redlock.retry`.
 */
export interface RetryPolicy {
  readonly [RetryStepsId]: RetrySteps
}

/** How often and how long apart to retry a refused acquisition. */
export interface RetryOptions extends FrontEnd.RetryOptionsOf<DurationInput> {}

// One wait's steps: class instances, not literals (see engine/attempt.ts, AttemptFields).
class JitteredRetry implements Retry<Refusal> {
  private retries = 0
  constructor(
    private readonly delayMillis: number,
    private readonly times: number,
    private readonly min: number,
    private readonly max: number,
    private readonly random: () => number
  ) {}
  step(_: Refusal, __: number, next: (delayMillis: number | undefined) => void): void {
    if (this.retries >= this.times) return next(undefined)
    this.retries++
    // Effect's jitter (delay * (min + (max - min) * draw)), in whole milliseconds.
    next(Math.round(this.delayMillis * (this.min + (this.max - this.min) * this.random())))
  }
}

/** The steps of `delayMillis` apart, `times` retries, jittered by `[min, max]`: options already checked. */
export const jitteredSteps = (delayMillis: number, times: number, min: number, max: number): RetrySteps => ({
  waits: times > 0,
  start: (random) => new JitteredRetry(delayMillis, times, min, max, random)
})

/** The checked parts of retry options (the Effect packages build their Schedules from them too). */
export const check = (
  options: unknown
): { readonly delayMillis: number; readonly times: number; readonly min: number; readonly max: number } | Problem => {
  if (typeof options !== "object" || options === null) return new Problem("retry", "expected { delay, times, jitter? }")
  const given = options as Partial<RetryOptions>
  const delayMillis = Options.millis("retry.delay", given.delay, readMillis)
  if (delayMillis instanceof Problem) return delayMillis
  const { times } = given
  if (typeof times !== "number" || !Number.isSafeInteger(times) || times < 0) {
    return new Problem("retry.times", `must be a whole number, 0 or more; got ${Options.describe(times)}`)
  }
  const { max, min } = given.jitter ?? { min: 0.8, max: 1.2 }
  if (!(Number.isFinite(min) && Number.isFinite(max) && min >= 0 && min <= max)) {
    return new Problem("retry.jitter", `must be factors with 0 <= min <= max; got min ${min}, max ${max}`)
  }
  return { delayMillis, times, min, max }
}

/** A policy from checked options. */
export const policyOf = (steps: RetrySteps): RetryPolicy => ({ [RetryStepsId]: steps })

/** The policy for these options, or their problem. */
export const make = (options: RetryOptions): RetryPolicy | Problem => {
  const checked = check(options)
  return checked instanceof Problem
    ? checked
    : policyOf(jitteredSteps(checked.delayMillis, checked.times, checked.min, checked.max))
}

/** One attempt, then the refusal. */
export const noRetry: RetryPolicy = policyOf({
  waits: false,
  start: () => ({ step: (_, __, next) => next(undefined) })
})

/** The reference's retryDelay of 200 ms, jittered between half and all of it, 3 times. */
export const defaultRetry: RetryPolicy = policyOf(jitteredSteps(200, 3, 0.5, 1))

/** The steps of `input` if it is a policy; `undefined` otherwise. */
export const stepsOf = (input: unknown): RetrySteps | undefined =>
  (typeof input === "object" || typeof input === "function") && input !== null
    ? (input as Partial<RetryPolicy>)[RetryStepsId]
    : undefined
