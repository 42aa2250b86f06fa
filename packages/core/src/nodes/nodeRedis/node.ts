/**
 * The node-redis driver: a node over one node-redis client (`redis` 5 or 6),
 * made by us from connection options or the user's own, and its release
 * announcements on a duplicate of it (releaseSubscriber.ts). The node itself
 * is driverNode.ts.
 *
 * A client this module makes fails fast (`disableOfflineQueue`: a command
 * sent while not connected fails at once, and the commands not yet written
 * when a connection drops fail with it instead of going out after the
 * reconnect). Scripts go by EVALSHA through `sendCommand`, never through
 * node-redis's `scripts` option, which answers NOSCRIPT by sending the
 * script again whole after later commands (see loadedScripts.ts). node-redis
 * has one error class for every server error: they are told apart by their
 * code (nodeErrors.ts). Its `timeout` covers only commands not yet written:
 * the engine's per-node timeout is what bounds a node's answer.
 *
 * @internal
 */
import { createClient } from "redis"
import type { Address } from "../address.js"
import { configValue, type Connection } from "../connection.js"
import * as DriverNode from "../driverNode.js"
import { keyPrefixOf, type NodeRedisClient, optionsOf } from "./client.js"
import * as ReleaseSubscriber from "./releaseSubscriber.js"
import { listen } from "../listeners.js"

/**
 * Replies as the node reads them, whatever type mapping the user's client
 * sets (one that maps strings to Buffers would otherwise change every reply).
 */
const plainReplies = { typeMapping: {} }

/** A client of ours for `address`: connecting now, failing fast while not connected. */
export const newClient = (address: Address, connectTimeoutMillis: number): NodeRedisClient => {
  const tls = address.tls === true
    ? { tls: true }
    : typeof address.tls === "object"
    ? { tls: true, ...address.tls }
    : {}
  const client = createClient({
    socket: {
      host: address.host,
      port: address.port,
      connectTimeout: connectTimeoutMillis,
      reconnectStrategy: (retries: number) => Math.min(50 * (retries + 1), 1000),
      ...tls
    } as never,
    ...(address.username === undefined ? {} : { username: address.username }),
    ...(address.password === undefined ? {} : { password: address.password }),
    database: address.db ?? 0,
    // Fail fast when not connected: a queued command would cost the full per-node timeout, and a command
    // written after a reconnect could set a key after we gave up on it.
    disableOfflineQueue: true
  }) as unknown as NodeRedisClient
  // node-redis throws an 'error' event nobody listens to; the node listens once it is open.
  client.on("error", () => {})
  client.connect().catch(() => {})
  return client
}

/** Close a client of ours: politely, at most 1 s (a hung server would hold the shutdown up), then drop it. Never rejects. */
export const closeClient = async (client: NodeRedisClient): Promise<void> => {
  if (client.isReady) {
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([
      client.close().catch(() => {}),
      new Promise<void>((resolve) => void (timer = setTimeout(resolve, 1000)))
    ])
    clearTimeout(timer)
  }
  try {
    client.destroy()
  } catch {
    // Already closed (node-redis 5 throws where 6 does nothing).
  }
}

/** A user's client: the node name it gets by default. */
export const clientName = (client: NodeRedisClient): string => {
  const options = optionsOf(client)
  const socket = options.socket
  if (socket?.path !== undefined) return socket.path
  if (socket?.host !== undefined || socket?.port !== undefined) {
    return `${socket?.host ?? "localhost"}:${socket?.port ?? 6379}`
  }
  const url = options.url
  if (url !== undefined) {
    try {
      const parsed = new URL(url)
      return `${parsed.hostname || "localhost"}:${parsed.port || 6379}`
    } catch {
      // not a URL node-redis would take either
    }
  }
  return "localhost:6379"
}

/**
 * A user's client that was never connected (node-redis clients connect only
 * when told) is connected now: the node could not use it otherwise. It stays
 * the user's to close.
 */
export const connectIfNotOpen = (client: NodeRedisClient): void => {
  if (!client.isOpen) client.connect().catch(() => {})
}

/** The client as a node's connection (connection.ts). */
export const connectionOf = (client: NodeRedisClient): Connection => {
  const send = (args: ReadonlyArray<string>) => client.sendCommand(args, plainReplies)
  const keyPrefix = keyPrefixOf(client)
  const script = (command: string, body: string, keys: ReadonlyArray<string>, args: ReadonlyArray<string | number>) => {
    const words = [command, body, String(keys.length)]
    for (const key of keys) words.push(keyPrefix + key)
    for (const arg of args) words.push(String(arg))
    return send(words)
  }
  return {
    isReady: () => client.isReady,
    follow: (events) => {
      // node-redis has no event of its own for a dropped connection: it reports the error, then reconnects.
      const onError = (error: Error) => {
        if (!client.isReady) events.closed()
        events.error(error)
      }
      return listen(client as never, [["ready", events.ready], ["end", events.closed], ["error", onError]])
    },
    evalsha: (loaded, keys, args) => script("EVALSHA", loaded.sha, keys, args),
    eval: (whole, keys, args) => script("EVAL", whole.lua, keys, args),
    loadScript: (loaded) => send(["SCRIPT", "LOAD", loaded.lua]),
    setIfAbsent: (key, value, ttlMillis) => send(["SET", keyPrefix + key, value, "PX", String(ttlMillis), "NX"]),
    time: () => send(["TIME"]),
    waitForReplicas: (replicas, timeoutMillis) => send(["WAIT", String(replicas), String(timeoutMillis)]).then(Number),
    info: (section) => send(["INFO", section]).then(String),
    configGet: (name) => send(["CONFIG", "GET", name]).then((reply) => configValue(reply, name)),
    // node-redis gathers the commands of a turn into one write itself.
    beforeSend: () => {}
  }
}

/** The node over `client` (driverNode.ts), with its announcements on a duplicate of it. */
export const open = (client: NodeRedisClient, settings: DriverNode.NodeSettings): Promise<DriverNode.OpenNode> =>
  DriverNode.open(connectionOf(client), settings, () => ReleaseSubscriber.open(client))
