/**
 * Release announcements of the node-redis nodes: the subscriber connection
 * is a duplicate of the node's client, handed to the release channels every
 * driver shares (releaseChannels.ts). Nodes whose clients reach a server
 * alike share one connection.
 *
 * node-redis subscribes its channels again by itself after a reconnect,
 * before it reports the connection ready; the release channels then
 * subscribe the keys still watched, which node-redis answers at once.
 *
 * @internal
 */
import * as ReleaseChannels from "../releaseChannels.js"
import { keyPrefixOf, type NodeRedisClient, optionsOf } from "./client.js"
import { listen } from "../listeners.js"

/**
 * Clients that reach a server alike (address, username and password,
 * database, key prefix, no TLS settings beyond on or off, no credentials
 * provider of the user's) share its announcements; any other keeps its own.
 */
const sharingKey = (client: NodeRedisClient): string | undefined => {
  const options = optionsOf(client)
  // node-redis turns a username and password into a credentials provider of its own; any other provider
  // (tokens that rotate) may log in differently each time.
  const ownCredentials = options.username !== undefined || options.password !== undefined
  if (options.credentialsProvider !== undefined && !ownCredentials) return undefined
  const { connectTimeout: _t, host, path, port, reconnectStrategy: _r, tls, ...otherSocket } = options.socket ?? {}
  if (Object.keys(otherSocket).length > 0) return undefined
  return JSON.stringify([
    "node-redis",
    options.url ?? null,
    host ?? null,
    port ?? null,
    path ?? null,
    options.username ?? null,
    options.password ?? null,
    options.database ?? 0,
    tls === true,
    keyPrefixOf(client)
  ])
}

/** Whether `error` is a reply of the server (node-redis's ErrorReply and its kinds), not a failure of the connection. */
const isServerReply = (error: unknown): boolean => {
  for (let prototype = Object.getPrototypeOf(error); prototype !== null; prototype = Object.getPrototypeOf(prototype)) {
    if (prototype.constructor?.name === "ErrorReply") return true
  }
  return false
}

/** Subscriber connections duplicated from `client`. */
const driver = (client: NodeRedisClient): ReleaseChannels.Driver => ({
  open: (events) => {
    // No offline queue: while the server is away nothing piles up (waiters poll).
    const subscriber = client.duplicate({ disableOfflineQueue: true })
    const onMessage = (message: string, channel: string) => events.message(channel, message)
    // It reconnects on its own; waiters poll meanwhile. A dropped connection shows as an error while not ready.
    subscriber.on("error", () => {
      if (!subscriber.isReady) events.closed()
    })
    subscriber.on("end", events.closed)
    subscriber.on("ready", events.ready)
    subscriber.connect().catch(() => {})
    return {
      isReady: () => subscriber.isReady,
      subscribe: (channel) => subscriber.SUBSCRIBE(channel, onMessage),
      unsubscribe: (channel) => subscriber.UNSUBSCRIBE(channel, onMessage),
      close: () => {
        try {
          subscriber.destroy()
        } catch {
          // already closed
        }
      }
    }
  },
  isRefusal: isServerReply,
  countsSubscribers: true,
  keyPrefix: keyPrefixOf(client)
})

/**
 * The announcements of the client's server, used until `stop`; the last node
 * to stop closes them, and so does the end of every client that uses them.
 */
export const open = (
  client: NodeRedisClient
): { readonly channels: ReleaseChannels.ReleaseChannels; readonly stop: () => void } => {
  const use = ReleaseChannels.share(driver(client), sharingKey(client), () => !client.isOpen)
  const unlisten = listen(client as never, [["end", use.clientEnded]])
  return {
    channels: use.channels,
    stop: () => {
      unlisten()
      use.leave()
    }
  }
}
