/**
 * The value of a held lock.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { NonEmptyReadonlyArray } from "effect/Array"
import * as internal from "./internal/lock.js"
import * as Monotonic from "./internal/monotonic.js"
import type { NodeOutcome } from "./RedisNode.js"
import type { FencingTokenUnavailable, InvalidOptions, LockLost, ValidityTooShort } from "./RedlockError.js"

/**
 * @since 0.1.0
 * @category type ids
 */
export const TypeId: unique symbol = internal.TypeId

/**
 * @since 0.1.0
 * @category type ids
 */
export type TypeId = typeof TypeId

/**
 * A lock held on a quorum of nodes. It is only valid until its validity
 * deadline: work protected by it must finish before {@link Lock.remaining}
 * reaches zero, since the keys expire on the nodes on their own. Extensions
 * (by hand or automatic) move the deadline.
 *
 * @since 0.1.0
 * @category models
 */
export interface Lock {
  readonly [TypeId]: TypeId
  /** The resources, as given to `acquire`. */
  readonly resources: NonEmptyReadonlyArray<string>
  /** The Redis keys: the resources with the manager's key prefix. */
  readonly keys: NonEmptyReadonlyArray<string>
  /** The random value that identifies this acquisition on every node. */
  readonly value: string
  /** The time to live set on the keys. */
  readonly ttl: Duration.Duration
  /** The validity at acquisition: ttl minus the attempt's duration and the clock drift allowance. */
  readonly validity: Duration.Duration
  /** The current validity deadline, in milliseconds on the monotonic timeline of `Clock.currentTimeNanos`. */
  readonly validUntilMillis: number
  /** Attempts it took to acquire, including the successful one. */
  readonly attempts: number
  /** Successful extensions so far. */
  readonly extensions: number
  /** What each node answered on the successful attempt. */
  readonly outcomes: ReadonlyArray<NodeOutcome>
  /** The validity left now; zero once the deadline has passed. */
  readonly remaining: Effect.Effect<Duration.Duration>
  /**
   * Completes when the lock is lost: its deadline passed without an
   * extension, nodes said it is no longer ours, or it was released. Loss is
   * decided by the deadline on this process's clock, so it is detected even
   * when every node hangs.
   */
  readonly lost: Effect.Effect<LockLost>
  /**
   * The fencing token of the first resource: a number greater than the token
   * of every earlier holder of that resource, empty restarts of nodes
   * included, as long as the restart quarantine is on and the nodes' clocks
   * agree within `maxTtl` (docs/safety.md, "Fencing tokens"). It reads like a time in
   * microseconds. Pass it to the storage the lock protects, which must
   * reject a write with a token smaller than one it has seen. Issued on first
   * use (two round trips to the nodes), then the same for this lock.
   */
  readonly fencingToken: Effect.Effect<bigint, LockLost | FencingTokenUnavailable>
  /** One fencing token per resource, in the order of `resources`. */
  readonly fencingTokens: Effect.Effect<ReadonlyArray<bigint>, LockLost | FencingTokenUnavailable>
  /**
   * Run `self` only if at least `minRemaining` of validity is left (and the
   * lock is not lost); otherwise fail without starting it. Use it in front of
   * a side effect that must not start late. A `minRemaining` that is no
   * duration (from JavaScript without types) fails with `InvalidOptions`.
   */
  readonly guard: (
    minRemaining: Duration.DurationInput
  ) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | LockLost | ValidityTooShort | InvalidOptions, R>
}

/**
 * The monotonic time in milliseconds, on the same timeline as `validUntilMillis`.
 *
 * @since 0.1.0
 * @category utils
 */
export const monotonicMillis: Effect.Effect<number> = Monotonic.monotonicMillis

/**
 * @since 0.1.0
 * @category guards
 */
export const isLock = (u: unknown): u is Lock => typeof u === "object" && u !== null && TypeId in u
