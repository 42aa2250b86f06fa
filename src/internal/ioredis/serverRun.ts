/**
 * Which server run an ioredis client talks to, for the restart quarantine
 * (quarantine.ts). A restarted server is always a new TCP connection, so the
 * run is unknown from the moment a connection closes until `INFO server`
 * answers on the next one.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import type { Redis } from "ioredis"
import type { NodeRun } from "../../RedisNode.js"
import * as Monotonic from "../monotonic.js"

/** `run_id` and `uptime_in_seconds` of an `INFO server` reply. */
export const parseInfo = (reply: string): { readonly id: string; readonly uptimeSeconds: number } | undefined => {
  const fields = new Map<string, string>()
  for (const line of reply.split(/\r?\n/)) {
    const colon = line.indexOf(":")
    if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trim())
  }
  const id = fields.get("run_id")
  const uptimeSeconds = Number(fields.get("uptime_in_seconds"))
  return id !== undefined && id.length > 0 && Number.isInteger(uptimeSeconds) && uptimeSeconds >= 0
    ? { id, uptimeSeconds }
    : undefined
}

export interface RunWatcher {
  readonly current: () => NodeRun
  /** Waits until the current connection's run is identified (or cannot be). */
  readonly identified: Effect.Effect<void>
}

/**
 * Follow the client's server run until the scope closes. Redis computes
 * uptime as the difference of two whole-second clock readings, so the real
 * uptime is above `uptime_in_seconds - 1`; the start taken is reply time minus
 * that, read when the reply arrives: the latest the server can have started.
 * The quarantine errs long (by up to 2 s), never short.
 */
export const watch = (client: Redis) =>
  Effect.acquireRelease(
    Effect.map(Effect.runtime<never>(), (runtime) => {
      const now = () => Runtime.runSync(runtime)(Monotonic.monotonicMillis)
      let run: NodeRun = { _tag: "Unknown", detail: "not connected yet" }
      let identifying = false
      let connection = 0
      let waiters: Array<() => void> = []
      const settle = (next: NodeRun) => {
        run = next
        identifying = false
        const woken = waiters
        waiters = []
        woken.forEach((wake) => wake())
      }
      const onClose = () => {
        connection++
        if (run._tag === "Known") run = { _tag: "Unknown", detail: "reconnecting" }
      }
      const onReady = () => {
        const asked = connection
        identifying = true
        client.info("server").then(
          (reply) => {
            if (asked !== connection) return
            const info = parseInfo(reply)
            settle(
              info === undefined
                ? { _tag: "Unknown", detail: "INFO server gave no run_id and uptime_in_seconds" }
                : { _tag: "Known", id: info.id, startedAtMillis: now() - Math.max(0, info.uptimeSeconds - 1) * 1000 }
            )
          },
          (error: unknown) => {
            if (asked !== connection) return
            settle({ _tag: "Unknown", detail: `INFO server failed: ${error instanceof Error ? error.message : String(error)}` })
          }
        )
      }
      client.on("close", onClose)
      client.on("ready", onReady)
      if (client.status === "ready") onReady()
      const watcher: RunWatcher = {
        current: () => run,
        identified: Effect.async<void>((resume) => {
          if (!identifying && run._tag === "Known") return resume(Effect.void)
          const wake = () => resume(Effect.void)
          waiters.push(wake)
          return Effect.sync(() => void (waiters = waiters.filter((waiter) => waiter !== wake)))
        })
      }
      return { watcher, stop: () => void client.off("close", onClose).off("ready", onReady) }
    }),
    ({ stop }) => Effect.sync(stop)
  ).pipe(Effect.map(({ watcher }) => watcher))
