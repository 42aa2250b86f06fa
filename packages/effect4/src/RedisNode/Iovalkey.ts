/**
 * Redis nodes over iovalkey (the ioredis fork Valkey maintains, 0.x): the
 * ioredis nodes' driver, options and behaviour over its client, one
 * connection per node and one subscriber connection per server.
 *
 * `iovalkey` is an optional peer dependency, needed only by this module.
 *
 * @since 0.2.0
 */
import type * as Config from "effect/Config"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as DriverNodes from "../internal/driverNodes.js"
import type { Cluster, Redis } from "iovalkey"
import { driver } from "@effect-redlock/core/nodes/iovalkey/driver.js"
import type { RedisNode, RedisNodes } from "../RedisNode.js"
import type { InvalidOptions } from "../RedlockError.js"

/**
 * Where a node is and how to log in. The password is `Redacted` so that it
 * never shows in logs or errors.
 *
 * @since 0.2.0
 * @category models
 */
export type ConnectionOptions = DriverNodes.ConnectionOptions

/**
 * An iovalkey client the user owns (a `Redis`, or a `Cluster`: the whole
 * cluster is then one node, as with the `cluster` option): used as it is and
 * never closed (a client made with `lazyConnect` is connected, as its first
 * command would). Prefer {@link ConnectionOptions}: a client with an offline
 * queue makes a down node cost the full per-node timeout instead of failing
 * fast.
 *
 * @since 0.2.0
 * @category models
 */
export type ClientOptions = DriverNodes.ClientOptions<Redis | Cluster>

/**
 * @since 0.2.0
 * @category models
 */
export type NodeOptions = ConnectionOptions | ClientOptions

/**
 * How many commands of a node may wait for their answer at once, by default.
 * Past this many (a server that stopped answering keeps its connection
 * open), a new command fails at once as `Unavailable` without being sent: a
 * hung node costs bounded memory, and no time.
 *
 * @since 0.2.0
 * @category constructors
 */
export const defaultMaxPendingCommands: number = DriverNodes.defaultMaxPendingCommands

/**
 * Connection options from a `redis://` or `rediss://` URL.
 *
 * @since 0.2.0
 * @category constructors
 */
export const fromUrl: (url: string) => Option.Option<ConnectionOptions> = DriverNodes.fromUrl


/**
 * One node. A connection of ours is opened now and closed when the scope
 * closes; a user's client is left open.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make: (nodeOptions: NodeOptions) => Effect.Effect<RedisNode, InvalidOptions, Scope.Scope> = DriverNodes
  .make(driver)

/**
 * The nodes, connected concurrently.
 *
 * @example
 * ```ts
 * import * as Iovalkey from "effect-redlock/RedisNode/Iovalkey"
 *
 * const NodesLive = Iovalkey.layer([{ host: "10.0.0.1" }, { host: "10.0.0.2" }, { host: "10.0.0.3" }])
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const layer: (nodes: ReadonlyArray<NodeOptions>) => Layer.Layer<RedisNodes, InvalidOptions> = DriverNodes
  .layer(driver)

/**
 * The node list from configuration: `REDLOCK_NODES` holds comma-separated
 * `redis://` URLs; `REDLOCK_PASSWORD`, when set, is the password of nodes
 * whose URL has none.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerConfig: (
  config?: Config.Config<{
    readonly urls: ReadonlyArray<string>
    readonly password: Option.Option<Redacted.Redacted<string>>
  }>
) => Layer.Layer<RedisNodes, Config.ConfigError | InvalidOptions> = DriverNodes.layerConfig(driver)
