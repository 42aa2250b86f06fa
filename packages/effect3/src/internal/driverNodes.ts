/**
 * What every driver's public node module has in common (RedisNode/Ioredis,
 * RedisNode/NodeRedis): the connection options, the user's own client, the
 * checks of the options, a node opened for a scope, the layers. Each module
 * hands in its driver: how it makes, names and closes a client, and opens
 * a node over it (nodes/<driver>/node.ts).
 *
 * @internal
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type * as Tls from "node:tls"
import * as Options from "@effect-redlock/core/engine/options.js"
import * as Address from "@effect-redlock/core/nodes/address.js"
import type * as DriverNode from "@effect-redlock/core/nodes/driverNode.js"
import type { RedisNode } from "../RedisNode.js"
import { InvalidOptions } from "./errors.js"
import * as Monotonic from "./monotonic.js"
import { fromPromises, makeNodeError, RedisNodes } from "./nodes.js"
import * as Validate from "./validate.js"

/** Where a node is and how to log in (documented in each driver's module). */
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
  /**
   * How long the layer waits for the first connection (and the server's
   * `INFO server`, for the restart quarantine) before going on without it.
   * Default 1 second.
   */
  readonly connectTimeout?: Duration.DurationInput | undefined
  /** Name in outcomes and errors. Default `host:port`. */
  readonly name?: string | undefined
  /** See {@link defaultMaxPendingCommands}. */
  readonly maxPendingCommands?: number | undefined
  /**
   * Declare the server durable (an append-only file with `appendfsync
   * always`: it keeps every key it acknowledged across a restart), for a
   * server that does not let this client read its configuration (ACLs that
   * refuse `CONFIG GET`). Otherwise not needed: the client reads it from the
   * server on each connection. A server that reports weaker persistence is
   * not believed durable, declared or not. A durable server votes at once
   * after a restart (see `restartQuarantine` in `Redlock.Options`). Default `false`.
   */
  readonly durable?: boolean | undefined
  /**
   * Wait for replicas after each grant and extension on this node: the
   * node's vote counts only once `replicas` replicas acknowledged the write
   * (`WAIT`) within `timeout`; otherwise it counts as a failed node
   * (`Unavailable`), and a refused attempt deletes what it set there. For
   * masters with replicas, so that a failover to a replica is less likely to
   * lose a granted key (not impossible: `WAIT` does not make a replica's copy
   * durable). Keep `timeout` well below the per-node timeout: the node's
   * answer waits for it, and so do its later commands on the connection.
   * Default: off.
   */
  readonly waitForReplicas?: { readonly replicas: number; readonly timeout: Duration.DurationInput } | undefined
  /**
   * Reach the master a Redis Sentinel names (`master`, asked of any of
   * `sentinels`) instead of `host` and `port`, following its failovers:
   * ioredis and iovalkey nodes only. A failover's new master votes only once
   * it has sat out the restart quarantine (it may lack keys the old master
   * granted; see docs/quarantine.md). Default name `<master> (sentinel)`.
   */
  readonly sentinel?: {
    readonly master: string
    readonly sentinels: ReadonlyArray<{ readonly host: string; readonly port: number }>
  } | undefined
  /**
   * A Redis Cluster as one node, reached first at any of `nodes` instead of
   * `host` and `port`: ioredis and iovalkey nodes only. Each resource's keys
   * share a hash slot (`{resource}` tags, on cluster nodes only); the
   * resources of one lock need a common tag (`{order:7}:charge`,
   * `{order:7}:ship`) or the node refuses them (`CrossSlot`). Any master's
   * restart or replacement makes the whole node sit out the restart
   * quarantine. No `db` (a cluster has database 0 only) and no
   * `waitForReplicas`. Default name `<first host>:<port> (cluster)`.
   */
  readonly cluster?: {
    readonly nodes: ReadonlyArray<{ readonly host: string; readonly port: number }>
  } | undefined
}

/**
 * A client the user owns: we use it as it is and never close it. Prefer
 * {@link ConnectionOptions}: a client with an offline queue makes a down node
 * cost the full per-node timeout instead of failing fast.
 */
export interface ClientOptions<Client> {
  readonly client: Client
  readonly name?: string | undefined
  /** See {@link defaultMaxPendingCommands}. */
  readonly maxPendingCommands?: number | undefined
  /** See {@link ConnectionOptions.durable}. */
  readonly durable?: boolean | undefined
  /** See {@link ConnectionOptions.waitForReplicas}. */
  readonly waitForReplicas?: ConnectionOptions["waitForReplicas"]
}

export type NodeOptions<Client> = ConnectionOptions | ClientOptions<Client>

