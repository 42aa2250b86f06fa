/**
 * @since 0.1.0
 */

/**
 * The value of a held lock.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Lock from "./Lock.js"

/**
 * The lock manager: acquire, withLock, release, layers and options.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Redlock from "./Redlock.js"

/**
 * A counting semaphore: at most `limit` holders at once, as safe as a lock.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Semaphore from "./Semaphore.js"

/**
 * A read-write lock: many readers or one writer, as safe as a lock.
 *
 * @since 0.1.0
 * @category modules
 */
export * as ReadWriteLock from "./ReadWriteLock.js"

/**
 * The typed errors of the lock manager.
 *
 * @since 0.1.0
 * @category modules
 */
export * as RedlockError from "./RedlockError.js"

/**
 * The node interface, the node set, and the in-memory nodes.
 *
 * @since 0.1.0
 * @category modules
 */
export * as RedisNode from "./RedisNode.js"

/**
 * The metrics the lock managers record.
 *
 * @since 0.1.0
 * @category modules
 */
export * as RedlockMetrics from "./RedlockMetrics.js"
