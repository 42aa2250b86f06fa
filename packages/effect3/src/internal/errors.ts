/**
 * The typed errors of the lock manager, defined here so that the engine's
 * modules use them without importing the public `RedlockError` module, which
 * re-exports them.
 *
 * The library builds them with Schema validation off (the constructor's second
 * argument): their fields come from values that are already typed, and
 * validating outcomes on every release or failed attempt costs more than the
 * Redis round trip.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import { NodeOutcome } from "./nodes.js"
import * as Messages from "@effect-redlock/core/engine/messages.js"
import { recognisePlain } from "@effect-redlock/core/manager/errors.js"

/**
 * An option or argument is invalid. Raised before any node is contacted.
 *
 * @since 0.1.0
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
   * @since 0.1.0
   */
  override get message(): string {
    return Messages.invalidOptions(this.option, this.detail)
  }
}

/**
 * Why an acquisition attempt failed.
 * - `Held`: the resource is taken: another client holds it on so many nodes
 *   that no majority was possible without them.
 * - `NotYourTurn`: the resource is taken or waited for: with the nodes where
 *   a waiter ahead in line comes first, no majority was possible.
 * - `NoQuorum`: fewer than a majority of nodes granted the lock, because
 *   nodes failed, timed out or abstained (see `outcomes`).
 * - `ValidityExpired`: a majority granted it, but the attempt took so long
 *   that no validity was left (ttl - elapsed - drift <= 0).
 *
 * @since 0.1.0
 * @category errors
 */
export const NotAcquiredReason = Schema.Literal("Held", "NotYourTurn", "NoQuorum", "ValidityExpired")

/**
 * The lock could not be acquired within the retry schedule. Carries what every
 * node answered on the last attempt, so the cause is visible: held by another
 * client (`Held`), slow or down nodes (`TimedOut`), or node errors (`Failed`).
 *
 * @since 0.1.0
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
   * @since 0.1.0
   */
  override get message(): string {
    return Messages.notAcquired(this)
  }
}

/**
 * Why a held lock was lost.
 * - `Expired`: its validity deadline passed without a successful extension
 *   (including when a timer fired late, after a pause of the process).
 * - `NotHeld`: a majority of nodes say its keys are no longer ours (they
 *   expired, or another client took them after they expired).
 * - `Released`: it was released.
 *
 * @since 0.1.0
 * @category errors
 */
export const LockLostReason = Schema.Literal("Expired", "NotHeld", "Released")

/**
 * The lock is no longer held: work under it must stop. `withLock` interrupts
 * its body and fails with this error when it happens.
 *
 * @since 0.1.0
 * @category errors
 */
export class LockLost extends Schema.TaggedError<LockLost>("effect-redlock/LockLost")("LockLost", {
  resources: Schema.Array(Schema.String),
  reason: LockLostReason,
  /** What each node answered, when nodes were asked. */
  outcomes: Schema.Array(NodeOutcome)
}) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return Messages.lost(this.resources, this.reason)
  }
}

/**
 * An extension did not reach a majority of nodes in time (nodes slow, down
 * or failing). The lock is still valid until its deadline; extending again
 * may succeed.
 *
 * @since 0.1.0
 * @category errors
 */
export class LockNotExtended extends Schema.TaggedError<LockNotExtended>("effect-redlock/LockNotExtended")(
  "LockNotExtended",
  {
    resources: Schema.Array(Schema.String),
    outcomes: Schema.Array(NodeOutcome)
  }
) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return Messages.notExtended(this.resources, this.outcomes)
  }
}

/**
 * The lock was extended as often as `maxExtensions` allows. The bound keeps
 * a stuck holder from keeping a resource forever.
 *
 * @since 0.1.0
 * @category errors
 */
export class ExtensionLimitReached
  extends Schema.TaggedError<ExtensionLimitReached>("effect-redlock/ExtensionLimitReached")("ExtensionLimitReached", {
    resources: Schema.Array(Schema.String),
    maxExtensions: Schema.Number
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return Messages.extensionLimitReached(this.resources, this.maxExtensions)
  }
}

