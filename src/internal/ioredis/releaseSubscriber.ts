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
 * announcements; once the connection is back and a watched key subscribed
 * again, its waiters try again at once. A server that refuses SUBSCRIBE (an
 * ACL without pub/sub) is not asked again for a while, and its node says it
 * does not hear releases (`hears`): waiters then poll, out of line. A server
 * that is away or hung costs at most one SUBSCRIBE or UNSUBSCRIBE per key
 * (and never more than `maxPendingCommands`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Redis } from "ioredis"
import type { ReleaseWatch } from "../../RedisNode.js"
import { releaseChannelPrefix } from "../scripts.js"
import { type OnRelease, Watchers } from "../watchers.js"

const lingerMillis = 1000

/** How long a new channel's `ready` waits for SUBSCRIBE's answer at most. */
const readyWithinMillis = 1000

/**
 * How long a server's refusal of SUBSCRIBE (an ACL without pub/sub, a proxy
 * that has no pub/sub) is believed: meanwhile its waiters poll and take no
 * place in line, and no SUBSCRIBE is sent; then the next wait asks again.
 */
const refusalKeptMillis = 10_000

/** What the nodes over one server share: who listens for which key, over one subscriber connection. */
interface Releases {
  readonly watch: (key: string, onRelease: OnRelease) => Effect.Effect<ReleaseWatch>
  /** The same registration as a plain call. */
  readonly watchNow: (key: string, onRelease: OnRelease) => ReleaseWatch
  /** Whether announcements reach this process now, or will once a key is watched (see `RedisNode.hearsReleases`). */
  readonly hears: () => boolean
  /** SUBSCRIBE and UNSUBSCRIBE commands waiting for an answer. */
  readonly pendingCommands: () => number
  /** Close the subscriber connection now; a later watch opens another. */
  readonly disconnect: () => void
}

/** A server's announcements and the clients of the nodes that use them (one entry per node). */
interface Shared {
  readonly releases: Releases
  readonly clients: Array<Redis>
}

/** The announcements of each server, by `sharingKey`. */
const byServer = new Map<string, Shared>()

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

/**
 * The announcements of the client's server, shared while the scope is open;
 * the last user closes them. Once every client that uses them has ended (a
 * user's clients quit while the lock manager stands), the subscriber closes
 * too, so that it keeps no process alive; a later wait opens it again.
 */
export const make = (client: Redis): Effect.Effect<Releases, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => {
        const key = sharingKey(client)
        let shared = key === undefined ? undefined : byServer.get(key)
        if (shared === undefined) {
          shared = { releases: open(client, key), clients: [] }
          if (key !== undefined) byServer.set(key, shared)
        }
        const { clients, releases } = shared
        clients.push(client)
        const onEnd = () => {
          if (clients.every((user) => user.status === "end")) releases.disconnect()
        }
        client.on("end", onEnd)
        return { key, shared, onEnd }
      }),
      ({ key, onEnd, shared }) =>
        Effect.sync(() => {
          client.off("end", onEnd)
          shared.clients.splice(shared.clients.indexOf(client), 1)
          if (shared.clients.length > 0) return
          if (key !== undefined) byServer.delete(key)
          shared.releases.disconnect()
        })
    ),
    ({ shared }) => shared.releases
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

/**
 * When each server (by `sharingKey`) last refused SUBSCRIBE: kept past the
 * managers that met it, so that a process making a manager per request (a
 * serverless handler) learns it once, not on each manager's first wait.
 */
const refusedAtByServer = new Map<string, number>()

const open = (client: Redis, serverKey: string | undefined): Releases => {
  let subscriber: Redis | undefined
  // Whether the subscriber was ready since it was opened: before that it is being connected for its
  // first waiters, who will hear once it is (a waiter that found it not listening yet tries again
  // once it is, see Waiting); after that, not ready means dropped, and its waiters may miss releases.
  let wasReady = false
  const channels = new Map<string, Channel>()
  // Commands of the current connection still waiting for an answer; answers of a closed one count for nothing.
  let pending = 0
  let connection = 0
  // When the server last refused SUBSCRIBE (performance.now()), if it did.
  let refusedAt = serverKey === undefined ? undefined : refusedAtByServer.get(serverKey)
  const refused = () => refusedAt !== undefined && performance.now() - refusedAt < refusalKeptMillis
  const refusedNow = () => {
    refusedAt = performance.now()
    if (serverKey !== undefined) refusedAtByServer.set(serverKey, refusedAt)
  }
  // Keys watched while the subscriber was away: their releases may have gone
  // unheard, so their waiters try again once the key is subscribed anew (or
  // refused: they then leave the line, and poll).
  const missedWhileAway = new Set<string>()
  const subscribedAgain = (key: string) => {
    if (missedWhileAway.delete(key)) watchers.missed(key)
  }

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
        subscribedAgain(key)
        // Nobody watches it any more: it lingers, then goes, as any channel.
        if (!watchers.has(key)) unsubscribeLater(key)
      },
      (error: unknown) => {
        if (asked !== connection) return
        pending--
        // A reply error (NOPERM, an unknown command) is the server's refusal; anything else is the connection's.
        if (error instanceof Error && error.name === "ReplyError") refusedNow()
        if (channels.get(key) === channel) channels.delete(key)
        channel.settle()
        subscribedAgain(key)
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

  // The connection closed (or was dropped): it has no subscriptions any more,
  // and messages may have been lost meanwhile.
  const forget = () => {
    connection++
    pending = 0
    for (const [key, channel] of channels) {
      if (channel !== "active" && !channel.sent) continue
      channels.delete(key)
      if (channel !== "active") channel.settle()
    }
    for (const key of watchers.keys()) missedWhileAway.add(key)
  }

  const connect = () => {
    if (subscriber !== undefined) return
    // No offline queue and nothing sent again after a reconnect: while the
    // server is away or hung nothing piles up (waiters poll). ioredis does not
    // resubscribe on its own either: after a reconnect, the keys still
    // watched are subscribed again here, so that `channels` is what the
    // server has. It connects now whatever the user's client says: a client
    // made with `lazyConnect` would otherwise leave it unconnected for good,
    // and every waiter deaf.
    const own = client.duplicate({
      lazyConnect: false,
      enableOfflineQueue: false,
      autoResubscribe: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0
    })
    subscriber = own
    wasReady = false
    own.on("error", () => {}) // it reconnects on its own; waiters poll meanwhile
    own.on("message", (channel: string, next: string) =>
      watchers.notify(channel.slice(releaseChannelPrefix.length), next, performance.now()))
    own.on("close", () => {
      if (own === subscriber) forget()
    })
    own.on("ready", () => {
      if (own !== subscriber) return
      wasReady = true
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
    // The server refuses SUBSCRIBE: nothing to wait for (`hears` says so).
    if (refused()) return undefined
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
    missedWhileAway.delete(key)
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
  const watchNow = (key: string, onRelease: OnRelease) => watchers.watch(key, onRelease, performance.now())
  return {
    watch: (key: string, onRelease: OnRelease) => Effect.sync(() => watchNow(key, onRelease)),
    watchNow,
    hears: () => !refused() && (subscriber === undefined || subscriber.status === "ready" || !wasReady),
    pendingCommands: () => pending,
    disconnect: () => {
      const own = subscriber
      if (own === undefined) return
      subscriber = undefined
      forget()
      own.disconnect()
    }
  }
}
