/**
 * The lock manager for promise code, from the Effect 3 package: core's
 * promise API (`@effect-redlock/core/Promise.js`: `makeRedlock` →
 * `acquire` / `release` / `extend` / `using` / `inspect` / `close`,
 * permits, read and write holds; plain values and plain errors with a
 * `_tag`), as `@effect-redlock/core/EffectPromise.js` documents it.
 *
 * @example
 * ```ts
 * import { makeRedlock } from "effect-redlock/Promise"
 *
 * const redlock = await makeRedlock([{ port: 6379 }, { port: 6380 }, { port: 6381 }])
 * await redlock.using("cache:rebuild", { ttl: 10_000, autoExtend: true }, async (lock, signal) => {
 *   if (signal.aborted) throw signal.reason
 * })
 * await redlock.close()
 * ```
 *
 * @since 0.1.0
 */
import type { MakeRedlock } from "@effect-redlock/core/EffectPromise.js"
import { withHostOf } from "@effect-redlock/core/manager/openNodes.js"

export * from "@effect-redlock/core/EffectPromise.js"

/**
 * A lock manager over Redis nodes, or a layer of this package's nodes
 * (`@effect-redlock/core/EffectPromise.js`'s `MakeRedlock`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRedlock: MakeRedlock = withHostOf(() => import("./internal/promiseHost.js"))