/**
 * How many commands of a node may wait for their answer at once, by default.
 * A server that stops answering (paused, overloaded, cut off without a reset)
 * keeps its connection open, and every command sent to it would wait, with
 * its promise and the fan-out that waits for it, for as long as the server is
 * away. Past this many, a new command fails at once as `Unavailable` without
 * being sent: a hung node costs bounded memory, and no time. The other nodes
 * serve quorums meanwhile. Far above what a node has in flight when it
 * answers (one command per lock operation in progress).
 */
export const defaultMaxPendingCommands = 1000

/** How one driver makes, names and closes its clients, and opens a node over one. */
export interface Driver<Client> {
  /** A client of ours: connecting now, failing fast while not connected. */
  readonly newClient: (address: Address.Address, connectTimeoutMillis: number) => Client
  /** Close a client of ours; never rejects. */
  readonly closeClient: (client: Client) => Promise<void>
  /** A user's client: the node name it gets by default. */
  readonly clientName: (client: Client) => string
  /** A user's client not connecting yet is connected now, as its first command would. */
  readonly connectUserClient: (client: Client) => void
  /** Why a user's `client` cannot serve a node (something else passed as one); `undefined`: it can. */
  readonly userClientProblem: (client: unknown) => string | undefined
  /** Whether its clients can follow a Sentinel (the `sentinel` option). */
  readonly sentinels: boolean
  /** Whether a user's client is a cluster client (the node is then the whole cluster); none: never. */
  readonly isCluster?: (client: Client) => boolean
  readonly open: (client: Client, settings: DriverNode.NodeSettings) => Promise<DriverNode.OpenNode>
  /** A Redis Cluster as one node, over a client of ours that the node's `close` closes (the `cluster` option); none: not served. */
  readonly openCluster?: (
    address: Address.Address,
    connectTimeoutMillis: number,
    settings: DriverNode.NodeSettings
  ) => Promise<DriverNode.OpenNode>
}

/** Connection options from a `redis://` or `rediss://` URL. */
export const fromUrl = (url: string): Option.Option<ConnectionOptions> => {
  const address = Address.parseUrl(url)
  if (address === undefined) return Option.none()
  const { password, ...rest } = address
  return Option.some({ ...rest, password: password === undefined ? undefined : Redacted.make(password) })
}

const withoutUndefined = <A extends object>(a: A): Partial<A> =>
  Object.fromEntries(Object.entries(a).filter(([, value]) => value !== undefined)) as Partial<A>

interface NodeSettings {
  readonly maxPending: number
  readonly durable: boolean
  readonly replicas: DriverNode.NodeSettings["replicas"]
}

const nodeSettings = <Client>(options: NodeOptions<Client>): Effect.Effect<NodeSettings, InvalidOptions> =>
  Effect.gen(function*() {
    const maxPending = yield* Validate.positiveCount(
      "maxPendingCommands",
      options.maxPendingCommands ?? defaultMaxPendingCommands
    )
    const durable = yield* Validate.flag("durable", options.durable ?? false)
    const replicas = yield* Validate.waitForReplicas(options.waitForReplicas)
    return { maxPending, durable, replicas }
  })

/**
 * The node over `client`, until the scope closes: before a client of ours is
 * closed (finalizers run last in, first out).
 */
const opened = (
  open: (settings: DriverNode.NodeSettings) => Promise<DriverNode.OpenNode>,
  name: string,
  connectTimeoutMillis: number,
  settings: NodeSettings
) =>
  Effect.flatMap(Monotonic.currentTime, (time) =>
    Effect.acquireRelease(
      Effect.promise(() =>
        open({
          name,
          maxPendingCommands: settings.maxPending,
          durable: settings.durable,
          replicas: settings.replicas,
          connectTimeoutMillis,
          makeError: makeNodeError,
          now: time.now
        })
      ),
      (open) => Effect.promise(open.close)
    )).pipe(Effect.map((open) => fromPromises(open.node)))

