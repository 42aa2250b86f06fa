/**
 * The typed errors of the lock manager.
 *
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"
import { NodeOutcome } from "./RedisNode.js"

export {
  /**
   * @since 1.0.0
   * @category errors
   */
  isRedisNodeError,
  /**
   * @since 1.0.0
   * @category errors
   */
  RedisNodeError
} from "./RedisNode.js"

/**
 * An option or argument is invalid. Raised before any node is contacted.
 *
 * @since 1.0.0
 * @category errors
 */
export class InvalidOptions extends Schema.TaggedError<InvalidOptions>("effect-redlock/InvalidOptions")(
  "InvalidOptions",
  {
    option: Schema.String,
    detail: Schema.String
  }
) {
  /**
   * @since 1.0.0
   */
  override get message(): string {
    return `invalid option "${this.option}": ${this.detail}`
  }
}

/**
 * Why an acquisition attempt failed.
 * - `NoQuorum`: fewer than a majority of nodes granted the lock.
 * - `ValidityExpired`: a majority granted it, but the attempt took so long
 *   that no validity was left (ttl - elapsed - drift <= 0).
 *
 * @since 1.0.0
 * @category errors
 */
export const NotAcquiredReason = Schema.Literal("NoQuorum", "ValidityExpired")

/**
 * The lock could not be acquired within the retry schedule. Carries what every
 * node answered on the last attempt, so the cause is visible: held by another
 * client (`Held`), slow or down nodes (`TimedOut`), or node errors (`Failed`).
 *
 * @since 1.0.0
 * @category errors
 */
export class LockNotAcquired extends Schema.TaggedError<LockNotAcquired>("effect-redlock/LockNotAcquired")(
  "LockNotAcquired",
  {
    resources: Schema.Array(Schema.String),
    reason: NotAcquiredReason,
    /** Attempts made, including the last one. */
    attempts: Schema.Number,
    /** Time from the start of the first attempt to the end of the last one. */
    elapsedMillis: Schema.Number,
    /** How many nodes had to agree. */
    quorum: Schema.Number,
    /** What each node answered on the last attempt. */
    outcomes: Schema.Array(NodeOutcome)
  }
) {
  /**
   * @since 1.0.0
   */
  override get message(): string {
    const answered = this.outcomes.map((outcome) =>
      outcome._tag === "Failed"
        ? `${outcome.node}=Failed(${outcome.error.reason}: ${outcome.error.detail})`
        : `${outcome.node}=${outcome._tag}`
    ).join(", ")
    const why = this.reason === "NoQuorum"
      ? `fewer than ${this.quorum} of ${this.outcomes.length} nodes granted it`
      : "a quorum granted it but no validity was left; raise ttl or lower nodeTimeout"
    return `lock on ${this.resources.join(", ")} not acquired after ${this.attempts} attempt(s) ` +
      `in ${Math.round(this.elapsedMillis)} ms: ${why} (last attempt: ${answered})`
  }
}

/**
 * Every error the lock manager puts in the error channel.
 *
 * @since 1.0.0
 * @category errors
 */
export type RedlockError = InvalidOptions | LockNotAcquired

/**
 * @since 1.0.0
 * @category guards
 */
export const isRedlockError = (u: unknown): u is RedlockError =>
  Schema.is(InvalidOptions)(u) || Schema.is(LockNotAcquired)(u)
