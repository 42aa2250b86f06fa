/**
 * Release announcements over one subscriber connection, whatever the driver
 * (ioredis today; every driver that can SUBSCRIBE hands its connection in as
 * a `Driver`). One connection per server and process, opened on the first
 * waiter and shared by all of them, and by every node of the process that
 * reaches the same server alike (`share`), so that a release is read once per
 * process, not once per lock manager (measured with 8 managers in one
 * process: 40 messages per release otherwise, read one after another).
 *
 * A key's channel is subscribed while someone waits on its key, and stays
 * subscribed until nobody has watched the key for `lingerMillis`: a key
 * contended by a few clients in turn keeps its subscription instead of
 * paying SUBSCRIBE and UNSUBSCRIBE (and a missed release) on every wait. A
 * message lost while the connection was away only means the waiter polls on
 * its retry schedule, as it would without announcements; once the connection
 * is back and a watched key subscribed again, its waiters try again at once.
 * A server that refuses SUBSCRIBE (an ACL without pub/sub, a proxy without
 * it) is not asked again for `refusalKeptMillis`, by any node of the process,
 * and its nodes say they do not hear releases (`hears`): waiters then poll,
 * out of line. A server that is away or hung costs at most one SUBSCRIBE or
 * UNSUBSCRIBE per key, and never more than `maxPendingCommands` in all.
 *
 * @internal
 */
import type { ReleaseWatch } from "../engine/node.js"
import { lineOf } from "../engine/slots.js"
import { releaseChannelPrefix } from "./scripts.js"
import { type OnRelease, Watchers } from "./watchers.js"

/** How long a channel stays subscribed after its key's last watcher left. */
const lingerMillis = 1000

/** How long a new channel's `ready` waits for SUBSCRIBE's answer at most. */
const readyWithinMillis = 1000

/** How long a server's refusal of SUBSCRIBE is believed: then the next wait asks again. */
const refusalKeptMillis = 10_000

/**
 * At most this many SUBSCRIBE and UNSUBSCRIBE commands wait for an answer on
 * one connection: past it, a new channel waits for the next connection (its
 * waiters poll meanwhile).
 */
const maxPendingCommands = 1000

/** A subscriber connection, as a driver opened it. */
export interface SubscriberConnection {
  /** Whether it is connected and may be sent commands now. */
  readonly isReady: () => boolean
  readonly subscribe: (channel: string) => Promise<unknown>
  readonly unsubscribe: (channel: string) => Promise<unknown>
  /** Close it now. */
  readonly close: () => void
}

/** What a driver tells of the connection it opened, never from within `open` itself. */
export interface SubscriberEvents {
  readonly message: (channel: string, text: string) => void
  /** Connected, at first or again: the keys still watched are subscribed (again). */
  readonly ready: () => void
  /** Closed or dropped: the server forgot its subscriptions, and messages may have been lost. */
  readonly closed: () => void
}

/** How a driver subscribes. */
export interface Driver {
  /**
   * A connection that connects now and reconnects on its own, queues no
   * command while away and sends nothing again after a reconnect (what is
   * subscribed again is decided here), and reports to `events`.
   */
  readonly open: (events: SubscriberEvents) => SubscriberConnection
  /** Whether a failed SUBSCRIBE is the server's refusal, rather than the connection's failure. */
  readonly isRefusal: (error: unknown) => boolean
  /**
   * Whether the server's `PUBSUB NUMSUB` counts every connection its
   * `PUBLISH` reaches: a standalone server's does; a cluster node's does not
   * (its messages reach the other nodes' subscribers too).
   */
  readonly countsSubscribers: boolean
  /**
   * What goes before every key the node sends, the scripts' keys too: the
   * user's client's `keyPrefix` ("" for none), which ioredis puts there
   * itself and the node-redis node does for it. The scripts see the keys so,
   * and name release channels and announcements with it; channels
   * themselves are sent as they are.
   */
  readonly keyPrefix: string
}

/** The announcements of one server. */
export interface ReleaseChannels {
  readonly watch: (key: string, onRelease: OnRelease) => ReleaseWatch
  /**
   * A release of this process announced `next` on `key`'s channel (`key` as
   * the script named it, with the client's key prefix): told to the key's
   * watchers now, from the release's answer; the channel's copy
   * of it, if it was `published`, is then not told again (`Watchers.notify`).
   */
  readonly announced: (key: string, next: string, published: boolean) => void
  /**
   * The same for the release of one plain key nobody waited for in line,
   * which names no one (`key` as the node's callers name it: the script
   * answered a number, not the key).
   */
  readonly announcedFree: (key: string, published: boolean) => void
  /**
   * How many subscribers of the channels of `keys` are this process's
   * connection, for a release to send (scripts.ts, releaseOwned): 1 when it
   * is subscribed to every one of them now, else 0; `undefined` when the
   * server cannot count them (`Driver.countsSubscribers`) or refused this
   * process's SUBSCRIBE lately (pub/sub refused). "Now" as far as
   * this process knows: a subscription the server dropped a moment ago counts
   * until the connection's close is read, and a release meanwhile may count
   * another process's listener as ours and not publish; that waiter then
   * tries on its schedule, as after any lost message.
   */
  readonly ownSubscribers: (keys: ReadonlyArray<string>) => 0 | 1 | undefined
  /**
   * A release of this process was sent to the server: until the returned
   * function is called (answered or failed), a message on a channel may be
   * the copy of what its answer will tell.
   */
  readonly releasing: () => () => void
  /** Whether announcements reach this process now, or will once a key is watched (see `RedisNode.hearsReleases`). */
  readonly hears: () => boolean
  /** SUBSCRIBE and UNSUBSCRIBE commands waiting for an answer. */
  readonly pendingCommands: () => number
  /** Close the connection now; a later watch opens another. */
  readonly disconnect: () => void
}

