/**
 * A lock manager's options, checked, with their defaults: what every
 * operation of the manager reads.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Algorithm from "@effect-redlock/core/engine/algorithm.js"
import { ContendedKeys } from "@effect-redlock/core/engine/contendedKeys.js"
import type * as Node from "@effect-redlock/core/engine/node.js"
import * as Options from "@effect-redlock/core/engine/options.js"
import * as Quarantine from "@effect-redlock/core/engine/quarantine.js"
import * as StartupNotices from "@effect-redlock/core/engine/startupNotices.js"
import type { Options as ManagerOptions } from "../../Redlock.js"
import type { InvalidOptions } from "../errors.js"
import { nodeError } from "../nodes.js"
import * as Retry from "../retry.js"
import * as Time from "../monotonic.js"
import * as Validate from "../validate.js"

export interface Settings {
  readonly nodes: ReadonlyArray<Node.Node>
  /** How many nodes must agree: floor(N / 2) + 1. */
  readonly quorum: number
  readonly keyPrefix: string
  /** Prefix of the fencing counters (one per resource, kept without expiry). */
  readonly fencePrefix: string
  readonly driftFactor: number
  readonly maxTtlMillis: number
  /** How many times one lock may be extended. */
  readonly maxExtensions: number
  readonly fairHandoff: boolean
  /** How long a restarted node abstains; `undefined`: the quarantine is off. */
  readonly quarantineMillis: number | undefined
  /** The manager's node timeout; `undefined`: derived from each acquisition's ttl. */
  readonly nodeTimeoutMillis: number | undefined
  /** Reads have no ttl to derive a timeout from: the manager's, or the largest default. */
  readonly inspectTimeoutMillis: number
  readonly retry: Retry.RetrySchedule
  /** Whether every node announces releases (waiters then wake on them). */
  readonly announcesReleases: boolean
  readonly contendedKeys: ContendedKeys
  readonly nodeError: typeof nodeError
  /** Says once, as a warning, that a node's clock jumped; none: the quarantine is off. */
  readonly clockJumps: Quarantine.ClockJumpNotices | undefined
  /** Marks the locks of this manager. */
  readonly identity: object
}

/** The reference's retryDelay 200 ms, jittered between half and all of it, three retries. */
export const defaultRetry: Retry.RetrySchedule = Retry.makeOrThrow({
  delay: "200 millis",
  times: 3,
  jitter: { min: 0.5, max: 1 }
})

export const make = (
  nodes: ReadonlyArray<Node.Node>,
  options: ManagerOptions
): Effect.Effect<Settings, InvalidOptions> =>
  Effect.gen(function*() {
    const foreign = Options.nodeRedlockSetting(options)
    if (foreign !== undefined) return yield* Validate.invalid(foreign.option, foreign.detail)
    const keyPrefix = yield* Validate.check(Options.keyPrefix(options.keyPrefix ?? "redlock:"))
    const fencePrefix = yield* Validate.check(Options.fencePrefix(options.fencePrefix ?? "redlock-fence:", keyPrefix))
    const driftFactor = yield* Validate.check(Options.driftFactor(options.driftFactor ?? Algorithm.defaultDriftFactor))
    const maxTtlMillis = yield* Validate.check(Options.maxTtl(options.maxTtl ?? "30 seconds", Validate.readMillis))
    const maxExtensions = yield* Validate.check(Options.count("maxExtensions", options.maxExtensions ?? 1000))
    const fairHandoff = yield* Validate.check(Options.flag("fairHandoff", options.fairHandoff ?? true))
    const quarantine = yield* Validate.check(Options.flag("restartQuarantine", options.restartQuarantine ?? true))
    const retry = options.retry ?? defaultRetry
    if (!Schedule.isSchedule(retry)) return yield* Validate.invalid("retry", Options.notASchedule(retry))
    yield* Validate.check(Options.nodeCount(nodes.length))
    const nodeTimeoutMillis = options.nodeTimeout === undefined
      ? undefined
      : yield* Validate.check(Options.millis("nodeTimeout", options.nodeTimeout, Validate.readMillis))
    const quarantineMillis = quarantine ? Quarantine.durationMillis(maxTtlMillis, driftFactor) : undefined
    yield* announceAtStart(nodes, quarantineMillis)
    // Said from plain code, with the loggers of the fiber that made the manager (as the notices at start).
    const context = yield* Effect.context<never>()
    const clockJumps = quarantineMillis === undefined
      ? undefined
      : new Quarantine.ClockJumpNotices(
        quarantineMillis,
        (line) => Effect.runSyncWith(context)(Effect.logWarning(line))
      )
    return {
      nodes,
      quorum: Algorithm.quorum(nodes.length),
      keyPrefix,
      fencePrefix,
      driftFactor,
      maxTtlMillis,
      maxExtensions,
      fairHandoff,
      quarantineMillis,
      nodeTimeoutMillis,
      inspectTimeoutMillis: nodeTimeoutMillis ?? 250,
      retry,
      announcesReleases: nodes.every((node) => node.watchReleasesNow !== undefined),
      contendedKeys: new ContendedKeys(),
      nodeError,
      clockJumps,
      identity: {}
    }
  })

/** Log once what the nodes need said at start (engine/startupNotices.ts; the quarantine may be off: `undefined`). */
const announceAtStart = (nodes: ReadonlyArray<Node.Node>, quarantineMillis: number | undefined): Effect.Effect<void> =>
  Effect.clockWith((clock) =>
    Effect.forEach(
      StartupNotices.atStart(nodes, Algorithm.quorum(nodes.length), quarantineMillis, Time.monotonicMillis(clock)),
      (notice) => Effect.logWarning(notice),
      { discard: true }
    )
  )
