/**
 * A Redis Cluster as one node, over the `Cluster` client of the ioredis
 * family (ioredis, iovalkey). Each resource's keys share one hash slot
 * (clusterKeys.ts), so each lock operation is one script on the one master
 * that holds the slot; the cluster is one Redlock node, and as safe as one:
 * a failover may promote a replica that never received a key.
 *
 * The server run (for the restart quarantine) is the run of every master
 * together: a master that restarts or is replaced changes it, and the whole
 * node abstains as a restarted server does, whichever slots that master held
 * (the client cannot tell which resources it lost). Scripts are loaded on
 * every master. Release announcements go over a duplicate of the cluster
 * client: cluster pub/sub reaches every node, and the client's subscriber
 * moves to another node, with its channels, when its node goes away.
 *
 * @internal
 */
import type { Listener } from "../listeners.js"
import type { Address } from "../address.js"
import * as ClusterKeys from "../clusterKeys.js"
import type { Connection, ConnectionEvents } from "../connection.js"
import * as DriverNode from "../driverNode.js"
import * as ReleaseChannels from "../releaseChannels.js"
import * as ServerRun from "../serverRun.js"
import type { IoredisClient } from "./client.js"
import * as Closing from "./closing.js"
import * as ReleaseSubscriber from "./releaseSubscriber.js"
import { listen, type Listeners } from "../listeners.js"

/** A cluster client of the ioredis family, as the driver uses it. */
export interface IoredisCluster {
  readonly isCluster: boolean
  readonly status: string
  readonly options?: { readonly keyPrefix?: string | undefined }
  on(event: string, listener: Listener): unknown
  off(event: string, listener: Listener): unknown
  /** The client of each node of the cluster, as the client knows them now. */
  nodes(role: "master"): ReadonlyArray<IoredisClient>
  connect(): Promise<unknown>
  quit(): Promise<unknown>
  disconnect(reconnect?: boolean): void
  duplicate(
    startupNodes?: Array<never>,
    options?: { readonly enableOfflineQueue?: boolean; readonly lazyConnect?: boolean }
  ): IoredisCluster
  eval(script: string, numkeys: number, ...args: Array<string | number>): Promise<unknown>
  evalsha(sha: string, numkeys: number, ...args: Array<string | number>): Promise<unknown>
  set(key: string, value: string, px: "PX", milliseconds: number, nx: "NX"): Promise<string | null>
  subscribe(channel: string): Promise<unknown>
  unsubscribe(channel: string): Promise<unknown>
}

/** The options the driver makes its cluster clients with. */
export interface NewClusterOptions {
  readonly enableOfflineQueue: false
  readonly clusterRetryStrategy: (times: number) => number
  /** Retries that would send a command again later, out of order with the commands sent after it: off. */
  readonly retryDelayOnFailover: 0
  readonly retryDelayOnClusterDown: 0
  readonly maxRedirections: number
  readonly slotsRefreshTimeout: number
  readonly slotsRefreshInterval: number
  readonly redisOptions: {
    readonly username?: string
    readonly password?: string
    readonly tls?: object
    readonly connectTimeout: number
    readonly autoResendUnfulfilledCommands: false
    readonly maxRetriesPerRequest: 0
  }
}

/** How a library makes its cluster clients. */
export type NewCluster = (
  nodes: ReadonlyArray<{ readonly host: string; readonly port: number }>,
  options: NewClusterOptions
) => IoredisCluster

/** A cluster client of ours for `address.cluster`: connecting now, failing fast while not connected. */
export const newCluster = (newClusterOf: NewCluster, address: Address, connectTimeoutMillis: number): IoredisCluster =>
  newClusterOf(address.cluster?.nodes ?? [{ host: address.host, port: address.port }], {
    enableOfflineQueue: false,
    clusterRetryStrategy: (times) => Math.min(50 * times, 1000),
    retryDelayOnFailover: 0,
    retryDelayOnClusterDown: 0,
    // A MOVED or ASK reply means the command did not run: following a few is safe.
    maxRedirections: 4,
    slotsRefreshTimeout: connectTimeoutMillis,
    // How soon a master that went away is looked for again (followCluster).
    slotsRefreshInterval: 1000,
    redisOptions: {
      ...(address.username === undefined ? {} : { username: address.username }),
      ...(address.password === undefined ? {} : { password: address.password }),
      ...(address.tls === undefined || address.tls === false ? {} : { tls: address.tls === true ? {} : address.tls }),
      connectTimeout: connectTimeoutMillis,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0
    }
  })

