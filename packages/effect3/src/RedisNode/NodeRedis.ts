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
import * as DriverNodes from "../internal/driverNodes.js"
import { driver } from "@effect-redlock/core/nodes/nodeRedis/driver.js"
import type { NodeRedisClient } from "@effect-redlock/core/nodes/nodeRedis/client.js"

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
 * The nodes over this client: `make(options)`, one node, opened now and
 * closed with its scope (a client of the user's is left open);
 * `layer(list)`, the nodes, connected concurrently; `layerConfig()`, the
 * list from `REDLOCK_NODES` (comma-separated `redis://` URLs) and
 * `REDLOCK_PASSWORD` (for URLs with none); `fromUrl(url)`, connection
 * options from a URL; `defaultMaxPendingCommands`, how many commands of a
 * node may wait for their answer before new ones fail at once as
 * `Unavailable` (a hung server then costs bounded memory, and no time).
 *
 * @example
 * ```ts
 * import * as NodeRedis from "effect-redlock/RedisNode/NodeRedis"
 *
 * const NodesLive = NodeRedis.layer([{ host: "10.0.0.1" }, { host: "10.0.0.2" }, { host: "10.0.0.3" }])
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const { defaultMaxPendingCommands, fromUrl, layer, layerConfig, make } = DriverNodes.moduleOf<
  NodeRedisClient,
  NodeOptions
>(
  driver
)
