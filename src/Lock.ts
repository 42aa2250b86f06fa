/**
 * The value of a held lock.
 *
 * @since 1.0.0
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Array from "effect/Array"
import type { NodeOutcome } from "./RedisNode.js"

/**
 * @since 1.0.0
 * @category type ids
 */
export const TypeId: unique symbol = Symbol.for("effect-redlock/Lock")

/**
 * @since 1.0.0
 * @category type ids
 */
export type TypeId = typeof TypeId

/**
 * A lock held on a quorum of nodes. It is only valid until its validity
 * deadline: work protected by it must finish before {@link Lock.remaining}
 * reaches zero, since the keys expire on the nodes on their own.
 *
 * @since 1.0.0
 * @category models
 */
export interface Lock {
  readonly [TypeId]: TypeId
  /** The resources, as given to `acquire`. */
  readonly resources: Array.NonEmptyReadonlyArray<string>
  /** The Redis keys: the resources with the manager's key prefix. */
  readonly keys: Array.NonEmptyReadonlyArray<string>
  /** The random value that identifies this acquisition on every node. */
  readonly value: string
  /** The time to live set on the keys. */
  readonly ttl: Duration.Duration
  /** The validity at acquisition: ttl minus the attempt's duration and the clock drift allowance. */
  readonly validity: Duration.Duration
  /** The validity deadline, in milliseconds on the monotonic timeline of `Clock.currentTimeNanos`. */
  readonly validUntilMillis: number
  /** Attempts it took to acquire, including the successful one. */
  readonly attempts: number
  /** What each node answered on the successful attempt. */
  readonly outcomes: ReadonlyArray<NodeOutcome>
  /** The validity left now; zero once the deadline has passed. */
  readonly remaining: Effect.Effect<Duration.Duration>
}

/**
 * The monotonic time in milliseconds, on the same timeline as `validUntilMillis`.
 *
 * @since 1.0.0
 * @category utils
 */
export const monotonicMillis: Effect.Effect<number> = Effect.map(Clock.currentTimeNanos, (nanos) => Number(nanos) / 1e6)

/**
 * @since 1.0.0
 * @category constructors
 */
export const make = (fields: Omit<Lock, TypeId | "remaining">): Lock => ({
  [TypeId]: TypeId,
  ...fields,
  remaining: Effect.map(monotonicMillis, (now) => Duration.millis(Math.max(0, fields.validUntilMillis - now)))
})

/**
 * @since 1.0.0
 * @category guards
 */
export const isLock = (u: unknown): u is Lock => typeof u === "object" && u !== null && TypeId in u
