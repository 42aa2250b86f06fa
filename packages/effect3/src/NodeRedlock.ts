/**
 * node-redlock's API on this library's engine (`effect-redlock/node-redlock`):
 * a program written for node-redlock 5.0 or 4.x runs after changing its
 * import only. Core's `@effect-redlock/core/NodeRedlock.js`, which needs no
 * `effect`; docs/migrating-from-node-redlock.md says what changes.
 *
 * @example
 * ```ts
 * import Redlock from "effect-redlock/node-redlock"
 * import Redis from "ioredis"
 *
 * const redlock = new Redlock([new Redis(6379)])
 * const lock = await redlock.acquire(["orders:42"], 5000)
 * await lock.release()
 * ```
 *
 * @since 0.1.0
 */
export * from "@effect-redlock/core/NodeRedlock.js"
export {
  /**
   * node-redlock's default export, the `Redlock` class.
   *
   * @since 0.1.0
   * @category constructors
   */
  default
} from "@effect-redlock/core/NodeRedlock.js"
