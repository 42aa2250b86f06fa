/**
 * The errors of the lock manager, as `Schema.TaggedError` classes: each says
 * what happened in words (`message`) and carries what a program needs to act
 * on it (which nodes answered what, how long it took).
 *
 * @since 0.2.0
 */
export {
  /**
   * @since 0.2.0
   * @category guards
   */
  isRedisNodeError,
  /**
   * What one node answered to one operation of a lock.
   *
   * - `Ok`: the node did it (acquired, released, extended every key).
   * - `Held`: another value holds a key (acquire), or a key is no longer ours
   *   (release, extend).
   * - `TimedOut`: no answer within the per-node timeout.
   * - `Failed`: the node answered with an error.
   * - `NotAwaited`: the operation was decided by the other nodes before this one
   *   answered, so its answer was not waited for.
   * - `Abstained`: the node did it, but its vote does not count: it restarted
   *   (and may have lost keys) less than the quarantine ago, or this client has
   *   not yet learned when its server started. `detail` says which.
   *
   * `millis` is how long the node took to answer (or how long we waited).
   *
   * @since 0.2.0
   * @category models
   */
  NodeOutcome,
  /**
   * An operation on one node failed. It is recorded as that node's outcome; it
   * never fails a lock operation on its own, because the other nodes may still
   * form a quorum.
   *
   * @since 0.2.0
   * @category errors
   */
  RedisNodeError,
  /**
   * Why a node could not carry out an operation: one of core's
   * `nodeErrorReasons` (`@effect-redlock/core/engine/node.js`, where each is
   * explained: `WrongType`, `ReadOnly`, `OutOfMemory`, `Auth`, `NoScript`,
   * `Busy`, `CrossSlot`, `Unavailable`, `Unknown`).
   *
   * @since 0.2.0
   * @category errors
   */
  RedisNodeErrorReason
} from "./internal/nodes.js"

export {
  /**
   * A lock was extended as many times as the manager's `maxExtensions` allows.
   *
   * @since 0.2.0
   * @category errors
   */
  ExtensionLimitReached,
  /**
   * No fencing token could be issued: fewer than a majority of nodes answered
   * (the lock may still be held; try again, or treat the write as unfenced).
   *
   * @since 0.2.0
   * @category errors
   */
  FencingTokenUnavailable,
  /**
   * An option is out of range or of the wrong type; `option` names it and
   * `detail` says what is expected. Nothing was sent to any node.
   *
   * @since 0.2.0
   * @category errors
   */
  InvalidOptions,
  /**
   * @since 0.2.0
   * @category guards
   */
  isRedlockError,
  /**
   * The lock is no longer held: the critical section is no longer protected.
   *
   * @since 0.2.0
   * @category errors
   */
  LockLost,
  /**
   * Why a held lock was lost: `Expired` (its validity ran out), `NotHeld` (a
   * majority of nodes no longer hold it for us), `Released`.
   *
   * @since 0.2.0
   * @category errors
   */
  LockLostReason,
  /**
   * The lock was not acquired within its retry schedule. Every key the
   * attempts may have set was released.
   *
   * @since 0.2.0
   * @category errors
   */
  LockNotAcquired,
  /**
   * An extension was not confirmed by a majority of nodes in time; the lock may
   * still be held until its current validity ends.
   *
   * @since 0.2.0
   * @category errors
   */
  LockNotExtended,
  /**
   * The promise code's lock manager (`effect-redlock/Promise`) was closed:
   * every call made after `close()` rejects with it at once, as does each
   * acquisition still waiting when it was called (after leaving its lines).
   * The Effect API never fails with it: its manager ends with its scope.
   *
   * @since 0.2.0
   * @category errors
   */
  ManagerClosed,
  /**
   * Why a lock was not acquired: `Held` (another client holds it on so many
   * nodes that no quorum was possible), `NotYourTurn` (others wait for it
   * ahead of this client), `NoQuorum` (nodes failed, timed out or abstained),
   * `ValidityExpired` (a quorum granted it, too late to be of use).
   *
   * @since 0.2.0
   * @category errors
   */
  NotAcquiredReason,
  /**
   * Every error a lock operation fails with.
   *
   * @since 0.2.0
   * @category errors
   */
  type RedlockError,
  /**
   * The fiber (or one of its parents) holds the read-write lock it asked for
   * in a way the acquisition would wait for forever: a write of a resource it
   * holds for reading (a read cannot be upgraded) or for writing, or a read of
   * one it holds for writing. Refused at once instead of waiting for itself.
   * (Another read of a resource it reads is acquired ahead of the line.)
   *
   * @since 0.2.0
   * @category errors
   */
  SelfDeadlock,
  /**
   * A semaphore's `limit` or a read-write lock's `maxReaders` differs from the
   * one the resource's current holders use, as recorded on a majority of nodes:
   * the acquisition was refused at once (no retry), since holders under two
   * settings could exceed either. The record goes with the resource's last
   * holder on each node (or expires within twice its ttl): a new value takes effect
   * once the resource is idle.
   *
   * @since 0.2.0
   * @category errors
   */
  SettingConflict,
  /**
   * A fenced write was refused: the storage has already seen a larger token,
   * so a later holder of the lock has written since. The writer lost the lock
   * (it was paused past its validity, say) and must not write.
   *
   * @since 0.2.0
   * @category errors
   */
  StaleFencingToken,
  /**
   * `Lock.guard` refused to start an effect: less validity is left than it needs.
   *
   * @since 0.2.0
   * @category errors
   */
  ValidityTooShort
} from "./internal/errors.js"
