/**
 * Redis nodes over Valkey GLIDE (`@valkey/valkey-glide` 2, its standalone
 * `GlideClient`): one client per node, and one subscriber client of ours per
 * server for release announcements, made from the node's client's own
 * configuration.
 *
 * GLIDE reconnects on its own and tells nobody; each command that may cast
 * a vote goes behind `CLIENT ID` and `LASTSAVE` in one batch, so that an
 * answer from a new connection or a restarted server is not counted for
 * the server run identified before (the restart quarantine). A user whose
 * ACL refuses those two commands (or `INFO`) gets a node that never votes.
 * While the server does not answer, commands fail at once as `Unavailable`.
 * A user's client bounds each command by its `requestTimeout` (GLIDE's
 * default is 250 ms): keep it above the per-node timeout. A NOSCRIPT fails
 * that one command (`NoScript`) and loads the scripts again. Standalone
 * servers only (no cluster client, no Sentinel), read from the primary.
 * GLIDE's own logger writes a warning to stdout for each server error and
 * failed reconnection by default; set its level with GLIDE's
 * `Logger.setLoggerConfig`.
 *
 * `@valkey/valkey-glide` is an optional peer dependency, needed only by this module.
 *
 * @since 0.2.0
 */
import * as DriverNodes from "../internal/driverNodes.js"
import { driver } from "@effect-redlock/core/nodes/glide/driver.js"
import type { GlideClient } from "@effect-redlock/core/nodes/glide/client.js"

/**
 * Where a node is and how to log in, as for the ioredis nodes (TLS: `true`,
 * or Node's options, of which `ca` and `rejectUnauthorized: false` are
 * carried). The password is `Redacted` so that it never shows in logs or
 * errors.
 *
 * @since 0.2.0
 * @category models
 */
export type ConnectionOptions = Omit<DriverNodes.ConnectionOptions, "sentinel" | "cluster">

/**
 * A GLIDE standalone client the user owns (what `GlideClient.createClient`
 * resolves to, RESP2 or RESP3, any decoder, `lazyConnect` or not): we use it
 * as it is and never close it.
 *
 * @since 0.2.0
 * @category models
 */
export type ClientOptions = DriverNodes.ClientOptions<GlideClient>

/**
 * @since 0.2.0
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
 * import * as Glide from "effect-redlock/RedisNode/Glide"
 *
 * const NodesLive = Glide.layer([{ host: "10.0.0.1" }, { host: "10.0.0.2" }, { host: "10.0.0.3" }])
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const { defaultMaxPendingCommands, fromUrl, layer, layerConfig, make } = DriverNodes.moduleOf<
  GlideClient,
  NodeOptions
>(
  driver
)
