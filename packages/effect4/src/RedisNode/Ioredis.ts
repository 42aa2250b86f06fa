/**
 * Redis nodes over ioredis (5 or 6): one connection per node, and one
 * subscriber connection per server for release announcements.
 *
 * Connections fail fast: no offline queue, no resending of unanswered
 * commands after a reconnect, so a down node answers at once with an
 * `Unavailable` error instead of holding an acquisition up. Reconnection goes
 * on in the background.
 *
 * `ioredis` is an optional peer dependency, needed only by this module.
 *
 * @since 0.2.0
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type { Redis } from "ioredis"
import type * as Tls from "node:tls"
import * as Options from "../engine/options.js"
import * as TimeOf from "../internal/time.js"
import * as Validate from "../internal/validate.js"
import * as IoredisNode from "../nodes/ioredis/node.js"
import { makeNodeError } from "../internal/nodeError.js"
import { type RedisNode, RedisNodes } from "../RedisNode.js"
import type { InvalidOptions } from "../RedlockError.js"

/**
 * Where a node is and how to log in. The password is `Redacted` so that it
 * never shows in logs or errors.
 *
 * @since 0.2.0
 * @category models
 */
export interface ConnectionOptions {
  /** `redis://[user:password@]host[:port][/db]` or `rediss://...`; the other fields override its parts. */
  readonly url?: string | undefined
  readonly host?: string | undefined
  readonly port?: number | undefined
  readonly username?: string | undefined
  readonly password?: Redacted.Redacted<string> | undefined
  readonly db?: number | undefined
  /** `true` for TLS with Node's defaults, or Node's TLS options. */
  readonly tls?: boolean | Tls.ConnectionOptions | undefined
  /** How long the layer waits for the first connection before going on without it. Default 1 second. */
  readonly connectTimeout?: Duration.Input | undefined
  /** Name in outcomes and errors. Default `host:port`. */
  readonly name?: string | undefined
  /** See {@link defaultMaxPendingCommands}. */
  readonly maxPendingCommands?: number | undefined
  /**
   * Declare the server durable (an append-only file with `appendfsync
   * always`), for a server that does not let this client read its
   * configuration; otherwise read from the server. A durable server votes at
   * once after a restart. Default `false`.
   */
  readonly durable?: boolean | undefined  /**
   * Wait for replicas after each grant and extension on this node: its vote
   * counts only once `replicas` replicas acknowledged the write (`WAIT`)
   * within `timeout`; otherwise it counts as a failed node (`Unavailable`).
   * Keep `timeout` well below the per-node timeout. Default: off.
   */
  readonly waitForReplicas?: { readonly replicas: number; readonly timeout: Duration.Input } | undefined
}

/**
 * A client the user owns: used as it is and never closed. Prefer
 * {@link ConnectionOptions}: a client with an offline queue makes a down node
 * cost the full per-node timeout instead of failing fast.
 *
 * @since 0.2.0
 * @category models
 */
export interface ClientOptions {
  readonly client: Redis
  readonly name?: string | undefined
  /** See {@link defaultMaxPendingCommands}. */
  readonly maxPendingCommands?: number | undefined
  /** See {@link ConnectionOptions.durable}. */
  readonly durable?: boolean | undefined  /** See {@link ConnectionOptions.waitForReplicas}. */
  readonly waitForReplicas?: ConnectionOptions["waitForReplicas"]
}

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
export const defaultMaxPendingCommands = 1000

/**
 * Connection options from a `redis://` or `rediss://` URL.
 *
 * @since 0.2.0
 * @category constructors
 */
export const fromUrl = (url: string): Option.Option<ConnectionOptions> => {
  const address = IoredisNode.parseUrl(url)
  if (address === undefined) return Option.none()
  const { password, ...rest } = address
  return Option.some({ ...rest, password: password === undefined ? undefined : Redacted.make(password) })
}

const checked = <A>(value: A | Options.Problem): Effect.Effect<A, InvalidOptions> => Validate.check(value)