/** A key's channel: being subscribed (`ready` settles when SUBSCRIBE is answered or given up), or active. */
type Channel =
  | { readonly ready: Promise<void>; readonly settle: () => void; sent: boolean }
  | "active"

/**
 * When each server last refused SUBSCRIBE (`performance.now()`): kept past
 * the managers that met it, so that a process making a manager per request (a
 * serverless handler) learns it once, not on each manager's first wait.
 */
const refusedAtByServer = new Map<string, number>()

/** A server's refusal of SUBSCRIBE: by its key for the whole process, or for one connection's nodes without one. */
const refusalOf = (serverKey: string | undefined) => {
  let refusedAtHere: number | undefined
  return {
    recent: (): boolean => {
      const at = serverKey === undefined ? refusedAtHere : refusedAtByServer.get(serverKey)
      return at !== undefined && performance.now() - at < refusalKeptMillis
    },
    note: (): void => {
      if (serverKey === undefined) refusedAtHere = performance.now()
      else refusedAtByServer.set(serverKey, performance.now())
    }
  }
}

/** The announcements of the server `serverKey` names (`undefined`: a server no other node may share), over `driver`. */
const open = (driver: Driver, serverKey: string | undefined): ReleaseChannels => {
  // A key's channel, as the scripts publish on it: its name on the server, with the client's key prefix.
  const channelPrefix = releaseChannelPrefix + driver.keyPrefix
  // A key the scripts named (with the client's key prefix), as the node's callers name it.
  const keyNamed = (named: string): string =>
    named.startsWith(driver.keyPrefix) ? named.slice(driver.keyPrefix.length) : named
  let subscriber: SubscriberConnection | undefined
  // Whether the subscriber was ready since it was opened: before that it is being connected for its
  // first waiters, who will hear once it is (a waiter that found it not listening yet tries again
  // once it is, see engine/waiting.ts); after that, not ready means dropped, and releases may go unheard.
  let wasReady = false
  const channels = new Map<string, Channel>()
  // Commands of the current connection still waiting for an answer; answers of an earlier one count for nothing.
  let pending = 0
  let connectionNumber = 0
  const refusal = refusalOf(serverKey)
  // Releases of this process sent to the server and not answered yet (see `releasing`).
  let releasesUnanswered = 0
  // Keys watched while the subscriber was away: their releases may have gone
  // unheard, so their waiters try again once the key is subscribed anew (or
  // refused: they then leave the line, and poll).
  const missedWhileAway = new Set<string>()
  const subscribedAgain = (key: string) => {
    if (missedWhileAway.delete(key)) watchers.missed(key)
  }

  const send = (key: string, channel: Exclude<Channel, "active">) => {
    if (subscriber === undefined || !subscriber.isReady() || pending >= maxPendingCommands) return
    channel.sent = true
    pending++
    const asked = connectionNumber
    subscriber.subscribe(channelPrefix + key).then(
      () => {
        if (asked !== connectionNumber) return
        pending--
        if (channels.get(key) !== channel) return
        channels.set(key, "active")
        channel.settle()
        subscribedAgain(key)
        // Nobody watches it any more: it lingers, then goes, as any channel.
        if (!watchers.has(key)) unsubscribeLater(key)
      },
      (error: unknown) => {
        if (asked !== connectionNumber) return
        pending--
        if (driver.isRefusal(error)) refusal.note()
        if (channels.get(key) === channel) channels.delete(key)
        channel.settle()
        subscribedAgain(key)
      }
    )
  }
  const unsubscribe = (key: string) => {
    if (subscriber === undefined || !subscriber.isReady() || pending >= maxPendingCommands) return
    pending++
    const asked = connectionNumber
    const answered = () => void (asked === connectionNumber && pending--)
    subscriber.unsubscribe(channelPrefix + key).then(answered, answered)
  }

  // The connection closed (or was dropped): it has no subscriptions any more,
  // and messages may have been lost meanwhile.
  const forget = () => {
    connectionNumber++
    pending = 0
    for (const [key, channel] of channels) {
      if (channel !== "active" && !channel.sent) continue
      channels.delete(key)
      if (channel !== "active") channel.settle()
    }
    for (const key of watchers.keys()) missedWhileAway.add(key)
    watchers.forgetCopies()
  }

  // Whether a subscriber connection is open (made now if none is). A driver
  // that throws making one (a user's client changed since its node was made)
  // is taken as a server that refuses: its waiters poll, the process goes on.
  const connect = (): boolean => {
    if (subscriber !== undefined) return true
    wasReady = false
    try {
      subscriber = openSubscriber()
      return true
    } catch {
      refusal.note()
      return false
    }
  }
  const openSubscriber = (): SubscriberConnection => {
    const own: SubscriberConnection = driver.open({
      message: (channel, next) =>
        watchers.notify(
          channel.slice(channelPrefix.length),
          next,
          performance.now(),
          "channel",
          releasesUnanswered > 0
        ),
      closed: () => {
        if (own === subscriber) forget()
      },
      ready: () => {
        if (own !== subscriber) return
        wasReady = true
        for (const key of watchers.keys()) {
          const channel = channels.get(key)
          if (channel === undefined) subscribe(key)
          else if (channel !== "active" && !channel.sent) send(key, channel)
        }
      }
    })
    return own
  }

  const subscribe = (key: string): Promise<void> | undefined => {
    const known = channels.get(key)
    if (known === "active") return undefined
    if (known !== undefined) return known.ready
    // The server refuses SUBSCRIBE, or no subscriber could be made: nothing to wait for (`hears` says so).
    if (refusal.recent() || !connect()) return undefined
    let settle = () => {}
    const ready = new Promise<void>((resolve) => settle = resolve)
    // Every waiter's wait listens to `ready`: it must settle even while the
    // server hangs, or their listeners would pile up on it. Not subscribed by
    // then: waiters take the release as missed, and poll.
    setTimeout(settle, readyWithinMillis).unref()
    const channel = { ready, settle, sent: false }
    channels.set(key, channel)
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
      watchers.forgetCopies(key)
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
  // Whether a release's channel copy may come: the key is watched (its channel subscribed, or being
  // subscribed), or its channel lingers. For any other key no copy comes: awaiting one would swallow
  // another process's release of the same text, and nothing would drop the record (no channel goes).
  const mayHear = (key: string): boolean => watchers.has(key) || channels.has(key)
  return {
    watch: (key, onRelease) => watchers.watch(key, onRelease, performance.now()),
    announced: (named, next, published) => {
      const key = keyNamed(named)
      watchers.notify(key, next, performance.now(), "answer", published && mayHear(key))
    },
    announcedFree: (key, published) => watchers.notify(key, "", performance.now(), "answer", published && mayHear(key)),
    ownSubscribers: (keys) => {
      // A server that refuses pub/sub would refuse the count too: one refused command per release is enough.
      if (!driver.countsSubscribers || refusal.recent()) return undefined
      if (subscriber === undefined || !subscriber.isReady()) return 0
      for (const key of keys) if (channels.get(lineOf(key)) !== "active") return 0
      return 1
    },
    releasing: () => {
      releasesUnanswered++
      let answered = false
      return () => {
        if (answered) return
        answered = true
        releasesUnanswered--
      }
    },
    hears: () => !refusal.recent() && (subscriber === undefined || subscriber.isReady() || !wasReady),
    pendingCommands: () => pending,
    disconnect: () => {
      const own = subscriber
      if (own === undefined) return
      subscriber = undefined
      forget()
      own.close()
    }
  }
}

/** A node's use of its server's announcements, until it leaves. */
export interface Use {
  readonly channels: ReleaseChannels
  /** The node's client ended: once every user's client has, the connection closes, so that it keeps no process alive. */
  readonly clientEnded: () => void
  /** The node is closed: the last user to leave closes the connection. */
  readonly leave: () => void
}

/** The announcements of each server, by its key, and whether each node using them has its client ended. */
const byServer = new Map<string, { readonly channels: ReleaseChannels; readonly users: Set<() => boolean> }>()

/**
 * The announcements of the server `serverKey` names, shared by every node of
 * the process that names it (no key: this node's alone), opened with `driver`
 * by the first. `hasEnded` says whether this node's client has ended (a
 * user's clients quit while the lock manager stands); a later wait opens the
 * connection again.
 */
export const share = (driver: Driver, serverKey: string | undefined, hasEnded: () => boolean): Use => {
  let shared = serverKey === undefined ? undefined : byServer.get(serverKey)
  if (shared === undefined) {
    shared = { channels: open(driver, serverKey), users: new Set() }
    if (serverKey !== undefined) byServer.set(serverKey, shared)
  }
  const { channels, users } = shared
  // A Set holds a function once: wrapped, two uses with one predicate stay two.
  const user = () => hasEnded()
  users.add(user)
  return {
    channels,
    clientEnded: () => {
      for (const ended of users) if (!ended()) return
      channels.disconnect()
    },
    leave: () => {
      if (!users.delete(user) || users.size > 0) return
      if (serverKey !== undefined && byServer.get(serverKey)?.channels === channels) byServer.delete(serverKey)
      channels.disconnect()
    }
  }
}

/** The commands waiting for an answer on the connection of the server `serverKey` names, if one is shared. */
export const pendingCommandsOf = (serverKey: string): number | undefined =>
  byServer.get(serverKey)?.channels.pendingCommands()
