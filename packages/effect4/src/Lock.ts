/**
 * A held lock: what `Redlock.acquire` gives inside a `Scope`. It is released
 * on every node when the scope closes, whichever way it closes.
 *
 * @since 0.2.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as internal from "./internal/lock.js"
import * as Time from "./internal/monotonic.js"
import type {
  FencingTokenUnavailable,
  InvalidOptions,
  LockLost,
  NodeOutcome,
  ValidityTooShort
} from "./RedlockError.js"

/**
 * @since 0.2.0
 * @category symbols
 */
export const TypeId: "~effect-redlock/Lock" = internal.TypeId

/**
 * @since 0.2.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * A lock held on a quorum of nodes.
 *
 * @since 0.2.0
 * @category models
 */
export interface Lock {
  readonly [TypeId]: TypeId
  /** The resources locked together, as given. */
  readonly resources: ReadonlyArray<string>
  /** Their keys on the nodes (the manager's `keyPrefix` + resource). */
  readonly keys: ReadonlyArray<string>
  /** The random value that marks the keys as this lock's (168 bits from the OS's cryptographic source). */
  readonly value: string
  readonly ttl: Duration.Duration
  /** How long the lock was valid for when granted: ttl − elapsed − clock drift. */
  readonly validity: Duration.Duration
  /** The current validity deadline, in milliseconds on the monotonic timeline of `Clock` (see {@link monotonicMillis}). */
  readonly validUntilMillis: number
  /** How many attempts the acquisition took. */
  readonly attempts: number
  /** How many times it was extended. */
  readonly extensions: number
  /** What each node answered to the attempt that won it. */
  readonly outcomes: ReadonlyArray<NodeOutcome>
  /** The validity left now; zero once it ran out (the lock may be held by another client then). */
  readonly remaining: Effect.Effect<Duration.Duration>
  /**
   * Waits until the lock is lost (its validity ran out, an extension found it
   * taken, or it was released) and succeeds with why. Race the critical
   * section against it to stop work the lock no longer protects.
   */
  readonly lost: Effect.Effect<LockLost>
  /**
   * The lock's fencing token (its first resource's): a number that grows
   * with every holder of the resource, issued once per lock on a majority of
   * the nodes. Hand it to the storage the lock protects, which refuses a
   * write with a token lower than one it has seen (docs/safety.md).
   */
  readonly fencingToken: Effect.Effect<bigint, LockLost | FencingTokenUnavailable>
  /** The tokens of every resource of the lock, in order. */
  readonly fencingTokens: Effect.Effect<ReadonlyArray<bigint>, LockLost | FencingTokenUnavailable>
  /**
   * Run `self` only if at least `minRemaining` of validity is left (and the
   * lock is not lost); otherwise fail without starting it. Use it in front of
   * a side effect that must not start late. A `minRemaining` that is no
   * duration (from JavaScript without types) fails with `InvalidOptions`.
   */
  readonly guard: (
    minRemaining: Duration.Input
  ) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | LockLost | ValidityTooShort | InvalidOptions, R>
}

/**
 * The monotonic time in milliseconds, on the same timeline as `validUntilMillis`.
 *
 * @since 0.2.0
 * @category utils
 */
export const monotonicMillis: Effect.Effect<number> = Time.currentMillis

/**
 * @since 0.2.0
 * @category guards
 */
export const isLock = (u: unknown): u is Lock => typeof u === "object" && u !== null && TypeId in u
