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

export const make = (client: Redis) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      let subscriber: Redis | undefined
      const watchers = new Map<string, Set<() => void>>()
      const connection = () => {
        if (subscriber !== undefined) return subscriber
        // A subscriber may queue its SUBSCRIBE while it connects, and resubscribes after a reconnect.
        subscriber = client.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null, autoResubscribe: true })
        subscriber.on("error", () => {}) // it reconnects on its own; waiters poll meanwhile
        subscriber.on("message", (channel: string) => watchers.get(channel)?.forEach((onRelease) => onRelease()))
        return subscriber
      }
      const watch = (key: string, onRelease: () => void) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            const channel = releaseChannelPrefix + key
            let channelWatchers = watchers.get(channel)
            if (channelWatchers === undefined) {
              channelWatchers = new Set()
              watchers.set(channel, channelWatchers)
              connection().subscribe(channel).catch(() => undefined)
            }
            channelWatchers.add(onRelease)
            return { channel, channelWatchers }
          }),
          ({ channel, channelWatchers }) =>
            Effect.sync(() => {
              channelWatchers.delete(onRelease)
              if (channelWatchers.size > 0 || watchers.get(channel) !== channelWatchers) return
              watchers.delete(channel)
              subscriber?.unsubscribe(channel).catch(() => undefined)
            })
        ).pipe(Effect.asVoid)
      return { watch, close: () => subscriber?.disconnect() }
    }),
    (releases) => Effect.sync(releases.close)
  )
