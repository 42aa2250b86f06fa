/**
 * Distributed locks for Effect 4: the Redlock algorithm over N independent
 * Redis masters, as scoped resources.
 *
 * @since 0.2.0
 */

/**
 * @since 0.2.0
 */
export * as Lock from "./Lock.js"

/**
 * @since 0.2.0
 */
export * as ReadWriteLock from "./ReadWriteLock.js"

/**
 * @since 0.2.0
 */
export * as RedisNode from "./RedisNode.js"

/**
 * @since 0.2.0
 */
export * as Redlock from "./Redlock.js"

/**
 * @since 0.2.0
 */
export * as RedlockError from "./RedlockError.js"

/**
 * @since 0.2.0
 */
export * as RedlockMetrics from "./RedlockMetrics.js"

/**
 * @since 0.2.0
 */
export * as Semaphore from "./Semaphore.js"