/** Whether a client the user hands in is a cluster client (ioredis and iovalkey mark theirs). */
export const isCluster = (client: object): client is IoredisCluster =>
  (client as { readonly isCluster?: unknown }).isCluster === true

/**
 * A user's cluster client: the node name it gets by default, from the first
 * node it was made with (a field the libraries keep private but set, read
 * as a plain object's), as the `cluster` option's nodes are named.
 */
export const clusterName = (cluster: IoredisCluster): string => {
  const [first] = (cluster as { readonly startupNodes?: ReadonlyArray<unknown> }).startupNodes ?? []
  const address = typeof first === "string"
    ? first
    : typeof first === "number"
    ? `127.0.0.1:${first}`
    : typeof first === "object" && first !== null
    ? `${(first as { host?: string }).host ?? "127.0.0.1"}:${(first as { port?: number }).port ?? 6379}`
    : undefined
  return address === undefined ? "cluster" : `${address} (cluster)`
}

/** A user's cluster client made with `lazyConnect` and not connected yet is connected now, as its first command would. */
export const connectIfLazy = (cluster: IoredisCluster): void => {
  if (cluster.status === "wait") cluster.connect().catch(() => {})
}

/** Every master's answer to `ask`, once the client knows the cluster's masters. */
const everyMaster = <A>(cluster: IoredisCluster, ask: (master: IoredisClient) => Promise<A>): Promise<Array<A>> => {
  const masters = cluster.nodes("master")
  return masters.length === 0
    ? Promise.reject(new Error("Cluster isn't ready: no master known yet"))
    : Promise.all(masters.map(ask))
}

/**
 * The masters' `INFO` as the server run reads one server's (serverRun.ts):
 * `server`: the run ids together, the youngest master's uptime; `persistence`:
 * AOF only when every master has it; `memory`: a master's that may evict keys, if any.
 */
const combinedInfo = (cluster: IoredisCluster, section: string): Promise<string> =>
  everyMaster(cluster, (master) => master.info(section)).then((replies) => {
    if (section === "server") {
      const runs = replies.map(ServerRun.parseInfo)
      if (runs.some((run) => run === undefined)) return ""
      const known = runs as ReadonlyArray<{ readonly id: string; readonly uptimeSeconds: number }>
      return `run_id:${known.map((run) => run.id).sort().join(",")}\r\n` +
        `uptime_in_seconds:${Math.min(...known.map((run) => run.uptimeSeconds))}\r\n`
    }
    // One master that may evict keys is enough for the node to.
    if (section === "memory") {
      return replies.find((reply) => ServerRun.evictionOf(reply) !== undefined) ?? replies[0] ?? ""
    }
    const aof = replies.map((reply) => /^aof_enabled:(\d)/m.exec(reply)?.[1])
    if (aof.some((enabled) => enabled === undefined)) return ""
    return `aof_enabled:${aof.every((enabled) => enabled === "1") ? 1 : 0}\r\n`
  })

/** The masters' `CONFIG GET` value: theirs when they all agree, else the first that differs from `always`. */
const combinedConfig = (cluster: IoredisCluster, name: string): Promise<string | undefined> =>
  everyMaster(
    cluster,
    (master) =>
      master.config("GET", name).then((reply: unknown) =>
        Array.isArray(reply) ? reply[1] as string | undefined : (reply as Record<string, string> | null)?.[name]
      )
  ).then(
    (values) => values.find((value) => value !== "always") ?? values[0]
  )

/**
 * The cluster's life as one connection's: ready when the cluster client is,
 * again whenever a master connects, and closed whenever any master's
 * connection closes, so that the server run is read again over every master.
 * A change of the set of masters (a failover, a master added) is a close and
 * a ready: a failover's new master may come while the old one's connection
 * stays open (a partition that drops no socket), and must still be taken
 * for another server than before (serverRun.ts).
 */
