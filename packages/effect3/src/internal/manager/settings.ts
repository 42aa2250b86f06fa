/**
 * The lock manager's settings, validated once by `Redlock.make` and handed to
 * each of its parts (acquisition, release, extension, fencing, inspection).
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import type * as Schedule from "effect/Schedule"
import type * as Lock from "../../Lock.js"
import type * as Engine from "@effect-redlock/core/engine/node.js"
import type { RedisNode } from "../../RedisNode.js"
import type { Options, RetrySchedule } from "../../Redlock.js"
import type { LockNotAcquired } from "../../RedlockError.js"
import * as Algorithm from "@effect-redlock/core/engine/algorithm.js"
import type { InvalidOptions } from "../errors.js"
import { HeldLock } from "../lock.js"
import * as FanOut from "../fanOut.js"
import { ContendedKeys } from "@effect-redlock/core/engine/contendedKeys.js"
import { RedisNodes } from "../nodes.js"
import * as EngineOptions from "@effect-redlock/core/engine/options.js"
import * as Quarantine from "@effect-redlock/core/engine/quarantine.js"
import * as StartupNotices from "@effect-redlock/core/engine/startupNotices.js"
import * as Monotonic from "../monotonic.js"
import * as Retry from "../retry.js"
import * as Validate from "../validate.js"

export interface Settings {
  /** The nodes as the engine talks to them (nodes.ts `withPromises`). */
  readonly nodes: ReadonlyArray<Engine.Node>
  /** The nodes as provided (`Redlock.nodes`). */
  readonly redisNodes: ReadonlyArray<RedisNode>
  /** How many nodes must agree: floor(N / 2) + 1. */
  readonly quorum: number
  readonly keyPrefix: string
  readonly driftFactor: number
  readonly maxExtensions: number
  readonly fencePrefix: string
  readonly maxTtlMillis: number
  readonly fairHandoff: boolean
  /** How long a restarted node abstains (see quarantine.ts); `undefined`: the quarantine is off. */
  readonly quarantineMillis: number | undefined
  /** The per-node timeout of acquisitions that name none; `undefined`: derived from each ttl. */
  readonly defaultNodeTimeout: Duration.DurationInput | undefined
  /** Reads have no ttl to derive a timeout from. */
  readonly inspectTimeout: Duration.Duration
  readonly defaultSchedule: Schedule.Schedule<unknown, LockNotAcquired>
  /** Whether every node announces releases (waiters then wake on them). */
  readonly announcesReleases: boolean
  /** Marks the locks of this manager (a field, cheaper than a WeakSet on every acquire). */
  readonly identity: object
  /** Keys this manager found held lately: their acquisitions skip the probe. */
  readonly contendedKeys: ContendedKeys
  /** A node's failure as a RedisNodeError (what the engine's fan-outs record). */
  readonly nodeError: typeof FanOut.nodeError
  /** Says once, as a warning, that a node's clock jumped; none: the quarantine is off. */
  readonly clockJumps: Quarantine.ClockJumpNotices | undefined
}

/** `Redlock.defaultRetry` (documented there): the reference's retryDelay 200 ms, jittered between half and all of it. */
export const defaultRetry: RetrySchedule = Retry.unsafeMake({
  delay: "200 millis",
  times: 3,
  jitter: { min: 0.5, max: 1 }
})

/** The manager's options validated, with their defaults (see `Redlock.Options`). */
export const make = (
  nodes: ReadonlyArray<RedisNode>,
  options: Options
): Effect.Effect<Settings, InvalidOptions> =>
  Effect.gen(function*() {
    const foreign = EngineOptions.nodeRedlockSetting(options)
    if (foreign !== undefined) return yield* Validate.invalid(foreign.option, foreign.detail)
    const keyPrefix = yield* Validate.keyPrefix(options.keyPrefix ?? "redlock:")
    const driftFactor = yield* Validate.driftFactor(options.driftFactor ?? Algorithm.defaultDriftFactor)
    const maxExtensions = yield* Validate.count("maxExtensions", options.maxExtensions ?? 1000)
    const fencePrefix = yield* Validate.fencePrefix(options.fencePrefix ?? "redlock-fence:", keyPrefix)
    const maxTtlMillis = yield* Validate.maxTtl(options.maxTtl ?? "30 seconds")
    const fairHandoff = yield* Validate.flag("fairHandoff", options.fairHandoff ?? true)
    const quarantineMillis = (yield* Validate.flag("restartQuarantine", options.restartQuarantine ?? true))
      ? Quarantine.durationMillis(maxTtlMillis, driftFactor)
      : undefined
    const defaultSchedule = options.retry === undefined
      ? defaultRetry
      : yield* Validate.schedule("retry", options.retry)
    yield* Validate.nodeCount(nodes.length)
    const defaultNodeTimeout = options.nodeTimeout
    // Reads have no ttl to derive a timeout from: the manager's, or the largest default.
    const inspectTimeout = Duration.millis(
      defaultNodeTimeout === undefined ? 250 : yield* Validate.millis("nodeTimeout", defaultNodeTimeout)
    )
    // Said from plain code, with the loggers of the fiber that made the manager (as the notices at start).
    const runtime = yield* Effect.runtime<never>()
    const clockJumps = quarantineMillis === undefined
      ? undefined
      : new Quarantine.ClockJumpNotices(quarantineMillis, (line) => Runtime.runSync(runtime)(Effect.logWarning(line)))
    return {
      nodes,
      redisNodes: nodes,
      quorum: Algorithm.quorum(nodes.length),
      keyPrefix,
      driftFactor,
      maxExtensions,
      fencePrefix,
      maxTtlMillis,
      fairHandoff,
      quarantineMillis,
      defaultNodeTimeout,
      inspectTimeout,
      defaultSchedule,
      announcesReleases: nodes.every((node) => node.watchReleasesNow !== undefined),
      identity: {},
      contendedKeys: new ContendedKeys(),
      nodeError: FanOut.nodeError,
      clockJumps
    }
  })

/**
 * The settings of a manager over the nodes in context, announcing at start
 * what its nodes need said (startupNotices.ts): what `Redlock.make` and
 * the promise facade's `makeRedlock` both begin with.
 */
export const fromContext = (options: Options): Effect.Effect<Settings, InvalidOptions, RedisNodes> =>
  Effect.flatMap(
    RedisNodes,
    (nodes) =>
      Effect.tap(make(nodes, options), (settings) => announceAtStart(nodes, settings.quorum, settings.quarantineMillis))
  )

/** Log once what the nodes need said at start (engine/startupNotices.ts; the quarantine may be off: `undefined`). */
const announceAtStart = (
  nodes: ReadonlyArray<RedisNode>,
  quorum: number,
  quarantineMillis: number | undefined
): Effect.Effect<void> =>
  Effect.flatMap(
    Monotonic.monotonicMillis,
    (now) =>
      Effect.forEach(StartupNotices.atStart(nodes, quorum, quarantineMillis, now), (notice) =>
        Effect.logWarning(notice), {
        discard: true
      })
  )

/** The manager's own state of a lock; a lock of another manager is a programmer error. */
export const held = (settings: Settings, lock: Lock.Lock): HeldLock => {
  if (lock instanceof HeldLock && lock.manager === settings.identity) return lock
  throw new TypeError("effect-redlock: this lock was not acquired by this lock manager")
}
