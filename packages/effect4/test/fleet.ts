/**
 * The test fleet (the workspace's `@effect-redlock/fleet`: local
 * `redis-server` processes on free ports of 127.0.0.1, stopped by PID) as an
 * Effect 4 layer for this package's tests, stopped when the layer's scope closes.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type FleetOptions, startLocalFleet } from "@effect-redlock/fleet/fleet.js"
import type { ServerProcess } from "@effect-redlock/fleet/servers.js"
import type { Redis } from "ioredis"

export interface RedisServer {
  readonly port: number
  /** A client for assertions and faults (queues commands while the server is away). */
  readonly admin: Redis
  readonly pause: Effect.Effect<void>
  readonly resume: Effect.Effect<void>
  /** SIGKILL, once the process has exited. */
  readonly kill: Effect.Effect<void>
}

export class RedisFleet extends Context.Service<RedisFleet, {
  readonly servers: ReadonlyArray<RedisServer>
  /** One replica of each server, in order, when made with `replicas`. */
  readonly replicas: ReadonlyArray<RedisServer>
  /** The ports of the Sentinels watching server `i` as master `fleet-<i>`, when made with `sentinels`. */
  readonly sentinels: ReadonlyArray<number>
  readonly nodes: ReadonlyArray<{ readonly host: string; readonly port: number }>
}>()("test/RedisFleet") {}

const serverOf = (server: ServerProcess): RedisServer => ({
  port: server.port,
  admin: server.admin,
  pause: Effect.promise(server.pause),
  resume: Effect.promise(server.resume),
  kill: Effect.promise(server.kill)
})

/**
 * `n` servers; with `replicas`, one replica of each; with `sentinels`, a
 * Sentinel; with `clusters`, each server a Redis Cluster of one master.
 */
export const layerLocal = (
  n: number,
  options: { readonly replicas?: boolean; readonly sentinels?: boolean; readonly clusters?: boolean } = {}
): Layer.Layer<RedisFleet> => {
  const fleetOptions: FleetOptions = { replicas: options.replicas, sentinels: options.sentinels, clusterPerServer: options.clusters }
  return Layer.effect(
    RedisFleet,
    Effect.map(
      Effect.acquireRelease(Effect.promise(() => startLocalFleet(n, fleetOptions)), (fleet) => Effect.promise(fleet.stop)),
      (fleet) =>
        RedisFleet.of({
          servers: fleet.servers.map(serverOf),
          replicas: fleet.replicas.map(serverOf),
          sentinels: fleet.sentinels.map(({ port }) => port),
          nodes: fleet.nodes.map(({ host, port }) => ({ host, port }))
        })
    )
  )
}

/**
 * Every server's DBSIZE once all are 0, or fails after `withinMillis`: a
 * release returns at a quorum, and the other nodes' deletes land just after.
 */
export const expectEmpty = (servers: ReadonlyArray<RedisServer>, withinMillis = 2_000): Effect.Effect<void, string> =>
  Effect.tryPromise({
    try: async () => {
      const giveUpAt = Date.now() + withinMillis
      for (;;) {
        const sizes = await Promise.all(servers.map((server) => server.admin.dbsize()))
        if (sizes.every((size) => size === 0)) return
        if (Date.now() >= giveUpAt) throw new Error(`DBSIZE ${sizes.join(",")}`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    },
    catch: (error) => String(error)
  })
