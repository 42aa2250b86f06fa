/**
 * The plain lock manager's settings, checked once by `makeRedlock` and
 * handed to each of its parts (acquisition, release, extension, fencing,
 * inspection).
 *
 * @internal
 */
import * as Algorithm from "../engine/algorithm.js"
import { ContendedKeys } from "../engine/contendedKeys.js"
import type { Node } from "../engine/node.js"
import * as Options from "../engine/options.js"
import { Problem } from "../engine/options.js"
import * as Quarantine from "../engine/quarantine.js"
import type { Time } from "../engine/time.js"
import { readMillis } from "./durations.js"
import type { DurationInput } from "./durations.js"
import { InvalidOptions, nodeError } from "./errors.js"
import * as Retry from "./retry.js"
import type * as FrontEnd from "./frontEndTypes.js"

/** The options of a lock manager (each documented in frontEndTypes.ts). */
export interface ManagerOptions extends FrontEnd.ManagerOptionsOf<DurationInput, RetryInput> {}

/**
 * A retry policy (`retry(...)`, `noRetry`), or a Schedule of the Effect
 * packages (read through their `effect-redlock/Promise`, which steps it).
 */
export type RetryInput = Retry.RetryPolicy | EffectSchedule

/** A Schedule of either Effect major, as this module's types name it (they need no `effect`): checked at run time. */
export interface EffectSchedule {
  readonly pipe: (...args: never) => unknown
}

/** How a retry input that carries no plain steps is stepped (the Effect packages step their Schedules); none: refused. */
export type CustomRetry = (input: unknown) => Retry.RetrySteps | undefined

export interface Settings {
  readonly nodes: ReadonlyArray<Node>
  /** How many nodes must agree: floor(N / 2) + 1. */
  readonly quorum: number
  readonly keyPrefix: string
  readonly driftFactor: number
  readonly maxExtensions: number
  readonly fencePrefix: string
  readonly maxTtlMillis: number
  readonly fairHandoff: boolean
  /** How long a restarted node abstains (engine/quarantine.ts); `undefined`: the quarantine is off. */
  readonly quarantineMillis: number | undefined
  /** The per-node timeout of acquisitions that name none (ms); `undefined`: derived from each ttl. */
  readonly defaultNodeTimeoutMillis: number | undefined
  /** Reads have no ttl to derive a timeout from. */
  readonly inspectTimeoutMillis: number
  readonly defaultRetry: Retry.RetrySteps
  /** Whether every node announces releases (waiters then wake on them). */
  readonly announcesReleases: boolean
  /** Keys this manager found held lately: their acquisitions skip the probe. */
  readonly contendedKeys: ContendedKeys
  readonly nodeError: typeof nodeError
  /** Says once, as a warning, that a node's clock jumped; none: the quarantine is off, or nothing is logged. */
  readonly clockJumps: Quarantine.ClockJumpNotices | undefined
  readonly time: Time
  readonly customRetry: CustomRetry | undefined
  /** Set by `close()`: a lock of a closed manager gives no fencing token. */
  readonly lifecycle: { closed: boolean }
}

/** A checked value, or its problem thrown as InvalidOptions. */
export const orThrow = <A>(value: A | Problem): A => {
  if (value instanceof Problem) throw new InvalidOptions(value.option, value.detail)
  return value
}

/** The steps of a retry input, or InvalidOptions. */
export const retrySteps = (option: string, input: unknown, customRetry: CustomRetry | undefined): Retry.RetrySteps => {
  const steps = Retry.stepsOf(input) ?? customRetry?.(input)
  if (steps !== undefined) return steps
  const looksLikeSchedule = typeof input === "object" && input !== null &&
    typeof (input as Partial<EffectSchedule>).pipe === "function"
  throw new InvalidOptions(
    option,
    looksLikeSchedule
      ? "a Schedule built by hand is stepped by the Effect packages' effect-redlock/Promise; here use retry({ delay, times, jitter }) or noRetry"
      : Options.notASchedule(input)
  )
}

/** The manager's options checked, with their defaults; throws InvalidOptions. */
export const make = (
  nodes: ReadonlyArray<Node>,
  options: ManagerOptions,
  time: Time,
  customRetry: CustomRetry | undefined,
  warn?: (line: string) => void
): Settings => {
  if (typeof options !== "object" || options === null) {
    throw new InvalidOptions("options", "expected { keyPrefix, ... }")
  }
  const foreign = Options.nodeRedlockSetting(options)
  if (foreign !== undefined) throw new InvalidOptions(foreign.option, foreign.detail)
  const keyPrefix = orThrow(Options.keyPrefix(options.keyPrefix ?? "redlock:"))
  const driftFactor = orThrow(Options.driftFactor(options.driftFactor ?? Algorithm.defaultDriftFactor))
  const maxExtensions = orThrow(Options.count("maxExtensions", options.maxExtensions ?? 1000))
  const fencePrefix = orThrow(Options.fencePrefix(options.fencePrefix ?? "redlock-fence:", keyPrefix))
  const maxTtlMillis = orThrow(Options.maxTtl(options.maxTtl ?? 30_000, readMillis))
  const fairHandoff = orThrow(Options.flag("fairHandoff", options.fairHandoff ?? true))
  const quarantineMillis = orThrow(Options.flag("restartQuarantine", options.restartQuarantine ?? true))
    ? Quarantine.durationMillis(maxTtlMillis, driftFactor)
    : undefined
  const defaultRetry = options.retry === undefined
    ? Retry.defaultRetry[Retry.RetryStepsId]
    : retrySteps("retry", options.retry, customRetry)
  orThrow(Options.nodeCount(nodes.length))
  const defaultNodeTimeoutMillis = options.nodeTimeout === undefined
    ? undefined
    : orThrow(Options.millis("nodeTimeout", options.nodeTimeout, readMillis))
  return {
    nodes,
    quorum: Algorithm.quorum(nodes.length),
    keyPrefix,
    driftFactor,
    maxExtensions,
    fencePrefix,
    maxTtlMillis,
    fairHandoff,
    quarantineMillis,
    defaultNodeTimeoutMillis,
    // The manager's, or the largest default.
    inspectTimeoutMillis: defaultNodeTimeoutMillis ?? 250,
    defaultRetry,
    announcesReleases: nodes.every((node) => node.watchReleasesNow !== undefined),
    contendedKeys: new ContendedKeys(),
    nodeError,
    clockJumps: quarantineMillis === undefined || warn === undefined
      ? undefined
      : new Quarantine.ClockJumpNotices(quarantineMillis, warn),
    time,
    customRetry,
    lifecycle: { closed: false }
  }
}
