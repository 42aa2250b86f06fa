/**
 * The test fleet (the workspace's `@effect-redlock/fleet`: local
 * `redis-server` processes on free ports of 127.0.0.1, stopped by PID) as an
 * Effect 4 layer for this package's tests, stopped when the layer's scope
 * closes. The same names and members as the Effect 3 layer
 * (`@effect-redlock/fleet/effect3.js`), so that the shared Effect suites use
 * either; each server also has its `admin` client here.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Plain from "@effect-redlock/fleet/fleet.js"
import type { ServerProcess } from "@effect-redlock/fleet/servers.js"

export { type FleetOptions, masterName } from "@effect-redlock/fleet/fleet.js"

export class FleetError
  extends Data.TaggedError("FleetError")<{ readonly message: string; readonly cause?: unknown }>
{}

const fleetError = (cause: unknown) =>
  new FleetError({ message: cause instanceof Error ? cause.message : String(cause), cause })
const attempt = <A>(run: () => Promise<A>) => Effect.tryPromise({ try: run, catch: fleetError })

/** One server of the fleet (servers.ts `ServerProcess`, where each member is documented), its controls as effects. */
export interface RedisServer extends Pick<ServerProcess, "index" | "port" | "busPort" | "pid" | "admin"> {
  readonly pause: Effect.Effect<void>
  readonly resume: Effect.Effect<void>
  readonly kill: Effect.Effect<void>
  readonly start: Effect.Effect<void, FleetError>
  readonly call: (command: string, ...args: ReadonlyArray<string | number>) => Effect.Effect<unknown, FleetError>
}

/** How a lock node reaches one server (what `effect-redlock/RedisNode/Ioredis` takes: the password `Redacted`). */
export interface NodeOptions {
  readonly host: string
  readonly port: number
  readonly password?: Redacted.Redacted<string> | undefined
  readonly tls?: { readonly ca: string } | undefined
}

/** The fleet (fleet.ts `LocalFleet`, where each member is documented), its servers and operations as effects. */
export interface Fleet extends Pick<Plain.LocalFleet, "sentinels" | "tlsCa" | "cluster" | "shiftClock"> {
  readonly servers: ReadonlyArray<RedisServer>
  readonly replicas: ReadonlyArray<RedisServer>
  /** Connection options for `effect-redlock/RedisNode/Ioredis` (the password `Redacted`). */
  readonly nodes: ReadonlyArray<NodeOptions>
  readonly dbsizes: Effect.Effect<ReadonlyArray<number>, FleetError>
  readonly reset: Effect.Effect<void, FleetError>
  readonly replicasInSync: Effect.Effect<void, FleetError>
  readonly clusterOk: Effect.Effect<void, FleetError>
}

export class RedisFleet extends Context.Service<RedisFleet, Fleet>()("test/RedisFleet") {}

const serverOf = (server: ServerProcess): RedisServer => ({
  index: server.index,
  port: server.port,
  busPort: server.busPort,
  pid: server.pid,
  admin: server.admin,
  pause: Effect.promise(server.pause),
  resume: Effect.promise(server.resume),
  kill: Effect.promise(server.kill),
  start: attempt(server.start),
  call: (command, ...args) => attempt(() => server.call(command, ...args))
})

const fleetOf = (fleet: Plain.LocalFleet): Fleet => ({
  servers: fleet.servers.map(serverOf),
  replicas: fleet.replicas.map(serverOf),
  sentinels: fleet.sentinels,
  nodes: fleet.nodes.map(({ password, ...node }) =>
    password === undefined ? node : { ...node, password: Redacted.make(password) }
  ),
  tlsCa: fleet.tlsCa,
  shiftClock: fleet.shiftClock,
  cluster: fleet.cluster,
  dbsizes: attempt(fleet.dbsizes),
  reset: attempt(fleet.reset),
  replicasInSync: attempt(fleet.replicasInSync),
  clusterOk: attempt(fleet.clusterOk)
})

/** `n` local `redis-server` processes on free ports (plain fleet.ts: `startLocalFleet`), stopped when the layer's scope closes. */
export const layerLocal = (n: number, options: Plain.FleetOptions = {}): Layer.Layer<RedisFleet, FleetError> =>
  Layer.effect(
    RedisFleet,
    Effect.map(
      Effect.acquireRelease(attempt(() => Plain.startLocalFleet(n, options)), (fleet) => Effect.promise(fleet.stop)),
      fleetOf
    )
  )

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
