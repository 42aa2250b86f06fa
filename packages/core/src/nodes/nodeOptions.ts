/**
 * A node from a user's options, whatever the driver and the front end: the
 * connection options or the user's own client, their checks, and the node
 * opened over a driver (ioredis, iovalkey, node-redis: each folder's
 * `node.ts`). The front ends wrap `open` in their own resource handling
 * (an Effect scope, the plain manager's `close()`).
 *
 * @internal
 */
import type * as Tls from "node:tls"
import type { MakeNodeError } from "../engine/node.js"
import * as Options from "../engine/options.js"
import { Problem } from "../engine/options.js"
import type { Address } from "./address.js"
import * as Addresses from "./address.js"
import type * as DriverNode from "./driverNode.js"

/**
 * Where a node is and how to log in: the password as the front end holds it
 * (a string, or an Effect `Redacted`), durations as it reads them.
 */
export interface ConnectionOptions<Password = string, Millis = unknown> {
  /** `redis://[user:password@]host[:port][/db]` or `rediss://...`; the other fields override its parts. */
  readonly url?: string | undefined
  readonly host?: string | undefined
  readonly port?: number | undefined
  readonly username?: string | undefined
  readonly password?: Password | undefined
  readonly db?: number | undefined
  /** `true` for TLS with Node's defaults, or Node's TLS options. */
  readonly tls?: boolean | Tls.ConnectionOptions | undefined
  /**
   * How long the layer waits for the first connection (and the server's
   * `INFO server`, for the restart quarantine) before going on without it.
   * Default 1 second.
   */
  readonly connectTimeout?: Millis | undefined
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
   * Read the server's clock (`TIME`) with each vote, and once a second
   * between them: a server whose clock is seen to jump forward may have let
   * a held key expire early (docs/safety.md), so it sits out the restart
   * quarantine from then, durable or not. One command more per vote; turn it
   * off to spare it where servers' clocks are trusted not to step. Default `true`.
   */
  readonly watchClock?: boolean | undefined
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
  readonly waitForReplicas?: { readonly replicas: number; readonly timeout: Millis } | undefined
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
export interface ClientOptions<Client, Millis = unknown> {
  readonly client: Client
  readonly name?: string | undefined
  /** See {@link defaultMaxPendingCommands}. */
  readonly maxPendingCommands?: number | undefined
  /** See {@link ConnectionOptions.durable}. */
  readonly durable?: boolean | undefined
  /** See {@link ConnectionOptions.watchClock}. */
  readonly watchClock?: boolean | undefined
  /** See {@link ConnectionOptions.waitForReplicas}. */
  readonly waitForReplicas?: ConnectionOptions<never, Millis>["waitForReplicas"]
}

/**
 * How many commands of a node may wait for their answer at once, by default.
 * A server that stops answering keeps its connection open: past this many, a
 * new command fails at once as `Unavailable` without being sent, so that a
 * hung node costs bounded memory and no time.
 */
export const defaultMaxPendingCommands = 1000

/** How one driver makes, names and closes its clients, and opens a node over one. */
export interface Driver<Client> {
  /** A client of ours: connecting now, failing fast while not connected (GLIDE makes its clients asynchronously). */
  readonly newClient: (address: Address, connectTimeoutMillis: number) => Client | Promise<Client>
  /** Close a client of ours; never rejects. */
  readonly closeClient: (client: Client) => Promise<void>
  /** A user's client: the node name it gets by default. */
  readonly clientName: (client: Client) => string
  /** A user's client not connecting yet is connected now, as its first command would. */
  readonly connectUserClient: (client: Client) => void
  /** Why a user's `client` cannot serve a node; `undefined`: it can. */
  readonly userClientProblem: (client: unknown) => string | undefined
  /** Whether its clients can follow a Sentinel (the `sentinel` option). */
  readonly sentinels: boolean
  /** Whether a user's client is a cluster client (the node is then the whole cluster); none: never. */
  readonly isCluster?: (client: Client) => boolean
  readonly open: (client: Client, settings: DriverNode.NodeSettings) => Promise<DriverNode.OpenNode>
  /** A Redis Cluster as one node over a client of ours that the node's `close` closes; none: not served. */
  readonly openCluster?: (
    address: Address,
    connectTimeoutMillis: number,
    settings: DriverNode.NodeSettings
  ) => Promise<DriverNode.OpenNode>
}

/** A node's options checked: how to open it, with nothing opened yet. */
export interface CheckedNode<Client> {
  readonly name: string
  readonly connectTimeoutMillis: number
  readonly maxPendingCommands: number
  readonly durable: boolean
  readonly watchClock: boolean
  readonly replicas: DriverNode.NodeSettings["replicas"]
  /** The user's client (left open), or the address of a connection of ours. */
  readonly target:
    | { readonly _tag: "UserClient"; readonly client: Client }
    | { readonly _tag: "Connection"; readonly address: Address }
    | { readonly _tag: "Cluster"; readonly address: Address }
}

/** What a front end reads of a node option that is not plain (a password held by an Effect `Redacted`). */
export interface Readers {
  readonly millis: Options.ReadMillis
  readonly password: (input: unknown) => string | undefined
}

const withoutUndefined = <A extends object>(a: A): Partial<A> =>
  Object.fromEntries(Object.entries(a).filter(([, value]) => value !== undefined)) as Partial<A>

/** A plain option of the wrong kind, from JavaScript without types (`name`, `username`, `db`, `tls`). */
const wrongKindOf = (given: Record<string, unknown>): Problem | undefined => {
  for (const option of ["name", "username"]) {
    const value = given[option]
    if (value !== undefined && typeof value !== "string") {
      return new Problem(option, `expected a string, got ${Options.describe(value)}`)
    }
  }
  const { db, tls } = given
  if (db !== undefined && !(typeof db === "number" && Number.isSafeInteger(db) && db >= 0)) {
    return new Problem("db", `expected a database number, 0 or more; got ${Options.describe(db)}`)
  }
  if (tls !== undefined && typeof tls !== "boolean" && (typeof tls !== "object" || tls === null)) {
    return new Problem("tls", `expected true, false or TLS options (an object); got ${Options.describe(tls)}`)
  }
  return undefined
}

/** A node's options checked against `driver`, before any connection is opened. */
export const check = <Client>(
  driver: Driver<Client>,
  input: unknown,
  read: Readers
): CheckedNode<Client> | Problem => {
  const entry = Options.nodeEntry(input)
  if (entry instanceof Problem) return entry
  const given = entry as ConnectionOptions<unknown> & Partial<ClientOptions<unknown>>
  const maxPendingCommands = Options.positiveCount(
    "maxPendingCommands",
    given.maxPendingCommands ?? defaultMaxPendingCommands
  )
  if (maxPendingCommands instanceof Problem) return maxPendingCommands
  const durable = Options.flag("durable", given.durable ?? false)
  if (durable instanceof Problem) return durable
  const replicas = Options.waitForReplicas(given.waitForReplicas, read.millis)
  if (replicas instanceof Problem) return replicas
  const watchClock = Options.flag("watchClock", given.watchClock ?? true)
  if (watchClock instanceof Problem) return watchClock
  const common = { maxPendingCommands, durable, watchClock, replicas }
  const wrongKind = wrongKindOf(entry as Record<string, unknown>)
  if (wrongKind !== undefined) return wrongKind
  if ("client" in given) {
    const client = given.client as Client
    const problem = driver.userClientProblem(client)
    if (problem !== undefined) return new Problem("client", problem)
    if (replicas !== undefined && driver.isCluster?.(client) === true) {
      return new Problem("waitForReplicas", "not available on cluster nodes")
    }
    const name = given.name ?? driver.clientName(client)
    return { ...common, name, connectTimeoutMillis: 1000, target: { _tag: "UserClient", client } }
  }
  let options = given
  let urlPassword: string | undefined
  if (given.url !== undefined) {
    const parsed = typeof given.url === "string" ? Addresses.parseUrl(given.url) : undefined
    if (parsed === undefined) {
      return new Problem("url", `not a redis:// URL: "${Options.hidePassword(String(given.url))}"`)
    }
    urlPassword = parsed.password
    options = { ...parsed, ...withoutUndefined(given) }
  }
  const sentinel = Options.sentinel(options.sentinel)
  if (sentinel instanceof Problem) return sentinel
  if (sentinel !== undefined && !driver.sentinels) {
    return new Problem("sentinel", "these nodes cannot follow a Sentinel: use ioredis or iovalkey nodes")
  }
  const cluster = Options.cluster(options)
  if (cluster instanceof Problem) return cluster
  if (cluster !== undefined && driver.openCluster === undefined) {
    return new Problem("cluster", "these nodes cannot reach a Redis Cluster: use ioredis or iovalkey nodes")
  }
  const host = Options.host(options.host ?? "127.0.0.1")
  if (host instanceof Problem) return host
  const port = Options.port(options.port ?? 6379)
  if (port instanceof Problem) return port
  const connectTimeoutMillis = Options.millis("connectTimeout", options.connectTimeout ?? 1000, read.millis)
  if (connectTimeoutMillis instanceof Problem) return connectTimeoutMillis
  // The URL's password is text; one given beside it overrides it, as a string or as the front end holds it.
  const givenPassword = given.password === undefined
    ? undefined
    : typeof given.password === "string"
    ? given.password
    : read.password(given.password)
  if (given.password !== undefined && givenPassword === undefined) {
    return new Problem("password", `expected a string or a Redacted string, got ${Options.describe(given.password)}`)
  }
  const password = givenPassword ?? urlPassword
  const address: Address = {
    host,
    port,
    username: options.username,
    password,
    db: options.db,
    tls: options.tls,
    sentinel,
    cluster
  }
  if (cluster !== undefined) {
    const first = cluster.nodes[0]
    const name = options.name ?? `${first.host}:${first.port} (cluster)`
    return { ...common, name, connectTimeoutMillis, target: { _tag: "Cluster", address } }
  }
  const name = options.name ?? (sentinel === undefined ? `${host}:${port}` : `${sentinel.master} (sentinel)`)
  return { ...common, name, connectTimeoutMillis, target: { _tag: "Connection", address } }
}

/** An opened node, and how to close it: the node first, then a connection of ours (a user's client stays open). */
export interface Opened {
  readonly node: DriverNode.OpenNode["node"]
  readonly close: () => Promise<void>
}

/** Open a checked node over `driver`; its errors are made by `makeError`, its times read on `now`. */
export const open = async <Client>(
  driver: Driver<Client>,
  checked: CheckedNode<Client>,
  makeError: MakeNodeError,
  now: () => number
): Promise<Opened> => {
  const settings: DriverNode.NodeSettings = {
    name: checked.name,
    maxPendingCommands: checked.maxPendingCommands,
    durable: checked.durable,
    watchClock: checked.watchClock,
    replicas: checked.replicas,
    connectTimeoutMillis: checked.connectTimeoutMillis,
    makeError,
    now
  }
  const { target } = checked
  switch (target._tag) {
    case "UserClient": {
      driver.connectUserClient(target.client)
      return driver.open(target.client, settings)
    }
    case "Cluster":
      return driver.openCluster!(target.address, checked.connectTimeoutMillis, settings)
    case "Connection": {
      const client = await driver.newClient(target.address, checked.connectTimeoutMillis)
      const opened = await driver.open(client, settings).catch(async (error: unknown) => {
        await driver.closeClient(client)
        throw error
      })
      return {
        node: opened.node,
        close: async () => {
          await opened.close()
          await driver.closeClient(client)
        }
      }
    }
  }
}

/** Why a node list is no list, or lists one server twice; `undefined`: neither. */
export const listProblem = (input: unknown, expected?: string): Problem | undefined => {
  const list = Options.nodeList(input, expected)
  if (list instanceof Problem) return list
  const twice = Addresses.listedTwice(list)
  return twice === undefined ? undefined : new Problem("nodes", twice)
}

/** Connection options from a `redis://` or `rediss://` URL, its password made the front end's by `secret`; `undefined`: not one. */
export const fromUrl = <Password, Millis>(
  url: string,
  secret: (password: string) => Password
): ConnectionOptions<Password, Millis> | undefined => {
  const address = Addresses.parseUrl(url)
  if (address === undefined) return undefined
  const { password, ...rest } = address
  return { ...rest, password: password === undefined ? undefined : secret(password) }
}

/**
 * The nodes `REDLOCK_NODES` lists (its URLs), each with `password` where its
 * URL has none; the problem of the first that is not a `redis://` URL (its
 * password hidden).
 */
export const fromUrls = <Password, Millis>(
  urls: ReadonlyArray<string>,
  password: Password | undefined,
  secret: (password: string) => Password
): ReadonlyArray<ConnectionOptions<Password, Millis>> | Problem => {
  const nodes: Array<ConnectionOptions<Password, Millis>> = []
  for (const url of urls) {
    const parsed = fromUrl<Password, Millis>(url, secret)
    if (parsed === undefined) return new Problem("REDLOCK_NODES", `not a redis:// URL: "${Options.hidePassword(url)}"`)
    nodes.push({ ...parsed, password: parsed.password ?? password })
  }
  return nodes
}
