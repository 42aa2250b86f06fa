/**
 * Release announcements of one ioredis node: one subscriber connection per
 * node and process, opened on the first waiter and shared by all of them
 * (never one per waiter). A channel is subscribed while someone waits on its
 * key, and stays subscribed until nobody has watched the key for a second: a
 * key contended by a few clients in turn keeps its subscription instead of
 * paying SUBSCRIBE and UNSUBSCRIBE (and a missed release) on every wait. A
 * message lost in a reconnect only means the waiter polls on its retry
 * schedule, as it would without announcements.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { Redis } from "ioredis"
import { releaseChannelPrefix } from "./scripts.js"
import { Watchers } from "./watchers.js"

const lingerMillis = 1000

export const make = (client: Redis) =>
  Effect.acquireRelease(
    Effect.sync(() => {
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
    }),
    (releases) => Effect.sync(releases.close)
  )
