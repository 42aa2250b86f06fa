/**
 * Release announcements of the GLIDE nodes: a GLIDE client of ours, made
 * from the node's client's own configuration (its addresses, credentials,
 * database and TLS; GLIDE keeps it on the client) with a message callback,
 * subscribing to each watched key's channel as the release channels ask
 * (releaseChannels.ts). A user's client is never subscribed: its messages
 * would go to the user's callback or queue. Nodes whose clients reach a
 * server alike share one subscriber.
 *
 * GLIDE subscribes its channels again by itself after a reconnect and tells
 * nobody of either: the subscriber's connection is asked its `CLIENT ID`
 * every second, and a change or a failure is told as closed (messages may
 * have been lost: waiters try again), then ready. A SUBSCRIBE the server
 * refuses (an ACL without pub/sub) is never answered to GLIDE: one not
 * confirmed within a second counts as refused, and is taken back; waiters
 * then poll.
 *
 * @internal
 */
import { Decoder, GlideClient as Glide } from "@valkey/valkey-glide"
import * as ReleaseChannels from "../releaseChannels.js"
import { configurationOf, type GlideClient, type GlideSubscriber } from "./client.js"

/** How long a SUBSCRIBE or UNSUBSCRIBE may go unconfirmed. */
const confirmWithinMillis = 1000

/** How often the subscriber's connection is asked whether it is still the same one. */
const heartbeatMillis = 1000

/** A SUBSCRIBE not confirmed in time: refused, as far as the release channels are concerned. */
class SubscribeRefused extends Error {}

/** The subscriber's configuration: the node client's, with our callback, text replies and no subscriptions yet. */
const subscriberConfiguration = (client: GlideClient, onMessage: (channel: string, message: string) => void) => {
  const config = configurationOf(client)
  if (config === undefined) throw new Error("this GLIDE client keeps no configuration to make a subscriber from")
  const { pubsubSubscriptions: _subscriptions, clientName: _name, readFrom: _readFrom, ...rest } = config
  return {
    ...rest,
    lazyConnect: true,
    defaultDecoder: Decoder.String,
    pubsubSubscriptions: {
      channelsAndPatterns: {},
      callback: (message: { readonly channel: unknown; readonly message: unknown }) =>
        onMessage(String(message.channel), String(message.message))
    }
  }
}

/**
 * Clients whose configurations reach a server alike (addresses, credentials
 * by password, database, TLS on or off without settings of their own) share
 * a subscriber; any other (IAM tokens, TLS certificates) keeps its own.
 */
const sharingKey = (client: GlideClient): string | undefined => {
  const config = configurationOf(client)
  if (config === undefined || config.credentials?.iamConfig !== undefined) return undefined
  const advanced = config.advancedConfiguration as { readonly tlsAdvancedConfiguration?: unknown } | undefined
  if (advanced?.tlsAdvancedConfiguration !== undefined) return undefined
  return JSON.stringify([
    "glide",
    (config.addresses ?? []).map((address) => [address.host ?? "localhost", address.port ?? 6379]),
    config.credentials?.username ?? null,
    config.credentials?.password ?? null,
    config.databaseId ?? 0,
    config.useTLS === true
  ])
}

/** Subscriber clients made from `client`'s configuration. */
const driver = (client: GlideClient): ReleaseChannels.Driver => ({
  open: (events) => {
    const configuration = subscriberConfiguration(client, events.message)
    let subscriber: GlideSubscriber | undefined
    let ready = false
    let closed = false
    let lastId: unknown
    let heartbeat: ReturnType<typeof setTimeout> | undefined
    const beat = () => {
      heartbeat = undefined
      if (closed || subscriber === undefined) return
      subscriber.customCommand(["CLIENT", "ID"]).then(
        (id) => {
          if (closed) return
          if (ready && id !== lastId) {
            ready = false
            events.closed()
          }
          lastId = id
          if (!ready) {
            ready = true
            events.ready()
          }
          heartbeatLater()
        },
        () => {
          if (closed) return
          if (ready) {
            ready = false
            events.closed()
          }
          heartbeatLater()
        }
      )
    }
    const heartbeatLater = () => {
      heartbeat = setTimeout(beat, heartbeatMillis)
      heartbeat.unref?.()
    }
    Glide.createClient(configuration as never).then(
      (made) => {
        if (closed) return void made.close()
        subscriber = made as unknown as GlideSubscriber
        beat()
      },
      () => {
        // Not made (a configuration GLIDE refuses): never ready, so waiters poll.
      }
    )
    const refusedIfUnconfirmed = (channel: string) => (cause: unknown) => {
      if (!(cause instanceof Error) || cause.name !== "TimeoutError") throw cause
      // GLIDE would keep asking for it: taken back.
      subscriber?.unsubscribe([channel], confirmWithinMillis).catch(() => {})
      throw new SubscribeRefused(`SUBSCRIBE ${channel} not confirmed within ${confirmWithinMillis} ms`)
    }
    return {
      isReady: () => ready,
      subscribe: (channel) =>
        subscriber === undefined
          ? Promise.reject(new Error("not connected"))
          : subscriber.subscribe([channel], confirmWithinMillis).catch(refusedIfUnconfirmed(channel)),
      unsubscribe: (channel) =>
        subscriber === undefined ? Promise.resolve() : subscriber.unsubscribe([channel], confirmWithinMillis),
      close: () => {
        closed = true
        ready = false
        clearTimeout(heartbeat)
        // GLIDE drops a closed client's connection only a while later: its channels are left first.
        const closing = subscriber
        closing?.unsubscribe(null, confirmWithinMillis).catch(() => {}).finally(() => closing.close())
      }
    }
  },
  isRefusal: (error) => error instanceof SubscribeRefused,
  countsSubscribers: true,
  keyPrefix: ""
})

/** The announcements of the client's server, used until `stop`; the last node to stop closes them. */
export const open = (
  client: GlideClient
): { readonly channels: ReleaseChannels.ReleaseChannels; readonly stop: () => void } => {
  const use = ReleaseChannels.share(driver(client), sharingKey(client), () => false)
  return { channels: use.channels, stop: use.leave }
}