/** One node over `driver`: a connection of ours is opened now and closed with the scope; a user's client is left open. */
export const make = <Client>(driver: Driver<Client>) =>
(nodeOptions: NodeOptions<Client>): Effect.Effect<RedisNode, InvalidOptions, Scope.Scope> =>
  Effect.gen(function*() {
    // Checked before the connection is opened.
    yield* Validate.nodeEntry(nodeOptions)
    const settings = yield* nodeSettings(nodeOptions)
    if ("client" in nodeOptions) {
      const client = nodeOptions.client
      const problem = driver.userClientProblem(client)
      if (problem !== undefined) return yield* new InvalidOptions({ option: "client", detail: problem }, true)
      if (settings.replicas !== undefined && driver.isCluster?.(client) === true) {
        return yield* new InvalidOptions({ option: "waitForReplicas", detail: "not available on cluster nodes" }, true)
      }
      driver.connectUserClient(client)
      return yield* opened((settings) => driver.open(client, settings), nodeOptions.name ?? driver.clientName(client), 1000, settings)
    }
    let options: ConnectionOptions = nodeOptions
    if (nodeOptions.url !== undefined) {
      const parsed = fromUrl(nodeOptions.url)
      if (Option.isNone(parsed)) {
        return yield* new InvalidOptions({ option: "url", detail: `not a redis:// URL: "${Options.hidePassword(nodeOptions.url)}"` }, true)
      }
      options = { ...parsed.value, ...withoutUndefined(nodeOptions) }
    }
    const sentinel = yield* Validate.sentinel(options.sentinel)
    if (sentinel !== undefined && !driver.sentinels) {
      return yield* new InvalidOptions({ option: "sentinel", detail: "these nodes cannot follow a Sentinel: use ioredis or iovalkey nodes" }, true)
    }
    const cluster = yield* Validate.cluster(options)
    if (cluster !== undefined && driver.openCluster === undefined) {
      return yield* new InvalidOptions({ option: "cluster", detail: "these nodes cannot reach a Redis Cluster: use ioredis or iovalkey nodes" }, true)
    }
    const host = yield* Validate.host(options.host ?? "127.0.0.1")
    const port = yield* Validate.port(options.port ?? 6379)
    const connectTimeout = Duration.millis(yield* Validate.millis("connectTimeout", options.connectTimeout ?? "1 second"))
    const address: Address.Address = {
      host,
      port,
      username: options.username,
      password: options.password === undefined ? undefined : Redacted.value(options.password),
      db: options.db,
      tls: options.tls,
      sentinel,
      cluster
    }
    if (cluster !== undefined && driver.openCluster !== undefined) {
      const openCluster = driver.openCluster
      const first = cluster.nodes[0]
      return yield* opened(
        (settings) => openCluster(address, Duration.toMillis(connectTimeout), settings),
        options.name ?? `${first.host}:${first.port} (cluster)`,
        Duration.toMillis(connectTimeout),
        settings
      )
    }
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => driver.newClient(address, Duration.toMillis(connectTimeout))),
      (client) => Effect.promise(() => driver.closeClient(client))
    )
    const name = options.name ?? (sentinel === undefined ? `${host}:${port}` : `${sentinel.master} (sentinel)`)
    return yield* opened((settings) => driver.open(client, settings), name, Duration.toMillis(connectTimeout), settings)
  })

/** The nodes over `driver`, connected concurrently. */
export const layer = <Client>(driver: Driver<Client>) =>
(nodes: ReadonlyArray<NodeOptions<Client>>): Layer.Layer<RedisNodes, InvalidOptions> =>
  Layer.scoped(
    RedisNodes,
    Effect.flatMap(Validate.nodeList(nodes), (list) => {
      const listedTwice = Address.listedTwice(list)
      return listedTwice === undefined
        ? Effect.forEach(list as ReadonlyArray<NodeOptions<Client>>, make(driver), { concurrency: "unbounded" })
        : new InvalidOptions({ option: "nodes", detail: listedTwice }, true)
    })
  )

/** The configuration `layerConfig` reads by default: `REDLOCK_NODES` (comma-separated URLs) and `REDLOCK_PASSWORD`. */
export const defaultConfig: Config.Config<{
  readonly urls: ReadonlyArray<string>
  readonly password: Option.Option<Redacted.Redacted<string>>
}> = Config.all({
  urls: Config.map(Config.string("REDLOCK_NODES"), (list) => list.split(",").map((url) => url.trim())),
  password: Config.option(Config.redacted("REDLOCK_PASSWORD"))
})

/** The node list from configuration, over `driver`. */
export const layerConfig = <Client>(driver: Driver<Client>) =>
(
  config: Config.Config<{
    readonly urls: ReadonlyArray<string>
    readonly password: Option.Option<Redacted.Redacted<string>>
  }> = defaultConfig
): Layer.Layer<RedisNodes, ConfigError.ConfigError | InvalidOptions> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const { password, urls } = yield* config
    const nodes: Array<ConnectionOptions> = []
    for (const url of urls) {
      const parsed = fromUrl(url)
      if (Option.isNone(parsed)) {
        return yield* Effect.fail(ConfigError.InvalidData(["REDLOCK_NODES"], `not a redis:// URL: "${Options.hidePassword(url)}"`))
      }
      nodes.push({ ...parsed.value, password: parsed.value.password ?? Option.getOrUndefined(password) })
    }
    return layer(driver)(nodes)
  }))
