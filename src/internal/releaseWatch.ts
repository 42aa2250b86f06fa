/**
 * Release announcements of one ioredis node: one subscriber connection per
 * server and process, opened on the first waiter and shared by all of them
 * (never one per waiter), and by every lock manager of the process whose
 * client reaches the same server alike, so that a release is read once per
 * process, not once per manager (measured with 8 managers in one process:
 * 40 messages per release otherwise, read one after another). A channel is
 * subscribed while someone waits on its key, and stays subscribed until
 * nobody has watched the key for a second: a key contended by a few clients
 * in turn keeps its subscription instead of paying SUBSCRIBE and UNSUBSCRIBE
 * (and a missed release) on every wait. A message lost in a reconnect only
 * means the waiter polls on its retry schedule, as it would without
 * announcements.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Redis } from "ioredis"
import type { ReleaseWatch } from "../RedisNode.js"
import { releaseChannelPrefix } from "./scripts.js"
import { Watchers } from "./watchers.js"

const lingerMillis = 1000

/** What the nodes over one server share: who listens for which key, over one subscriber connection. */
interface Releases {
  readonly watch: (key: string, onRelease: (next: string) => void) => Effect.Effect<ReleaseWatch>
  readonly close: () => void
}

/** The announcements of each server, by `sharingKey`, with how many nodes use them. */
const byServer = new Map<string, { readonly releases: Releases; users: number }>()

/**
 * Clients that reach a server alike (address, credentials, key prefix, no
 * TLS settings or only the defaults) share its announcements. Any other
 * client (sentinels, TLS certificates, a custom connector) keeps its own.
 */
const sharingKey = (client: Redis): string | undefined => {
  const { Connector, db, host, keyPrefix, password, path, port, sentinels, tls, username } = client.options
  const defaultTls = tls === undefined || (typeof tls === "object" && Object.keys(tls).length === 0)
  if (!defaultTls || (sentinels !== null && sentinels !== undefined) || Connector !== undefined) return undefined
  return JSON.stringify([host, port, path ?? null, username ?? null, password ?? null, db ?? 0, keyPrefix ?? "", tls !== undefined])
}

/** The announcements of the client's server, shared while the scope is open; the last user closes them. */
export const make = (client: Redis): Effect.Effect<Releases, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => {
        const key = sharingKey(client)
        const known = key === undefined ? undefined : byServer.get(key)
        if (known !== undefined) known.users++
        const releases = known?.releases ?? open(client)
        if (key !== undefined && known === undefined) byServer.set(key, { releases, users: 1 })
        return { key, releases }
      }),
      ({ key, releases }) =>
        Effect.sync(() => {
          const shared = key === undefined ? undefined : byServer.get(key)
          if (shared !== undefined && --shared.users > 0) return
          if (key !== undefined) byServer.delete(key)
          releases.close()
        })
    ),
    ({ releases }) => releases
  )

const open = (client: Redis): Releases => {
  let subscriber: Redis | undefined
  // Channels subscribed or being subscribed, by key: a promise until SUBSCRIBE is answered.
  const subscribed = new Map<string, Promise<void> | "active">()
  const connection = () => {
    if (subscriber !== undefined) return subscriber
    // A subscriber may queue its SUBSCRIBE while it connects, and resubscribes after a reconnect.
    subscriber = client.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null, autoResubscribe: true })
    subscriber.on("error", () => {}) // it reconnects on its own; waiters poll meanwhile
    subscriber.on("message", (channel: string, next: string) =>
      watchers.notify(channel.slice(releaseChannelPrefix.length), next, performance.now()))
    // After a reconnect, messages may have been lost until ioredis resubscribed.
    subscriber.on("close", () => subscribed.clear())
    return subscriber
  }
  const subscribe = (key: string): Promise<void> | undefined => {
    const state = subscribed.get(key)
    if (state === "active") return undefined
    if (state !== undefined) return state
    const ready = connection().subscribe(releaseChannelPrefix + key).then(
      () => void (subscribed.get(key) === ready && subscribed.set(key, "active")),
      () => void (subscribed.get(key) === ready && subscribed.delete(key))
    )
    subscribed.set(key, ready)
    return ready
  }
  // When each key lost its last watcher; its channel is dropped once nobody watched it for lingerMillis.
  const unwatchedAt = new Map<string, number>()
  const unsubscribeLater = (key: string) => {
    const armed = unwatchedAt.has(key)
    unwatchedAt.set(key, performance.now())
    if (armed) return
    const check = () => {
      const since = unwatchedAt.get(key)
      if (since === undefined) return
      if (watchers.has(key)) return void unwatchedAt.delete(key)
      const idle = performance.now() - since
      if (idle < lingerMillis) return void setTimeout(check, lingerMillis - idle).unref()
      unwatchedAt.delete(key)
      if (subscribed.delete(key)) subscriber?.unsubscribe(releaseChannelPrefix + key).catch(() => undefined)
    }
    setTimeout(check, lingerMillis).unref()
  }
  const watchers = new Watchers(subscribe, unsubscribeLater)
  return {
    watch: (key: string, onRelease: (next: string) => void) =>
      Effect.sync(() => watchers.watch(key, onRelease, performance.now())),
    close: () => subscriber?.disconnect()
  }
}