const followCluster = (cluster: IoredisCluster, events: ConnectionEvents): () => void => {
  const followed = new Map<IoredisClient, () => void>()
  // A master's connection closed, and not every master is connected again since.
  let lost = false
  const onMasterClose = () => {
    lost = true
    events.closed()
  }
  const onMasterReady = () => {
    if (cluster.status !== "ready") return
    if (cluster.nodes("master").every((client) => client.status === "ready")) lost = false
    events.ready()
  }
  const follow = (client: IoredisClient) => {
    if (followed.has(client)) return
    followed.set(client, listen(client, [["ready", onMasterReady], ["close", onMasterClose]]))
  }
  const unfollow = (client: IoredisClient) => {
    followed.get(client)?.()
    followed.delete(client)
  }
  let masters = ""
  const mastersNow = () =>
    cluster.nodes("master").map((client) => client.options.port + "@" + client.options.host).sort().join(",")
  const onRefresh = () => {
    const now = mastersNow()
    if (now !== masters) {
      masters = now
      events.closed()
      onMasterReady()
    }
    // The client connects to a master only for a command that goes there: a
    // master that went away is connected again at the next refresh, so that
    // its run is read again at once.
    if (lost) {
      for (const client of cluster.nodes("master")) if (client.status === "wait") client.connect().catch(() => {})
    }
  }
  const onReady = () => {
    masters = mastersNow()
    events.ready()
  }
  const listeners: Listeners = [
    ["+node", follow],
    ["-node", unfollow],
    ["refresh", onRefresh],
    ["ready", onReady],
    ["close", events.closed],
    ["error", events.error]
  ]
  cluster.nodes("master").forEach(follow)
  const unlisten = listen(cluster, listeners)
  return () => {
    unlisten()
    for (const client of [...followed.keys()]) unfollow(client)
  }
}

/** The cluster client as a node's connection (connection.ts). */
export const connectionOf = (cluster: IoredisCluster): Connection => ({
  isReady: () => cluster.status === "ready",
  follow: (events) => followCluster(cluster, events),
  // The client sends each to the master of the first key's slot.
  evalsha: (script, keys, args) => cluster.evalsha(script.sha, keys.length, ...keys, ...args),
  eval: (script, keys, args) => cluster.eval(script.lua, keys.length, ...keys, ...args),
  loadScript: (script) => everyMaster(cluster, (master) => master.script("LOAD", script.lua)),
  setIfAbsent: (key, value, ttlMillis) => cluster.set(key, value, "PX", ttlMillis, "NX"),
  waitForReplicas: () => Promise.reject(new Error("WAIT is not available on cluster nodes")),
  info: (section) => combinedInfo(cluster, section),
  configGet: (name) => combinedConfig(cluster, name),
  // No `time`: a TIME would reach any master, not the vote's, so a cluster node reads no clock.
  beforeSend: writeBatcher(cluster)
})

/** As the plain node's (commands.ts writeBatcher): one turn's writes to each master gathered into one. */
const writeBatcher = (cluster: IoredisCluster): () => void => {
  let corked: ReadonlyArray<NonNullable<IoredisClient["stream"]>> | undefined
  return () => {
    if (corked !== undefined) return
    const streams = cluster.nodes("master").flatMap((client) => client.stream?.writable === true ? [client.stream] : [])
    streams.forEach((stream) => stream.cork())
    corked = streams
    process.nextTick(() => {
      corked = undefined
      streams.forEach((stream) => stream.uncork())
    })
  }
}

/**
 * Release announcements over a duplicate of the cluster client, closed with
 * them: connecting now whatever the user's client says, queueing nothing.
 */
const releases = (cluster: IoredisCluster): DriverNode.Releases => {
  const use = ReleaseChannels.share(
    {
      open: (events) =>
        ReleaseSubscriber.subscriberConnection(
          cluster.duplicate([], { enableOfflineQueue: false, lazyConnect: false }),
          events
        ),
      isRefusal: ReleaseSubscriber.isRefusal,
      countsSubscribers: false,
      keyPrefix: cluster.options?.keyPrefix ?? ""
    },
    undefined,
    () => cluster.status === "end"
  )
  return { channels: use.channels, stop: use.leave }
}

/** The node over `cluster` (driverNode.ts), its keys made cluster keys (clusterKeys.ts). */
export const open = async (
  cluster: IoredisCluster,
  settings: DriverNode.NodeSettings
): Promise<DriverNode.OpenNode> => {
  const opened = await DriverNode.open(connectionOf(cluster), settings, () => releases(cluster))
  return { node: ClusterKeys.onCluster(opened.node, settings.makeError), close: opened.close }
}

/** A cluster client of ours for `address` and the node over it; closing the node closes the client too. */
export const openNew = async (
  newClusterOf: NewCluster,
  address: Address,
  connectTimeoutMillis: number,
  settings: DriverNode.NodeSettings
): Promise<DriverNode.OpenNode> => {
  const cluster = newCluster(newClusterOf, address, connectTimeoutMillis)
  const opened = await open(cluster, settings)
  return {
    node: opened.node,
    close: () => opened.close().then(() => Closing.close(cluster))
  }
}