/**
 * One node. A connection of ours is opened now and closed when the scope
 * closes; a user's client is left open.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (nodeOptions: NodeOptions): Effect.Effect<RedisNode, InvalidOptions, Scope.Scope> =>
  Effect.gen(function*() {
    // Checked before any connection is opened.
    const maxPendingCommands = yield* checked(
      Options.positiveCount("maxPendingCommands", nodeOptions.maxPendingCommands ?? defaultMaxPendingCommands)
    )
    const durable = yield* checked(Options.flag("durable", nodeOptions.durable ?? false))
    const replicas = yield* checked(Options.waitForReplicas(nodeOptions.waitForReplicas, Validate.readMillis))
    const time = yield* TimeOf.currentTime
    const settings = (name: string, connectTimeoutMillis: number): IoredisNode.NodeSettings => ({
      name,
      maxPendingCommands,
      durable,
      replicas,
      connectTimeoutMillis,
      makeError: makeNodeError,
      now: time.now
    })
    if ("client" in nodeOptions) {
      const client = nodeOptions.client
      IoredisNode.connectIfLazy(client)
      return yield* opened(client, settings(nodeOptions.name ?? IoredisNode.clientName(client), 1000))
    }
    let options: ConnectionOptions = nodeOptions
    if (nodeOptions.url !== undefined) {
      const parsed = fromUrl(nodeOptions.url)
      if (Option.isNone(parsed)) {
        return yield* Validate.invalid("url", `not a redis:// URL: "${IoredisNode.hidePassword(nodeOptions.url)}"`)
      }
      options = { ...parsed.value, ...withoutUndefined(nodeOptions) }
    }
    const connectTimeoutMillis = yield* checked(Options.millis("connectTimeout", options.connectTimeout ?? "1 second", Validate.readMillis))
    const host = options.host ?? "127.0.0.1"
    const port = options.port ?? 6379
    const client = yield* Effect.acquireRelease(
      Effect.sync(() =>
        IoredisNode.newClient({
          host,
          port,
          username: options.username,
          password: options.password === undefined ? undefined : Redacted.value(options.password),
          db: options.db,
          tls: options.tls
        }, connectTimeoutMillis)
      ),
      (client) => Effect.promise(() => IoredisNode.closeClient(client))
    )
    return yield* opened(client, settings(options.name ?? `${host}:${port}`, connectTimeoutMillis))
  })

// The node over a client, until the scope closes (before a client of ours is: finalizers run last in, first out).
const opened = (client: Redis, settings: IoredisNode.NodeSettings): Effect.Effect<RedisNode, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.promise(() => IoredisNode.open(client, settings)),
      (open) => Effect.promise(open.close)
    ),
    (open) => open.node
  )

const withoutUndefined = <A extends object>(a: A): Partial<A> =>
  Object.fromEntries(Object.entries(a).filter(([, value]) => value !== undefined)) as Partial<A>

/**
 * The nodes, connected concurrently.
 *
 * @example
 * ```ts
 * import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
 *
 * const NodesLive = Ioredis.layer([{ host: "10.0.0.1" }, { host: "10.0.0.2" }, { host: "10.0.0.3" }])
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (nodes: ReadonlyArray<NodeOptions>): Layer.Layer<RedisNodes, InvalidOptions> =>
  Layer.effect(RedisNodes, Effect.forEach(nodes, make, { concurrency: "unbounded" }))

/**
 * The node list from configuration: `REDLOCK_NODES` holds comma-separated
 * `redis://` URLs; `REDLOCK_PASSWORD`, when set, is the password of nodes
 * whose URL has none.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<{
    readonly urls: ReadonlyArray<string>
    readonly password: Option.Option<Redacted.Redacted<string>>
  }> = Config.all({
    urls: Config.map(Config.String("REDLOCK_NODES"), (list) => list.split(",").map((url) => url.trim())),
    password: Config.option(Config.Redacted("REDLOCK_PASSWORD"))
  })
): Layer.Layer<RedisNodes, Config.ConfigError | InvalidOptions> =>
  Layer.unwrap(Effect.gen(function*() {
    const { password, urls } = yield* config
    const nodes: Array<ConnectionOptions> = []
    for (const url of urls) {
      const parsed = fromUrl(url)
      if (Option.isNone(parsed)) {
        return yield* Validate.invalid("REDLOCK_NODES", `not a redis:// URL: "${IoredisNode.hidePassword(url)}"`)
      }
      nodes.push({ ...parsed.value, password: parsed.value.password ?? Option.getOrUndefined(password) })
    }
    return layer(nodes)
  }))
