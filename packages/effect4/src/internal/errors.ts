/**
 * The errors of the lock manager (re-exported by the public `RedlockError`
 * module, where each is documented for users).
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import * as Messages from "@effect-redlock/core/engine/messages.js"
import { recognisePlain } from "@effect-redlock/core/manager/errors.js"
import { NodeOutcome } from "./nodes.js"

/**
 * An option is out of range or of the wrong type; `option` names it and
 * `detail` says what is expected. Nothing was sent to any node.
 */
export class InvalidOptions extends Schema.TaggedError<InvalidOptions>("effect-redlock/InvalidOptions")(
  "InvalidOptions",
  {
    option: Schema.String,
    detail: Schema.String
  }
) {
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return Messages.invalidOptions(this.option, this.detail)
  }
}

/**
 * Why a lock was not acquired: `Held` (another client holds it on so many
 * nodes that no quorum was possible), `NotYourTurn` (others wait for it
 * ahead of this client), `NoQuorum` (nodes failed, timed out or abstained),
 * `ValidityExpired` (a quorum granted it, too late to be of use).
 */
export const NotAcquiredReason = Schema.Literals(["Held", "NotYourTurn", "NoQuorum", "ValidityExpired"])

/**
 * The lock was not acquired within its retry schedule. Every key the
 * attempts may have set was released.
 */
export class LockNotAcquired extends Schema.TaggedError<LockNotAcquired>("effect-redlock/LockNotAcquired")(
  "LockNotAcquired",
  {
    resources: Schema.Array(Schema.String),
    reason: NotAcquiredReason,
    attempts: Schema.Number,
    elapsedMillis: Schema.Number,
    quorum: Schema.Number,
    /** The last attempt's outcome on each node. */
    outcomes: Schema.Array(NodeOutcome)
  }
) {
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return Messages.notAcquired(this)
  }
}

/**
 * Why a held lock was lost: `Expired` (its validity ran out), `NotHeld` (a
 * majority of nodes no longer hold it for us), `Released`.
 */
export const LockLostReason = Schema.Literals(["Expired", "NotHeld", "Released"])

/**
 * The lock is no longer held: the critical section is no longer protected.
 */
export class LockLost extends Schema.TaggedError<LockLost>("effect-redlock/LockLost")("LockLost", {
  resources: Schema.Array(Schema.String),
  reason: LockLostReason,
  outcomes: Schema.Array(NodeOutcome)
}) {
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return Messages.lost(this.resources, this.reason)
  }
}

/**
 * An extension was not confirmed by a majority of nodes in time; the lock may
 * still be held until its current validity ends.
 */
export class LockNotExtended extends Schema.TaggedError<LockNotExtended>("effect-redlock/LockNotExtended")(
  "LockNotExtended",
  {
    resources: Schema.Array(Schema.String),
    outcomes: Schema.Array(NodeOutcome)
  }
) {
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return Messages.notExtended(this.resources, this.outcomes)
  }
}

/**
 * A lock was extended as many times as the manager's `maxExtensions` allows.
 */
export class ExtensionLimitReached
  extends Schema.TaggedError<ExtensionLimitReached>("effect-redlock/ExtensionLimitReached")("ExtensionLimitReached", {
    resources: Schema.Array(Schema.String),
    maxExtensions: Schema.Number
  })
{
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return Messages.extensionLimitReached(this.resources, this.maxExtensions)
  }
}

/**
 * A semaphore's `limit` or a read-write lock's `maxReaders` differs from the
 * one the resource's current holders use, as recorded on a majority of nodes:
 * the acquisition was refused at once (no retry), since holders under two
 * settings could exceed either. The record goes with the resource's last
 * holder on each node (or expires within twice its ttl): a new value takes effect
 * once the resource is idle.
 */
export class SettingConflict
  extends Schema.TaggedError<SettingConflict>("effect-redlock/SettingConflict")("SettingConflict", {
    resource: Schema.String,
    setting: Schema.Literals(["limit", "maxReaders"]),
    requested: Schema.Number,
    recorded: Schema.Number
  })
{
  /**
   * @since 0.2.0
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
 */
export class SelfDeadlock extends Schema.TaggedError<SelfDeadlock>("effect-redlock/SelfDeadlock")("SelfDeadlock", {
  resource: Schema.String,
  held: Schema.Literals(["read", "write"]),
  requested: Schema.Literals(["read", "write"])
}) {
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return Messages.selfDeadlock(this)
  }
}

/**
 * No fencing token could be issued: fewer than a majority of nodes answered
 * (the lock may still be held; try again, or treat the write as unfenced).
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
   * @since 0.2.0
   */
  override get message(): string {
    return Messages.fencingTokenUnavailable(this.resources, this.outcomes)
  }
}

/**
 * A fenced write was refused: the storage has already seen a larger token,
 * so a later holder of the lock has written since. The writer lost the lock
 * (it was paused past its validity, say) and must not write.
 */
export class StaleFencingToken extends Schema.TaggedError<StaleFencingToken>("effect-redlock/StaleFencingToken")(
  "StaleFencingToken",
  {
    key: Schema.String,
    token: Schema.BigInt,
    highestSeen: Schema.BigInt
  }
) {
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return Messages.staleFencingToken(this.key, this.token, this.highestSeen)
  }
}

/**
 * `Lock.guard` refused to start an effect: less validity is left than it needs.
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
   * @since 0.2.0
   */
  override get message(): string {
    return Messages.validityTooShort(this.resources, this.remainingMillis, this.requiredMillis)
  }
}

/**
 * The promise code's lock manager (`effect-redlock/Promise`) was closed:
 * every call made after `close()` rejects with it at once, as does each
 * acquisition still waiting when it was called (after leaving its lines).
 * The Effect API never fails with it: its manager ends with its scope.
 */
export class ManagerClosed
  extends Schema.TaggedError<ManagerClosed>("effect-redlock/ManagerClosed")("ManagerClosed", {})
{
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return Messages.managerClosed
  }
}

/**
 * Every error a lock operation fails with.
 */
export type RedlockError =
  | InvalidOptions
  | LockNotAcquired
  | LockLost
  | LockNotExtended
  | ExtensionLimitReached
  | ValidityTooShort
  | FencingTokenUnavailable
  | SettingConflict
  | SelfDeadlock

export const isRedlockError = (u: unknown): u is RedlockError =>
  u instanceof InvalidOptions || u instanceof LockNotAcquired || u instanceof LockLost ||
  u instanceof LockNotExtended ||
  u instanceof ExtensionLimitReached || u instanceof ValidityTooShort || u instanceof FencingTokenUnavailable ||
  u instanceof SettingConflict || u instanceof SelfDeadlock

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
