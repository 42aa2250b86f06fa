/**
 * The ioredis driver: a node over one client of the ioredis family (ioredis
 * 5 or 6, iovalkey), made by us from connection options or the user's own,
 * and its release announcements on a duplicate of it (releaseSubscriber.ts);
 * or over a cluster client of ours (cluster.ts).
 * The node itself is driverNode.ts. The library is handed in by each public
 * module (`IoredisLibrary`), so that none is loaded but the user's.
 *
 * Connections fail fast: a client this module makes has no offline queue and
 * resends nothing after a reconnect, so a down node answers at once with an
 * `Unavailable` error instead of holding an acquisition up.
 *
 * @internal
 */
import type { Address } from "../address.js"
import type { Connection } from "../connection.js"
import * as DriverNode from "../driverNode.js"
import { type IoredisClient, type IoredisLibrary, userClientProblem } from "./client.js"
import * as Closing from "./closing.js"
import * as Cluster from "./cluster.js"
import * as Commands from "./commands.js"
import * as ReleaseSubscriber from "./releaseSubscriber.js"
import { listen } from "../listeners.js"

/** A client of `library` for `address`, ours: connecting now, failing fast while not connected. */
export const newClient = <Client extends IoredisClient>(
  library: IoredisLibrary<Client>,
  address: Address,
  connectTimeoutMillis: number
): Client =>
  library.newClient({
    ...(address.sentinel === undefined
      ? { host: address.host, port: address.port }
      : {
        sentinels: address.sentinel.sentinels.map(({ host, port }) => ({ host, port })),
        name: address.sentinel.master
      }),
    ...(address.username === undefined ? {} : { username: address.username }),
    ...(address.password === undefined ? {} : { password: address.password }),
    db: address.db ?? 0,
    ...(address.tls === undefined || address.tls === false ? {} : { tls: address.tls === true ? {} : address.tls }),
    connectTimeout: connectTimeoutMillis,
    // Fail fast when not connected: a queued command would cost the full per-node timeout.
    enableOfflineQueue: false,
    // A command resent after a reconnect could set a key after we gave up on it.
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (times: number) => Math.min(50 * times, 1000)
  })

/** A user's client: the node name it gets by default. */
export const clientName = (client: IoredisClient): string => {
  const { host, name, path, port, sentinels } = client.options
  // A client of a Sentinel's master, or over a Unix socket: its host and port are ioredis's defaults, not a server's.
  if (sentinels !== null && sentinels !== undefined && name !== undefined) return `${name} (sentinel)`
  if (path !== undefined && path !== null) return path
  return `${host ?? "127.0.0.1"}:${port ?? 6379}`
}

/**
 * A user's client made with `lazyConnect` and not connected yet would
 * connect on its first command, after the node waited for it in vain: it
 * connects now, as it would for any user's first command.
 */
export const connectIfLazy = (client: IoredisClient): void => {
  if (client.status === "wait") client.connect().catch(() => {})
}

/** The client as a node's connection (connection.ts), its commands built with `library`'s. */
export const connectionOf = (client: IoredisClient, library: IoredisLibrary<IoredisClient>): Connection => {
  const encoded = Commands.encodedEvalsha.usable(client)
  return {
    isReady: () => client.status === "ready",
    follow: (events) => listen(client, [["ready", events.ready], ["close", events.closed], ["error", events.error]]),
    evalsha: encoded
      ? (script, keys, args) =>
        client.sendCommand(Commands.encodedEvalsha.command(library.Command, script, keys, args) as never) as Promise<
          unknown
        >
      : (script, keys, args) => client.evalsha(script.sha, keys.length, ...keys, ...args),
    eval: (script, keys, args) => client.eval(script.lua, keys.length, ...keys, ...args),
    loadScript: (script) => client.script("LOAD", script.lua),
    setIfAbsent: (key, value, ttlMillis) => client.set(key, value, "PX", ttlMillis, "NX"),
    time: () => client.time(),
    waitForReplicas: (replicas, timeoutMillis) => client.wait(replicas, timeoutMillis),
    info: (section) => client.info(section),
    // RESP2 answers [name, value]; RESP3 (ioredis 6) a map, which ioredis gives as the same pairs or an object.
    configGet: (name) =>
      client.config("GET", name).then((reply: unknown) =>
        Array.isArray(reply) ? reply[1] as string | undefined : (reply as Record<string, string> | null)?.[name]
      ),
    beforeSend: Commands.writeBatcher(client)
  }
}

/** The node over `client` of `library` (driverNode.ts), with its announcements on a duplicate of it. */
export const open = (
  library: IoredisLibrary<IoredisClient>,
  client: IoredisClient,
  settings: DriverNode.NodeSettings
): Promise<DriverNode.OpenNode> =>
  DriverNode.open(connectionOf(client, library), settings, () => ReleaseSubscriber.open(client))

/**
 * The driver over `library` (ioredis or iovalkey), as each line's driver
 * modules take it (internal/driverNodes.ts). A user's client may be a
 * cluster client of the library: the node is then the whole cluster (cluster.ts).
 */
export const driverOf = <Client extends IoredisClient, UserCluster extends Cluster.IoredisCluster>(
  library: IoredisLibrary<Client>
) => ({
  newClient: (address: Address, connectTimeoutMillis: number): Client | UserCluster =>
    newClient(library, address, connectTimeoutMillis),
  closeClient: (client: Client | UserCluster): Promise<void> => Closing.close(client),
  clientName: (client: Client | UserCluster): string =>
    Cluster.isCluster(client) ? Cluster.clusterName(client) : clientName(client),
  connectUserClient: (client: Client | UserCluster): void =>
    Cluster.isCluster(client) ? Cluster.connectIfLazy(client) : connectIfLazy(client),
  userClientProblem: (client: unknown): string | undefined => userClientProblem(client, library.name),
  sentinels: true,
  isCluster: (client: Client | UserCluster): boolean => Cluster.isCluster(client),
  open: (client: Client | UserCluster, settings: DriverNode.NodeSettings): Promise<DriverNode.OpenNode> =>
    Cluster.isCluster(client) ? Cluster.open(client, settings) : open(library, client, settings),
  openCluster: (address: Address, connectTimeoutMillis: number, settings: DriverNode.NodeSettings) =>
    Cluster.openNew(library.newCluster, address, connectTimeoutMillis, settings)
})
