/**
 * The lock manager for promise code, as `@effect-redlock/core/Promise.js`
 * documents it (`makeRedlock` → `acquire` / `release` / `extend` / `using`
 * / `inspect` / `close`, permits, read and write holds; plain values and
 * plain errors with a `_tag`), from the Effect 3 package: no Effect runs in
 * it, and `effect` is an optional peer, so a plain Node project imports it
 * with no `effect` installed. Where `effect` is installed, `makeRedlock`
 * also takes this package's layers of nodes, passwords as `Redacted`, and
 * any retry Schedule (one built by hand is stepped as an effect); the
 * classes of `effect-redlock/RedlockError` recognise its errors
 * (`instanceof`).
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
import * as OpenNodes from "@effect-redlock/core/manager/openNodes.js"
import type { PromiseNodeOptions as CoreNodeOptions, PromiseOptions, PromiseRedlock } from "@effect-redlock/core/Promise.js"

export * from "@effect-redlock/core/Promise.js"

/**
 * The nodes of a lock manager for promise code: as core's (connection
 * options, a client of the user's, a node of the engine), with the password
 * a plain string or an Effect `Redacted`.
 *
 * @since 0.1.0
 * @category models
 */
export type PromiseNodeOptions = OpenNodes.EffectNodeOptions<CoreNodeOptions>

/**
 * A layer of this package's nodes (`Ioredis.layer(...)`,
 * `RedisNode.layerMemory(3)`), which `makeRedlock` takes in place of a
 * list: its type is not named here, so that this module's types need no
 * `effect`; it is read only where `effect` is installed.
 *
 * @since 0.1.0
 * @category models
 */
export type NodesLayer = OpenNodes.NodesLayer

/**
 * A lock manager over Redis nodes: connection options or clients (ioredis,
 * iovalkey, node-redis; the driver's module is loaded only then), nodes of
 * the engine, or any layer of nodes of this package. Rejects with
 * `InvalidOptions` for invalid options.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRedlock: (
  nodes: ReadonlyArray<PromiseNodeOptions> | NodesLayer,
  options?: PromiseOptions
) => Promise<PromiseRedlock> = OpenNodes.withHostOf(() => import("./internal/promiseHost.js"))
