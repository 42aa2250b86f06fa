/**
 * The typed errors of the lock manager.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import {
  ExtensionLimitReached,
  FencingTokenUnavailable,
  InvalidOptions,
  LockLost,
  LockNotAcquired,
  LockNotExtended,
  SelfDeadlock,
  SettingConflict,
  ValidityTooShort
} from "./internal/errors.js"

export {
  /**
   * @since 0.1.0
   * @category errors
   */
  isRedisNodeError,
  /**
   * What one node answered to one operation of a lock (see `RedisNode.NodeOutcome`).
   *
   * @since 0.1.0
   * @category models
   */
  NodeOutcome,
  /**
   * @since 0.1.0
   * @category errors
   */
  RedisNodeError,
  /**
   * Why a node could not carry out an operation (see `RedisNode.RedisNodeErrorReason`).
   *
   * @since 0.1.0
   * @category errors
   */
  RedisNodeErrorReason
} from "./internal/nodes.js"

export {
  /**
   * The lock was extended as often as `maxExtensions` allows. The bound keeps a stuck holder from keeping a
   * resource forever.
   *
   * @since 0.1.0
   * @category errors
   */
  ExtensionLimitReached,
  /**
   * No fencing token could be issued: fewer than a majority of nodes answered in time. The lock itself may
   * still be valid; asking again may succeed.
   *
   * @since 0.1.0
   * @category errors
   */
  FencingTokenUnavailable,
  /**
   * An option or argument is invalid. Raised before any node is contacted.
   *
   * @since 0.1.0
   * @category errors
   */
  InvalidOptions,
  /**
   * The lock is no longer held: work under it must stop. `withLock` interrupts its body and fails with this
   * error when it happens.
   *
   * @since 0.1.0
   * @category errors
   */
  LockLost,
  /**
   * Why a held lock was lost.
   *
   * @since 0.1.0
   * @category errors
   */
  LockLostReason,
  /**
   * The lock could not be acquired within the retry schedule. Carries what every node answered on the last
   * attempt, so the cause is visible: held by another client (`Held`), slow or down nodes (`TimedOut`), or node
   * errors (`Failed`).
   *
   * @since 0.1.0
   * @category errors
   */
  LockNotAcquired,
  /**
   * An extension did not reach a majority of nodes in time (nodes slow, down or failing). The lock is still
   * valid until its deadline; extending again may succeed.
   *
   * @since 0.1.0
   * @category errors
   */
  LockNotExtended,
  /**
   * The promise code's lock manager (`effect-redlock/Promise`) was closed: every call after `close()` rejects
   * with it, as does each acquisition still waiting then (after leaving its lines). Never from the Effect API.
   *
   * @since 0.1.0
   * @category errors
   */
  ManagerClosed,
  /**
   * Why an acquisition attempt failed.
   *
   * @since 0.1.0
   * @category errors
   */
  NotAcquiredReason,
  /**
   * The read-write lock the fiber asked for would wait for its own hold (a write of a resource it reads or
   * writes, a read of one it writes): refused at once.
   *
   * @since 0.1.0
   * @category errors
   */
  SelfDeadlock,
  /**
   * A semaphore's `limit` or a read-write lock's `maxReaders` differs from the one the resource's holders use
   * (recorded on a majority of nodes): refused at once. A new value takes effect once the resource is idle.
   *
   * @since 0.1.0
   * @category errors
   */
  SettingConflict,
  /**
   * A fenced write was refused: the storage has already seen a token at least as large, so a later holder of
   * the lock has written since. The writer lost the lock (it was paused past its validity, say) and must not
   * write.
   *
   * @since 0.1.0
   * @category errors
   */
  StaleFencingToken,
  /**
   * `Lock.guard` refused to start an effect: less validity is left than it needs.
   *
   * @since 0.1.0
   * @category errors
   */
  ValidityTooShort
} from "./internal/errors.js"

/**
 * Every error the lock manager puts in the error channel.
 *
 * @since 0.1.0
 * @category errors
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

/**
 * @since 0.1.0
 * @category guards
 */
export const isRedlockError = (u: unknown): u is RedlockError =>
  Schema.is(InvalidOptions)(u) || Schema.is(LockNotAcquired)(u) || Schema.is(LockLost)(u) ||
  Schema.is(LockNotExtended)(u) || Schema.is(ExtensionLimitReached)(u) || Schema.is(ValidityTooShort)(u) ||
  Schema.is(FencingTokenUnavailable)(u) || Schema.is(SettingConflict)(u) || Schema.is(SelfDeadlock)(u)
