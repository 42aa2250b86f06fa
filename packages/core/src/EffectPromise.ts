/**
 * The promise API as both Effect packages give it (`effect-redlock/Promise`
 * of the Effect 3 and the Effect 4 line): core's `Promise.js`, whose
 * `makeRedlock` also takes, where `effect` is installed, the package's
 * layers of nodes, passwords as `Redacted`, and any retry Schedule (one
 * built by hand is stepped as an effect). No Effect runs in it, and `effect`
 * is an optional peer of both packages, so a plain Node project imports it
 * with no `effect` installed; the classes of each package's `RedlockError`
 * recognise its errors (`instanceof`). Each package's `effect-redlock/Promise`
 * is this module with its own `makeRedlock`.
 *
 * @since 0.1.0
 */
import type * as OpenNodes from "./manager/openNodes.js"
import type { PromiseNodeOptions as CoreNodeOptions, PromiseOptions, PromiseRedlock } from "./Promise.js"

export * from "./Promise.js"

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
 * A layer of the package's nodes (`Ioredis.layer(...)`,
 * `RedisNode.layerMemory(3)`), which `makeRedlock` takes in place of a
 * list: its type is not named here, so that the promise API's types need no
 * `effect`; it is read only where `effect` is installed.
 *
 * @since 0.1.0
 * @category models
 */
export type NodesLayer = OpenNodes.NodesLayer

/**
 * A lock manager over Redis nodes: connection options or clients (ioredis,
 * iovalkey, node-redis; the driver's module is loaded only then), nodes of
 * the engine, or any layer of nodes of the package. Rejects with
 * `InvalidOptions` for invalid options.
 *
 * @since 0.1.0
 * @category models
 */
export type MakeRedlock = (
  nodes: ReadonlyArray<PromiseNodeOptions> | NodesLayer,
  options?: PromiseOptions
) => Promise<PromiseRedlock>
