/**
 * The lock manager's settings, validated once by `Redlock.make` and handed to
 * each of its parts (acquisition, release, extension, fencing, inspection).
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import type * as Schedule from "effect/Schedule"
import type * as Lock from "../../Lock.js"
import type { RedisNode } from "../../RedisNode.js"
import type { LockNotAcquired } from "../../RedlockError.js"
import { HeldLock } from "../lock.js"

export interface Settings {
  readonly nodes: ReadonlyArray<RedisNode>
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
}

/** The manager's own state of a lock; a lock of another manager is a programmer error. */
export const held = (settings: Settings, lock: Lock.Lock): HeldLock => {
  if (lock instanceof HeldLock && lock.manager === settings.identity) return lock
  throw new TypeError("effect-redlock: this lock was not acquired by this lock manager")
}
