/**
 * Redis nodes over node-redis (`redis` 5 or 6): one connection per node,
 * and one subscriber connection per server for release announcements.
 *
 * A connection this module opens fails fast (`disableOfflineQueue`): a down
 * node answers at once with an `Unavailable` error instead of holding an
 * acquisition up, and a command not yet written when the connection drops
 * fails instead of going out after the reconnect. Reconnection goes on in
 * the background. Scripts go by EVALSHA, loaded on each connection; a
 * NOSCRIPT fails that one command (`NoScript`) and loads them again.
 *
 * `redis` is an optional peer dependency, needed only by this module.
 *
 * @since 0.1.0
 */
import type * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as DriverNodes from "../internal/driverNodes.js"
import { driver } from "@effect-redlock/core/nodes/nodeRedis/driver.js"
import type { NodeRedisClient } from "@effect-redlock/core/nodes/nodeRedis/client.js"
import type { RedisNode, RedisNodes } from "../RedisNode.js"
import type { InvalidOptions } from "../RedlockError.js"

/**
 * Where a node is and how to log in, as for the ioredis nodes. The password
 * is `Redacted` so that it never shows in logs or errors.
 *
 * @since 0.1.0
 * @category models
 */
export type ConnectionOptions = Omit<DriverNodes.ConnectionOptions, "sentinel">

/**
 * A node-redis client the user owns (what `createClient` returns, RESP2 or
 * RESP3): we use it as it is and never close it; one not connected yet is
 * connected. Prefer {@link ConnectionOptions}: a client with an offline
 * queue makes a down node cost the full per-node timeout instead of failing
 * fast, and writes the commands it holds after a reconnect.
 *
 * @since 0.1.0
 * @category models
 */
export type ClientOptions = DriverNodes.ClientOptions<NodeRedisClient>

/**
 * @since 0.1.0
 * @category models
 */
export type NodeOptions = ConnectionOptions | ClientOptions

/**
 * How many commands of a node may wait for their answer at once, by default
 * (see `RedisNode/Ioredis`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultMaxPendingCommands: number = DriverNodes.defaultMaxPendingCommands

/**
 * Connection options from a `redis://` or `rediss://` URL
 * (`redis://user:password@host:port/db`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromUrl: (url: string) => Option.Option<ConnectionOptions> = DriverNodes.fromUrl


/**
 * One node. The connection is opened now and closed when the scope closes
 * (unless it is a client the user owns).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (nodeOptions: NodeOptions) => Effect.Effect<RedisNode, InvalidOptions, Scope.Scope> =
  DriverNodes.make(driver)

/**
 * The nodes, connected concurrently.
 *
 * @example
 * ```ts
 * import * as NodeRedis from "effect-redlock/RedisNode/NodeRedis"
 *
 * const NodesLive = NodeRedis.layer([{ host: "10.0.0.1" }, { host: "10.0.0.2" }, { host: "10.0.0.3" }])
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: (nodes: ReadonlyArray<NodeOptions>) => Layer.Layer<RedisNodes, InvalidOptions> = DriverNodes
  .layer(driver)

/**
 * The node list from configuration: `REDLOCK_NODES` holds comma-separated
 * `redis://` URLs; `REDLOCK_PASSWORD`, when set, is the password of nodes
 * whose URL has none.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: (
  config?: Config.Config<{
    readonly urls: ReadonlyArray<string>
    readonly password: Option.Option<Redacted.Redacted<string>>
  }>
) => Layer.Layer<RedisNodes, ConfigError.ConfigError | InvalidOptions> = DriverNodes.layerConfig(driver)
