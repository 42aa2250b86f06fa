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

export class FleetError extends Data.TaggedError("FleetError")<{ readonly message: string; readonly cause?: unknown }> {}

const fleetError = (cause: unknown) => new FleetError({ message: cause instanceof Error ? cause.message : String(cause), cause })
const attempt = <A>(run: () => Promise<A>) => Effect.tryPromise({ try: run, catch: fleetError })

/** One server of the fleet. Its port stays the same across restarts. */
export interface RedisServer {
  readonly index: number
  readonly port: number
  /** A cluster node's bus port (`cluster-port`), the same across restarts; `undefined` outside a cluster. */
  readonly busPort?: number | undefined
  /** The PID of the running process (changes on restart). */
  readonly pid: () => number | undefined
  /** SIGSTOP: the server keeps its socket open and answers nothing, like a hung host. */
  readonly pause: Effect.Effect<void>
  /** SIGCONT: the server catches up with what it received while paused. */
  readonly resume: Effect.Effect<void>
  /** SIGKILL: all keys are lost (no persistence). */
  readonly kill: Effect.Effect<void>
  /** Start again on the same port after `kill`. */
  readonly start: Effect.Effect<void, FleetError>
  /** Run an admin command on a separate connection (waits while the server is down or paused, at most 40 s). */
  readonly call: (command: string, ...args: ReadonlyArray<string | number>) => Effect.Effect<unknown, FleetError>
}

/** How a lock node reaches one server (what `effect-redlock/RedisNode/Ioredis` takes: the password `Redacted`). */
export interface NodeOptions {
  readonly host: string
  readonly port: number
  readonly password?: Redacted.Redacted<string> | undefined
  readonly tls?: { readonly ca: string } | undefined
}

export interface Fleet {
  readonly servers: ReadonlyArray<RedisServer>
  /** One replica per server (`replicaof` it), in server order, when the fleet was made with `replicas`. */
  readonly replicas: ReadonlyArray<RedisServer>
  /** Sentinels watching every server as master `fleet-<index>`, when the fleet was made with `sentinels`. */
  readonly sentinels: ReadonlyArray<{ readonly port: number }>
  /** Connection options for `effect-redlock/RedisNode/Ioredis` */
  readonly nodes: ReadonlyArray<NodeOptions>
  /** The certificate a client of a TLS fleet trusts (PEM); `undefined` for a fleet without TLS. */
  readonly tlsCa: string | undefined
  /** DBSIZE of every server. */
  readonly dbsizes: Effect.Effect<ReadonlyArray<number>, FleetError>
  /** FLUSHALL on every server, and every server running and resumed. */
  readonly reset: Effect.Effect<void, FleetError>
  /** Until every server has its replica connected and in sync (WAIT answers 1), at most 10 s; at once without replicas. */
  readonly replicasInSync: Effect.Effect<void, FleetError>
  /** The cluster's nodes for a node's `cluster` option, when the fleet was made with `cluster`. */
  readonly cluster: ReadonlyArray<{ readonly host: string; readonly port: number }>
  /** Until every server of the cluster says `cluster_state:ok` (after a restart: once it rejoined), at most 20 s; at once without `cluster`. */
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
  nodes: fleet.nodes.map(({ password, ...node }) => password === undefined ? node : { ...node, password: Redacted.make(password) }),
  tlsCa: fleet.tlsCa,
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
    Effect.forEach(fleet.servers, (server) =>
      server.call("ACL", "SETUSER", username, "on", `>${password}`, "~*", "&*", "+@all", ...rules)),
    () => Effect.ignore(Effect.forEach(fleet.servers, (server) => server.call("ACL", "DELUSER", username)))
  )

/** Whether a Docker (or compatible) engine answers; testcontainers needs one. */
export const containerEngineAvailable: Effect.Effect<boolean> = Effect.promise(Containers.containerEngineAvailable)

/** `n` Redis containers through testcontainers. Fails when no container engine answers (check {@link containerEngineAvailable} first). */
export const layerContainers = (n: number, options: Plain.FleetOptions = {}): Layer.Layer<RedisFleet, FleetError> =>
  layerOf(() => Containers.startContainerFleet(n, options))
