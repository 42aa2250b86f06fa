/**
 * Redis nodes over ioredis (5 or 6): one connection per node, and one
 * subscriber connection per server for release announcements.
 *
 * Connections fail fast: no offline queue, no resending of unanswered
 * commands after a reconnect, so a down node answers at once with an
 * `Unavailable` error instead of holding acquire up. Reconnection goes on in
 * the background.
 *
 * `ioredis` is an optional peer dependency, needed only by this module.
 *
 * @since 0.1.0
 */
import * as DriverNodes from "../internal/driverNodes.js"
import type { Cluster, Redis } from "ioredis"
import { driver } from "@effect-redlock/core/nodes/ioredis/driver.js"

/**
 * Where a node is and how to log in. The password is `Redacted` so that it
 * never shows in logs or errors.
 *
 * @since 0.1.0
 * @category models
 */
export type ConnectionOptions = DriverNodes.ConnectionOptions

/**
 * An ioredis client the user owns (a `Redis`, or a `Cluster`: the whole
 * cluster is then one node, as with the `cluster` option): we use it as it
 * is and never close it (a client made with `lazyConnect` is connected, as
 * its first command would). Prefer {@link ConnectionOptions}: a client with
 * an offline queue makes a down node cost the full per-node timeout instead
 * of failing fast.
 *
 * @since 0.1.0
 * @category models
 */
export type ClientOptions = DriverNodes.ClientOptions<Redis | Cluster>

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
 * import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
 *
 * const NodesLive = Ioredis.layer([{ host: "10.0.0.1" }, { host: "10.0.0.2" }, { host: "10.0.0.3" }])
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const { defaultMaxPendingCommands, fromUrl, layer, layerConfig, make } = DriverNodes.moduleOf<
  Redis | Cluster,
  NodeOptions
>(
  driver
)
