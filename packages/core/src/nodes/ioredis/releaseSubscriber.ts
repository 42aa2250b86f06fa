/**
 * Release announcements of the ioredis nodes: the subscriber connection is
 * a `duplicate()` of the node's client, handed to the release channels every
 * driver shares (releaseChannels.ts), which decide what it subscribes and
 * when. Nodes whose clients reach a server alike share one connection.
 *
 * @internal
 */
import type { IoredisClient, IoredisSubscriber } from "./client.js"
import * as ReleaseChannels from "../releaseChannels.js"
import { listen } from "../listeners.js"

/**
 * Clients that reach a server alike (address, credentials, key prefix, no
 * TLS settings or only the defaults) share its announcements. Any other
 * client (sentinels, TLS certificates, a custom connector) keeps its own.
 */
const sharingKey = (client: IoredisClient): string | undefined => {
  const { Connector, db, host, keyPrefix, password, path, port, sentinels, tls, username } = client.options
  const defaultTls = tls === undefined || (typeof tls === "object" && Object.keys(tls).length === 0)
  if (!defaultTls || (sentinels !== null && sentinels !== undefined) || Connector !== undefined) return undefined
  return JSON.stringify([
    host,
    port,
    path ?? null,
    username ?? null,
    password ?? null,
    db ?? 0,
    keyPrefix ?? "",
    tls !== undefined
  ])
}

/** The subscriber commands waiting for an answer on the connection shared by clients like `client`, if any. */
export const pendingCommands = (client: IoredisClient): number | undefined => {
  const key = sharingKey(client)
  return key === undefined ? undefined : ReleaseChannels.pendingCommandsOf(key)
}

/** Subscriber connections duplicated from `client`. */
const driver = (client: IoredisClient): ReleaseChannels.Driver => ({
  open: (events) => {
    // No offline queue and nothing sent again after a reconnect: while the
    // server is away or hung nothing piles up (waiters poll), and ioredis does
    // not resubscribe on its own (the release channels do). It connects now
    // whatever the user's client says: a client made with `lazyConnect` would
    // otherwise leave it unconnected for good, and every waiter deaf.
    const subscriber = client.duplicate({
      lazyConnect: false,
      enableOfflineQueue: false,
      autoResubscribe: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0
    })
    return subscriberConnection(subscriber, events)
  },
  isRefusal,
  countsSubscribers: true,
  keyPrefix: client.options.keyPrefix ?? ""
})

/** A subscribing client of the ioredis family (a client's or a cluster client's duplicate) as the release channels use it. */
export const subscriberConnection = (
  subscriber: IoredisSubscriber,
  events: ReleaseChannels.SubscriberEvents
): ReleaseChannels.SubscriberConnection => {
  subscriber.on("error", () => {}) // it reconnects on its own; waiters poll meanwhile
  subscriber.on("message", events.message)
  subscriber.on("close", events.closed)
  subscriber.on("ready", events.ready)
  return {
    isReady: () => subscriber.status === "ready",
    subscribe: (channel) => subscriber.subscribe(channel),
    unsubscribe: (channel) => subscriber.unsubscribe(channel),
    close: () => subscriber.disconnect()
  }
}

/** A reply error (NOPERM, an unknown command) is the server's refusal; anything else is the connection's. */
export const isRefusal = (error: unknown): boolean => error instanceof Error && error.name === "ReplyError"

/**
 * The announcements of the client's server, used until `stop`; the last node
 * to stop closes them, and so does the end of every client that uses them.
 */
export const open = (
  client: IoredisClient
): { readonly channels: ReleaseChannels.ReleaseChannels; readonly stop: () => void } => {
  const use = ReleaseChannels.share(driver(client), sharingKey(client), () => client.status === "end")
  const unlisten = listen(client as never, [["end", use.clientEnded]])
  return {
    channels: use.channels,
    stop: () => {
      unlisten()
      use.leave()
    }
  }
}