/**
 * A semaphore's `limit` or a read-write lock's `maxReaders` differs from the
 * one the resource's current holders use, as recorded on a majority of nodes:
 * the acquisition was refused at once (no retry), since holders under two
 * settings could exceed either (more permits than a limit; a writer beside a
 * reader whose slot it does not know). The record goes with the resource's
 * last holder on each node (or expires within twice its ttl): a new value takes effect
 * once the resource is idle.
 *
 * @since 0.1.0
 * @category errors
 */
export class SettingConflict
  extends Schema.TaggedError<SettingConflict>("effect-redlock/SettingConflict")("SettingConflict", {
    resource: Schema.String,
    setting: Schema.Literal("limit", "maxReaders"),
    requested: Schema.Number,
    recorded: Schema.Number
  })
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return Messages.settingConflict(this)
  }
}

/**
 * The fiber (or one of its parents) holds the read-write lock it asked for
 * in a way the acquisition would wait for forever: a write of a resource it
 * holds for reading (a read cannot be upgraded) or for writing, or a read of
 * one it holds for writing. Refused at once instead of waiting for itself.
 * (Another read of a resource it reads is acquired ahead of the line.)
 *
 * @since 0.1.0
 * @category errors
 */
export class SelfDeadlock extends Schema.TaggedError<SelfDeadlock>("effect-redlock/SelfDeadlock")("SelfDeadlock", {
  resource: Schema.String,
  held: Schema.Literal("read", "write"),
  requested: Schema.Literal("read", "write")
}) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return Messages.selfDeadlock(this)
  }
}

/**
 * The lock manager of promise code (`effect-redlock/Promise`) was closed:
 * every call made after `close()` rejects with it at once, as does each
 * acquisition still waiting when it was called (after leaving its lines).
 * The Effect API never fails with it: its manager ends with its scope.
 *
 * @since 0.1.0
 * @category errors
 */
export class ManagerClosed
  extends Schema.TaggedError<ManagerClosed>("effect-redlock/ManagerClosed")("ManagerClosed", {})
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return Messages.managerClosed
  }
}

/**
 * No fencing token could be issued: fewer than a majority of nodes answered
 * in time. The lock itself may still be valid; asking again may succeed.
 *
 * @since 0.1.0
 * @category errors
 */
export class FencingTokenUnavailable
  extends Schema.TaggedError<FencingTokenUnavailable>("effect-redlock/FencingTokenUnavailable")(
    "FencingTokenUnavailable",
    {
      resources: Schema.Array(Schema.String),
      outcomes: Schema.Array(NodeOutcome)
    }
  )
{
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return Messages.fencingTokenUnavailable(this.resources, this.outcomes)
  }
}

/**
 * A fenced write was refused: the storage has already seen a token at least
 * as large, so a later holder of the lock has written since. The writer lost
 * the lock (it was paused past its validity, say) and must not write.
 *
 * @since 0.1.0
 * @category errors
 */
export class StaleFencingToken extends Schema.TaggedError<StaleFencingToken>("effect-redlock/StaleFencingToken")(
  "StaleFencingToken",
  {
    key: Schema.String,
    token: Schema.BigIntFromSelf,
    highestSeen: Schema.BigIntFromSelf
  }
) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return Messages.staleFencingToken(this.key, this.token, this.highestSeen)
  }
}

/**
 * `Lock.guard` refused to start an effect: less validity is left than it needs.
 *
 * @since 0.1.0
 * @category errors
 */
export class ValidityTooShort extends Schema.TaggedError<ValidityTooShort>("effect-redlock/ValidityTooShort")(
  "ValidityTooShort",
  {
    resources: Schema.Array(Schema.String),
    remainingMillis: Schema.Number,
    requiredMillis: Schema.Number
  }
) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return Messages.validityTooShort(this.resources, this.remainingMillis, this.requiredMillis)
  }
}

// The promise API (effect-redlock/Promise) rejects with core's plain errors of the same names.
for (
  const [errorClass, tag] of [
    [InvalidOptions, "InvalidOptions"],
    [LockNotAcquired, "LockNotAcquired"],
    [LockLost, "LockLost"],
    [LockNotExtended, "LockNotExtended"],
    [ExtensionLimitReached, "ExtensionLimitReached"],
    [SettingConflict, "SettingConflict"],
    [ManagerClosed, "ManagerClosed"],
    [FencingTokenUnavailable, "FencingTokenUnavailable"]
  ] as const
) recognisePlain(errorClass, tag)
