/**
 * Release announcements of one ioredis node: one subscriber connection per
 * node and process, opened on the first waiter and shared by all of them
 * (never one per waiter). A channel is subscribed while someone waits on its
 * key. A message lost in a reconnect only means the waiter polls on its
 * retry schedule, as it would without announcements.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { Redis } from "ioredis"
import { releaseChannelPrefix } from "./scripts.js"
import { Watchers } from "./watchers.js"

export const make = (client: Redis) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      let subscriber: Redis | undefined
      const connection = () => {
        if (subscriber !== undefined) return subscriber
        // A subscriber may queue its SUBSCRIBE while it connects, and resubscribes after a reconnect.
        subscriber = client.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null, autoResubscribe: true })
        subscriber.on("error", () => {}) // it reconnects on its own; waiters poll meanwhile
        subscriber.on("message", (channel: string) => watchers.notify(channel.slice(releaseChannelPrefix.length)))
        return subscriber
      }
      const watchers = new Watchers(
        (key) => void connection().subscribe(releaseChannelPrefix + key).catch(() => undefined),
        (key) => void subscriber?.unsubscribe(releaseChannelPrefix + key).catch(() => undefined)
      )
      return { watch: (key: string, onRelease: () => void) => watchers.watch(key, onRelease), close: () => subscriber?.disconnect() }
    }),
    (releases) => Effect.sync(releases.close)
  )
