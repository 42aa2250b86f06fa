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
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type * as Tls from "node:tls"
import * as Options from "@effect-redlock/core/engine/options.js"
import * as Address from "@effect-redlock/core/nodes/address.js"
import type * as DriverNode from "@effect-redlock/core/nodes/driverNode.js"
import { type RedisNode, RedisNodes } from "../RedisNode.js"
import type { InvalidOptions } from "../RedlockError.js"
import { makeNodeError } from "./nodeError.js"
import * as TimeOf from "./time.js"
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
  readonly durable?: boolean | undefined
  /**
   * Wait for replicas after each grant and extension on this node: its vote
   * counts only once `replicas` replicas acknowledged the write (`WAIT`)
   * within `timeout`; otherwise it counts as a failed node (`Unavailable`).
   * Keep `timeout` well below the per-node timeout. Default: off.
   */
  readonly waitForReplicas?: { readonly replicas: number; readonly timeout: Duration.Input } | undefined
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
 * A client the user owns: used as it is and never closed. Prefer
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
 * Past this many (a server that stopped answering keeps its connection
 * open), a new command fails at once as `Unavailable` without being sent: a
 * hung node costs bounded memory, and no time.
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

const checked = <A>(value: A | Options.Problem): Effect.Effect<A, InvalidOptions> => Validate.check(value)

const withoutUndefined = <A extends object>(a: A): Partial<A> =>
  Object.fromEntries(Object.entries(a).filter(([, value]) => value !== undefined)) as Partial<A>

/** One node over `driver`: a connection of ours is opened now and closed with the scope; a user's client is left open. */
export const make = <Client>(driver: Driver<Client>) =>
(nodeOptions: NodeOptions<Client>): Effect.Effect<RedisNode, InvalidOptions, Scope.Scope> =>
  Effect.gen(function*() {
    // Checked before any connection is opened.
    yield* checked(Options.nodeEntry(nodeOptions))
    const maxPendingCommands = yield* checked(
      Options.positiveCount("maxPendingCommands", nodeOptions.maxPendingCommands ?? defaultMaxPendingCommands)
    )
    const durable = yield* checked(Options.flag("durable", nodeOptions.durable ?? false))
    const replicas = yield* checked(Options.waitForReplicas(nodeOptions.waitForReplicas, Validate.readMillis))
    const time = yield* TimeOf.currentTime
    const settings = (name: string, connectTimeoutMillis: number): DriverNode.NodeSettings => ({
      name,
      maxPendingCommands,
      durable,
      replicas,
      connectTimeoutMillis,
      makeError: makeNodeError,
      now: time.now
    })
    // The node, until the scope closes (before a client of ours is: finalizers run last in, first out).
    const opened = (open: () => Promise<DriverNode.OpenNode>) =>
      Effect.map(
        Effect.acquireRelease(Effect.promise(open), (open) => Effect.promise(open.close)),
        (open): RedisNode => open.node
      )
    if ("client" in nodeOptions) {
      const client = nodeOptions.client
      const problem = driver.userClientProblem(client)
      if (problem !== undefined) return yield* Validate.invalid("client", problem)
      if (replicas !== undefined && driver.isCluster?.(client) === true) {
        return yield* Validate.invalid("waitForReplicas", "not available on cluster nodes")
      }
      driver.connectUserClient(client)
      return yield* opened(() => driver.open(client, settings(nodeOptions.name ?? driver.clientName(client), 1000)))
    }
    let options: ConnectionOptions = nodeOptions
    if (nodeOptions.url !== undefined) {
      const parsed = fromUrl(nodeOptions.url)
      if (Option.isNone(parsed)) {
        return yield* Validate.invalid("url", `not a redis:// URL: "${Options.hidePassword(nodeOptions.url)}"`)
      }
      options = { ...parsed.value, ...withoutUndefined(nodeOptions) }
    }
    const connectTimeoutMillis = yield* checked(Options.millis("connectTimeout", options.connectTimeout ?? "1 second", Validate.readMillis))
    const sentinel = yield* checked(Options.sentinel(options.sentinel))
    if (sentinel !== undefined && !driver.sentinels) {
      return yield* Validate.invalid("sentinel", "these nodes cannot follow a Sentinel: use ioredis or iovalkey nodes")
    }
    const cluster = yield* checked(Options.cluster(options))
    if (cluster !== undefined && driver.openCluster === undefined) {
      return yield* Validate.invalid("cluster", "these nodes cannot reach a Redis Cluster: use ioredis or iovalkey nodes")
    }
    const host = yield* checked(Options.host(options.host ?? "127.0.0.1"))
    const port = yield* checked(Options.port(options.port ?? 6379))
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
      const name = options.name ?? `${first.host}:${first.port} (cluster)`
      return yield* opened(() => openCluster(address, connectTimeoutMillis, settings(name, connectTimeoutMillis)))
    }
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => driver.newClient(address, connectTimeoutMillis)),
      (client) => Effect.promise(() => driver.closeClient(client))
    )
    const name = options.name ?? (sentinel === undefined ? `${host}:${port}` : `${sentinel.master} (sentinel)`)
    return yield* opened(() => driver.open(client, settings(name, connectTimeoutMillis)))
  })

/** The nodes over `driver`, connected concurrently. */
export const layer = <Client>(driver: Driver<Client>) =>
(nodes: ReadonlyArray<NodeOptions<Client>>): Layer.Layer<RedisNodes, InvalidOptions> =>
  Layer.effect(
    RedisNodes,
    Effect.flatMap(checked(Options.nodeList(nodes)), (list) => {
      const listedTwice = Address.listedTwice(list)
      return listedTwice === undefined
        ? Effect.forEach(list as ReadonlyArray<NodeOptions<Client>>, make(driver), { concurrency: "unbounded" })
        : Effect.fail(Validate.invalid("nodes", listedTwice))
    })
  )

/** The configuration `layerConfig` reads by default: `REDLOCK_NODES` (comma-separated URLs) and `REDLOCK_PASSWORD`. */
export const defaultConfig: Config.Config<{
  readonly urls: ReadonlyArray<string>
  readonly password: Option.Option<Redacted.Redacted<string>>
}> = Config.all({
  urls: Config.map(Config.String("REDLOCK_NODES"), (list) => list.split(",").map((url) => url.trim())),
  password: Config.option(Config.Redacted("REDLOCK_PASSWORD"))
})

/** The node list from configuration, over `driver`. */
export const layerConfig = <Client>(driver: Driver<Client>) =>
(
  config: Config.Config<{
    readonly urls: ReadonlyArray<string>
    readonly password: Option.Option<Redacted.Redacted<string>>
  }> = defaultConfig
): Layer.Layer<RedisNodes, Config.ConfigError | InvalidOptions> =>
  Layer.unwrap(Effect.gen(function*() {
    const { password, urls } = yield* config
    const nodes: Array<ConnectionOptions> = []
    for (const url of urls) {
      const parsed = fromUrl(url)
      if (Option.isNone(parsed)) {
        return yield* Validate.invalid("REDLOCK_NODES", `not a redis:// URL: "${Options.hidePassword(url)}"`)
      }
      nodes.push({ ...parsed.value, password: parsed.value.password ?? Option.getOrUndefined(password) })
    }
    return layer(driver)(nodes)
  }))
