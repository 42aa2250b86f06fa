/**
 * The test fleet as an Effect 3 layer, for the Effect 3 package's tests, the
 * fault suite, the demo and the benchmark: the plain fleet (fleet.ts) started
 * when the layer is built and stopped, every process by its PID, when its
 * scope closes.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Containers from "./containers.js"
import * as Plain from "./fleet.js"
import type { ServerProcess } from "./servers.js"

export type { FleetOptions } from "./fleet.js"
export { masterName } from "./fleet.js"

export class FleetError
  extends Data.TaggedError("FleetError")<{ readonly message: string; readonly cause?: unknown }>
{}

const fleetError = (cause: unknown) =>
  new FleetError({ message: cause instanceof Error ? cause.message : String(cause), cause })
const attempt = <A>(run: () => Promise<A>) => Effect.tryPromise({ try: run, catch: fleetError })

/** One server of the fleet (servers.ts `ServerProcess`, where each member is documented), its controls as effects. */
export interface RedisServer extends Pick<ServerProcess, "index" | "port" | "busPort" | "pid"> {
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

export class RedisFleet extends Context.Tag("effect-redlock/fleet/RedisFleet")<RedisFleet, Fleet>() {}

const serverOf = (server: ServerProcess): RedisServer => ({
  index: server.index,
  port: server.port,
  busPort: server.busPort,
  pid: server.pid,
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
  dbsizes: attempt(fleet.dbsizes),
  reset: attempt(fleet.reset),
  replicasInSync: attempt(fleet.replicasInSync),
  cluster: fleet.cluster,
  clusterOk: attempt(fleet.clusterOk)
})

const layerOf = (start: () => Promise<Plain.LocalFleet>): Layer.Layer<RedisFleet, FleetError> =>
  Layer.scoped(
    RedisFleet,
    Effect.map(Effect.acquireRelease(attempt(start), (fleet) => Effect.promise(fleet.stop)), fleetOf)
  )

/** `n` local `redis-server` processes on free ports (plain fleet.ts: `startLocalFleet`), stopped when the layer's scope closes. */
export const layerLocal = (n: number, options: Plain.FleetOptions = {}): Layer.Layer<RedisFleet, FleetError> =>
  layerOf(() => Plain.startLocalFleet(n, options))

/**
 * An ACL user on every server of the fleet while the scope is open (deleted
 * after): `rules` follow `on >password ~* &* +@all`, such as `-@pubsub`.
 */
export const aclUser = (fleet: Fleet, username: string, password: string, ...rules: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.forEach(
      fleet.servers,
      (server) => server.call("ACL", "SETUSER", username, "on", `>${password}`, "~*", "&*", "+@all", ...rules)
    ),
    () => Effect.ignore(Effect.forEach(fleet.servers, (server) => server.call("ACL", "DELUSER", username)))
  )

/** Whether a Docker (or compatible) engine answers; testcontainers needs one. */
export const containerEngineAvailable: Effect.Effect<boolean> = Effect.promise(Containers.containerEngineAvailable)

/** `n` Redis containers through testcontainers. Fails when no container engine answers (check {@link containerEngineAvailable} first). */
export const layerContainers = (n: number, options: Plain.FleetOptions = {}): Layer.Layer<RedisFleet, FleetError> =>
  layerOf(() => Containers.startContainerFleet(n, options))
