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
 * announcements. A server that is away or hung costs at most one SUBSCRIBE
 * or UNSUBSCRIBE per key (and never more than `maxPendingCommands`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Redis } from "ioredis"
import type { ReleaseWatch } from "../../RedisNode.js"
import { releaseChannelPrefix } from "../scripts.js"
import { Watchers } from "../watchers.js"

const lingerMillis = 1000

/** How long a new channel's `ready` waits for SUBSCRIBE's answer at most. */
const readyWithinMillis = 1000

/** What the nodes over one server share: who listens for which key, over one subscriber connection. */
interface Releases {
  readonly watch: (key: string, onRelease: (next: string) => void) => Effect.Effect<ReleaseWatch>
  /** The same registration as a plain call. */
  readonly watchNow: (key: string, onRelease: (next: string) => void) => ReleaseWatch
  /** SUBSCRIBE and UNSUBSCRIBE commands waiting for an answer. */
  readonly pendingCommands: () => number
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

/** The subscriber commands waiting for an answer on the connection shared by clients like `client`, if any. */
export const pendingCommands = (client: Redis): number | undefined => {
  const key = sharingKey(client)
  return key === undefined ? undefined : byServer.get(key)?.releases.pendingCommands()
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

/**
 * At most this many SUBSCRIBE and UNSUBSCRIBE commands wait for an answer on
 * one subscriber connection: past it, a new channel waits for the next
 * connection (its waiters poll meanwhile).
 */
const maxPendingCommands = 1000

/** A watched key's channel: being subscribed (`ready` settles when SUBSCRIBE is answered or given up), or active. */
type Channel =
  | { readonly ready: Promise<void>; readonly settle: () => void; sent: boolean }
  | "active"

const open = (client: Redis): Releases => {
  let subscriber: Redis | undefined
  const channels = new Map<string, Channel>()
  // Commands of the current connection still waiting for an answer; answers of a closed one count for nothing.
  let pending = 0
  let connection = 0

  const send = (key: string, channel: Exclude<Channel, "active">) => {
    if (subscriber?.status !== "ready" || pending >= maxPendingCommands) return
    channel.sent = true
    pending++
    const asked = connection
    subscriber.subscribe(releaseChannelPrefix + key).then(
      () => {
        if (asked !== connection) return
        pending--
        if (channels.get(key) !== channel) return
        channels.set(key, "active")
        channel.settle()
        // Nobody watches it any more: it lingers, then goes, as any channel.
        if (!watchers.has(key)) unsubscribeLater(key)
      },
      () => {
        if (asked === connection) pending--
        if (channels.get(key) === channel) channels.delete(key)
        channel.settle()
      }
    )
  }
  const unsubscribe = (key: string) => {
    if (subscriber?.status !== "ready" || pending >= maxPendingCommands) return
    pending++
    const asked = connection
    const answered = () => void (asked === connection && pending--)
    subscriber.unsubscribe(releaseChannelPrefix + key).then(answered, answered)
  }

  const connect = () => {
    if (subscriber !== undefined) return
    // No offline queue and nothing sent again after a reconnect: while the
    // server is away or hung nothing piles up (waiters poll). ioredis does not
    // resubscribe on its own either: after a reconnect, the keys still
    // watched are subscribed again here, so that `channels` is what the
    // server has.
    subscriber = client.duplicate({
      enableOfflineQueue: false,
      autoResubscribe: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0
    })
    subscriber.on("error", () => {}) // it reconnects on its own; waiters poll meanwhile
    subscriber.on("message", (channel: string, next: string) =>
      watchers.notify(channel.slice(releaseChannelPrefix.length), next, performance.now()))
    // A new connection has no subscriptions, and messages may have been lost meanwhile.
    subscriber.on("close", () => {
      connection++
      pending = 0
      for (const [key, channel] of channels) {
        if (channel !== "active" && !channel.sent) continue
        channels.delete(key)
        if (channel !== "active") channel.settle()
      }
    })
    subscriber.on("ready", () => {
      for (const key of watchers.keys()) {
        const channel = channels.get(key)
        if (channel === undefined) subscribe(key)
        else if (channel !== "active" && !channel.sent) send(key, channel)
      }
    })
  }

  const subscribe = (key: string): Promise<void> | undefined => {
    const known = channels.get(key)
    if (known === "active") return undefined
    if (known !== undefined) return known.ready
    let settle = () => {}
    const ready = new Promise<void>((resolve) => settle = resolve)
    // Every waiter's wait listens to `ready`: it must settle even while the
    // server hangs, or their listeners would pile up on it. Not subscribed by
    // then: waiters take the release as missed, and poll.
    setTimeout(settle, readyWithinMillis).unref()
    const channel = { ready, settle, sent: false }
    channels.set(key, channel)
    connect()
    send(key, channel)
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
      const channel = channels.get(key)
      if (channel === "active") {
        channels.delete(key)
        unsubscribe(key)
      } else if (channel !== undefined && !channel.sent) {
        channels.delete(key)
        channel.settle()
      }
      // A SUBSCRIBE still unanswered: its answer looks again (see send).
    }
    setTimeout(check, lingerMillis).unref()
  }
  const watchers = new Watchers(subscribe, unsubscribeLater)
  const watchNow = (key: string, onRelease: (next: string) => void) => watchers.watch(key, onRelease, performance.now())
  return {
    watch: (key: string, onRelease: (next: string) => void) => Effect.sync(() => watchNow(key, onRelease)),
    watchNow,
    pendingCommands: () => pending,
    close: () => subscriber?.disconnect()
  }
}
