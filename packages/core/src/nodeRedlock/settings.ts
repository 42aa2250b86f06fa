/**
 * node-redlock's settings as the entry reads them: its defaults, its checks
 * (a duration is a whole number of milliseconds), and its retries (a retry
 * count counts attempts: every refused attempt steps it, turns woken in line
 * and re-checks included, so `retryCount: n` makes at most n + 1 attempts).
 *
 * @internal
 */
import * as Options from "../engine/options.js"
import type { Retry } from "../engine/waiting.js"
import { InvalidOptions } from "../manager/errors.js"
import * as RetryPolicies from "../manager/retry.js"

/** node-redlock's settings, and what the entry adds (`maxTtl`, `restartQuarantine`, `keyPrefix`). */
export interface Settings {
  /** Clock drift allowance, a fraction of the duration (plus 2 ms). Default 0.01. */
  readonly driftFactor: number
  /** Retries after a refused attempt: `n` means at most n + 1 attempts; -1 retries until granted. Default 10. */
  readonly retryCount: number
  /** Milliseconds between attempts. Default 200. */
  readonly retryDelay: number
  /** Up to this many milliseconds added to or taken from each delay, at random. Default 100. */
  readonly retryJitter: number
  /** `using` extends the lock when this many milliseconds of it are left. Default 500. */
  readonly automaticExtensionThreshold: number
}

/** What the entry's constructor takes beyond node-redlock's settings. */
export interface EntrySettings extends Settings {
  /**
   * The longest duration any process gives a lock of these resources, in ms.
   * Unset (node-redlock's way): any duration, and no restart quarantine, as
   * none can be bounded. Set: longer durations are refused, and a server
   * that started less than `maxTtl` ago does not vote until then, unless it
   * keeps its keys across restarts (docs/quarantine.md).
   */
  readonly maxTtl: number | undefined
  /** Whether a server that just (re)started sits out `maxTtl` (only with `maxTtl`). Default: true with `maxTtl`. */
  readonly restartQuarantine: boolean | undefined
  /** Prepended to every resource to make its key. Default "" (node-redlock's keys are the resources). */
  readonly keyPrefix: string
}

export const defaults: EntrySettings = {
  driftFactor: 0.01,
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 100,
  automaticExtensionThreshold: 500,
  maxTtl: undefined,
  restartQuarantine: undefined,
  keyPrefix: ""
}

const wholeAtLeast = (name: string, input: unknown, least: number): number => {
  if (typeof input === "number" && Number.isSafeInteger(input) && input >= least) return input
  throw new InvalidOptions(name, `must be a whole number, ${least} or more; got ${Options.describe(input)}`)
}

/** Each setting given over its default, checked; throws InvalidOptions. */
export const merge = (base: EntrySettings, given: unknown): EntrySettings => {
  if (given === undefined) return base
  if (typeof given !== "object" || given === null) {
    throw new InvalidOptions("settings", `expected { retryCount, retryDelay, ... }, got ${Options.describe(given)}`)
  }
  const partial = given as Partial<Record<keyof EntrySettings, unknown>>
  const driftFactor = partial.driftFactor ?? base.driftFactor
  const drift = Options.driftFactor(driftFactor)
  if (drift instanceof Options.Problem) throw new InvalidOptions(drift.option, drift.detail)
  const maxTtl = partial.maxTtl ?? base.maxTtl
  const quarantineInput = partial.restartQuarantine ?? base.restartQuarantine
  const restartQuarantine = quarantineInput === undefined
    ? undefined
    : Options.flag("restartQuarantine", quarantineInput)
  if (restartQuarantine instanceof Options.Problem) {
    throw new InvalidOptions(restartQuarantine.option, restartQuarantine.detail)
  }
  const keyPrefix = Options.keyPrefix(partial.keyPrefix ?? base.keyPrefix)
  if (keyPrefix instanceof Options.Problem) throw new InvalidOptions(keyPrefix.option, keyPrefix.detail)
  return {
    driftFactor: drift,
    retryCount: wholeAtLeast("retryCount", partial.retryCount ?? base.retryCount, -1),
    retryDelay: wholeAtLeast("retryDelay", partial.retryDelay ?? base.retryDelay, 0),
    retryJitter: wholeAtLeast("retryJitter", partial.retryJitter ?? base.retryJitter, 0),
    automaticExtensionThreshold: wholeAtLeast(
      "automaticExtensionThreshold",
      partial.automaticExtensionThreshold ?? base.automaticExtensionThreshold,
      0
    ),
    maxTtl: maxTtl === undefined ? undefined : wholeAtLeast("maxTtl", maxTtl, 1),
    restartQuarantine,
    keyPrefix
  }
}

/** The error node-redlock throws for a duration that is no whole number of milliseconds (its message kept). */
export class DurationNotInteger extends InvalidOptions {
  constructor(given: unknown) {
    super("duration", `expected a whole number of milliseconds, got ${Options.describe(given)}`)
  }
  override get message(): string {
    return "Duration must be an integer value in milliseconds."
  }
}

/** The error node-redlock throws for a `using` whose threshold leaves under 100 ms between extensions (its message kept). */
export class ThresholdTooLong extends InvalidOptions {
  constructor(thresholdMillis: number, durationMillis: number) {
    super(
      "automaticExtensionThreshold",
      `${thresholdMillis} ms must be at least 100 ms below the duration of ${durationMillis} ms`
    )
  }
  override get message(): string {
    return "A lock `duration` must be at least 100ms greater than the `automaticExtensionThreshold` setting."
  }
}

/** `duration` if it is a whole number of milliseconds; throws node-redlock's error otherwise. */
export const duration = (input: unknown): number => {
  if (typeof input === "number" && Number.isSafeInteger(input)) return input
  throw new DurationNotInteger(input)
}

// One wait's steps: node-redlock's delay, retryDelay ± retryJitter, drawn for each attempt.
class Steps implements Retry<unknown> {
  readonly stepsRechecks = true
  private retries = 0
  constructor(
    private readonly times: number,
    private readonly delayMillis: number,
    private readonly jitterMillis: number,
    private readonly random: () => number
  ) {}
  step(_: unknown, __: number, next: (delayMillis: number | undefined) => void): void {
    if (this.retries >= this.times) return next(undefined)
    this.retries++
    next(Math.max(0, this.delayMillis + Math.floor((this.random() * 2 - 1) * this.jitterMillis)))
  }
}

/** The retry policy of `settings`, for the engine's waiting. */
export const retryPolicy = ({ retryCount, retryDelay, retryJitter }: Settings): RetryPolicies.RetryPolicy => {
  const times = retryCount === -1 ? Infinity : retryCount
  return RetryPolicies.policyOf({
    waits: times > 0,
    start: (random) => new Steps(times, retryDelay, retryJitter, random)
  })
}
