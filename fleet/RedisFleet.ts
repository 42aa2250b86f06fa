/**
 * A fleet of real Redis servers for tests, the demo and benchmarks: N
 * independent masters on free 127.0.0.1 ports, each with fault controls
 * (pause/resume with SIGSTOP/SIGCONT, kill, restart).
 *
 * Local path: `redis-server` binaries started as child processes and stopped
 * by their PID (never by name: the machine may run other Redis servers).
 * Container path: testcontainers, used only where a Docker engine answers.
 */
import * as Command from "@effect/platform/Command"
import type * as CommandExecutor from "@effect/platform/CommandExecutor"
import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import type { ConnectionOptions } from "effect-redlock/RedisNode/Ioredis"
import { Redis } from "ioredis"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as FreePort from "./freePort.js"

export class FleetError extends Data.TaggedError("FleetError")<{ readonly message: string; readonly cause?: unknown }> {}

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
  /** Run an admin command on a separate connection (waits while the server is down or paused). */
  readonly call: (command: string, ...args: ReadonlyArray<string | number>) => Effect.Effect<unknown, FleetError>
}

export interface Fleet {
  readonly servers: ReadonlyArray<RedisServer>
  /** One replica per server (`replicaof` it), in server order, when the fleet was made with `replicas`. */
  readonly replicas: ReadonlyArray<RedisServer>
  /** Sentinels watching every server as master `fleet-<index>`, when the fleet was made with `sentinels`. */
  readonly sentinels: ReadonlyArray<{ readonly port: number }>
  /** Connection options for `effect-redlock/RedisNode/Ioredis` */
  readonly nodes: ReadonlyArray<ConnectionOptions>
  /** The certificate a client of a TLS fleet trusts (PEM); `undefined` for a fleet without TLS. */
  readonly tlsCa: string | undefined
  /** DBSIZE of every server. */
  readonly dbsizes: Effect.Effect<ReadonlyArray<number>, FleetError>
  /** FLUSHALL on every server, and every server running and resumed. */
  readonly reset: Effect.Effect<void, FleetError>
  /** Until every server has its replica connected and in sync (WAIT answers 1), at most 10 s; at once without replicas. */
  readonly replicasInSync: Effect.Effect<void, FleetError | string>
  /** The cluster's nodes for a node's `cluster` option, when the fleet was made with `cluster`. */
  readonly cluster: ReadonlyArray<{ readonly host: string; readonly port: number }>
  /** Until every server of the cluster says `cluster_state:ok` (after a restart: once it rejoined), at most 20 s; at once without `cluster`. */
  readonly clusterOk: Effect.Effect<void, FleetError | string>
}

export class RedisFleet extends Context.Tag("effect-redlock/fleet/RedisFleet")<RedisFleet, Fleet>() {}

export interface FleetOptions {
  /** Servers require this password (`requirepass`). */
  readonly password?: string | undefined
  /**
   * Append-only file with `appendfsync always`: a server killed with SIGKILL
   * keeps every acknowledged write across a restart. Default: no persistence.
   */
  readonly persistence?: boolean | undefined
  /** Start one replica of each server (`--replicaof`), for the nodes' `waitForReplicas` (`Fleet.replicas`); local fleets only. */
  readonly replicas?: boolean | undefined
  /**
   * Start one Sentinel (`redis-server --sentinel`) watching every server as
   * master `fleet-<index>` (quorum 1, down after 1 s), to fail over to its
   * replica (needs `replicas`); local fleets only.
   */
  readonly sentinels?: boolean | undefined
  /**
   * Make the servers one Redis Cluster (`cluster-enabled`, then `redis-cli
   * --cluster create`, no replicas): every server a master of a share of the
   * slots (`Fleet.cluster`); local fleets only. A killed server keeps its
   * cluster identity and slots when started again (its `nodes.conf`), not its keys.
   */
  readonly cluster?: boolean | undefined
  /**
   * Servers that speak TLS only (`tls-port`), with the test certificate in
   * fleet/tls/ (self-signed, for 127.0.0.1, clients not asked for one):
   * `Fleet.tlsCa` is what a client trusts, and `Fleet.nodes` carry it. Local
   * fleets only, without replicas, Sentinels or a cluster.
   */
  readonly tls?: boolean | undefined
}

/**
 * The fleet's TLS certificate and key (fleet/tls/, valid until 2126), as
 * files the servers read and the certificate a client trusts.
 */
const tlsFiles = (() => {
  const file = (name: string) => fileURLToPath(new URL(`./tls/${name}`, import.meta.url))
  return { cert: file("cert.pem"), key: file("key.pem") }
})()

/** The CA a client of a TLS fleet trusts: the servers' own self-signed certificate. */
const tlsCa = (options: FleetOptions): string | undefined => options.tls === true ? readFileSync(tlsFiles.cert, "utf8") : undefined

/** The master name the fleet's Sentinel knows server `index` by. */
export const masterName = (index: number) => `fleet-${index}`

/**
 * PIDs this process started, killed when it exits even if finalizers never run
 * (a test worker ended by a signal or a timeout). Only these PIDs, never by name.
 */
const started = new Set<number>()
let exitHooksInstalled = false
const killStarted = () => {
  for (const pid of started) {
    try {
      process.kill(pid, "SIGCONT")
      process.kill(pid, "SIGKILL")
    } catch {
      // already gone
    }
  }
  started.clear()
}
const installExitHooks = () => {
  if (exitHooksInstalled) return
  exitHooksInstalled = true
  process.once("exit", killStarted)
  for (const name of ["SIGINT", "SIGTERM"] as const) {
    // Once: after cleaning up, the same signal is raised again and ends the process as it would have.
    process.once(name, () => {
      killStarted()
      process.kill(process.pid, name)
    })
  }
}

const signal = (pid: number | undefined, name: NodeJS.Signals) =>
  Effect.sync(() => {
    if (pid === undefined) return
    try {
      process.kill(pid, name)
    } catch {
      // the process already exited
    }
  })

/** A free port of 127.0.0.1 no server of this process was given before (freePort.ts). */
const freePort = Effect.tryPromise({
  try: FreePort.freePort,
  catch: (cause) => new FleetError({ message: "no free port", cause })
})

/**
 * A separate admin connection to one server, for test assertions and fault
 * injection (FLUSHALL, CONFIG SET, REPLICAOF ...). It queues commands while
 * the server is down or paused, unlike the lock manager's fail-fast nodes.
 */
const adminConnection = (index: number, port: number, options: FleetOptions, fleetScope: Scope.Scope) =>
  Effect.gen(function*() {
    const client = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new Redis({
          host: "127.0.0.1",
          port,
          password: options.password,
          tls: options.tls === true ? { ca: tlsCa(options) } : undefined,
          lazyConnect: true,
          retryStrategy: () => 50,
          maxRetriesPerRequest: null
        })
      ),
      (client) => Effect.sync(() => client.disconnect())
    ).pipe(Scope.extend(fleetScope))
    client.on("error", () => {}) // it reconnects on its own; errors surface on the commands

    // Bounded: a command that waits longer than any test pauses a server names itself instead of hanging the test.
    const call = (command: string, ...args: ReadonlyArray<string | number>) =>
      Effect.tryPromise({
        try: () => client.call(command, ...args),
        catch: (cause) => new FleetError({ message: `server ${index} (port ${port}): ${command} failed`, cause })
      }).pipe(Effect.timeoutFail({
        duration: adminCallTimeout,
        onTimeout: () =>
          new FleetError({ message: `server ${index} (port ${port}): ${command} did not answer within ${Duration.format(adminCallTimeout)}` })
      }))

    const awaitReady = Effect.promise(() => client.connect().catch(() => undefined)).pipe(
      Effect.zipRight(call("PING").pipe(
        Effect.timeout("200 millis"),
        Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("10 seconds")))
      )),
      Effect.mapError((cause) => new FleetError({ message: `redis server ${index} did not answer on port ${port}`, cause }))
    )
    return { call, awaitReady }
  })

const adminCallTimeout = Duration.seconds(40)

const startLocalServer = (
  index: number,
  dir: string,
  options: FleetOptions,
  fleetScope: Scope.Scope,
  replicaOf?: number
): Effect.Effect<RedisServer, FleetError, CommandExecutor.CommandExecutor> =>
  Effect.gen(function*() {
    const port = yield* freePort
    // A cluster's bus port of its own choosing, not `port` + 10000, which may be taken.
    const busPort = options.cluster === true ? yield* freePort : undefined
    const executor = yield* Effect.context<CommandExecutor.CommandExecutor>()
    let running: { readonly pid: number; readonly scope: Scope.CloseableScope } | undefined

    const admin = yield* adminConnection(index, port, options, fleetScope)

    const start = Effect.gen(function*() {
      if (running !== undefined) return
      const scope = yield* Scope.fork(fleetScope, ExecutionStrategy.sequential)
      const args = [
        ...(options.tls === true
          ? ["--port", "0", "--tls-port", String(port), "--tls-cert-file", tlsFiles.cert, "--tls-key-file", tlsFiles.key,
            "--tls-ca-cert-file", tlsFiles.cert, "--tls-auth-clients", "no"]
          : ["--port", String(port)]),
        "--bind", "127.0.0.1", "--save", "",
        "--dir", dir, "--logfile", `${dir}/redis.log`
      ]
      args.push(...(options.persistence === true ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"]))
      if (options.password !== undefined) args.push("--requirepass", options.password)
      if (options.password !== undefined && replicaOf !== undefined) args.push("--masterauth", options.password)
      // A cluster's replica is made one by the cluster (CLUSTER REPLICATE, createCluster).
      if (replicaOf !== undefined && options.cluster !== true) args.push("--replicaof", "127.0.0.1", String(replicaOf))
      if (options.cluster === true) {
        args.push("--cluster-enabled", "yes", "--cluster-config-file", `${dir}/nodes.conf`, "--cluster-node-timeout", "1000")
        args.push("--cluster-port", String(busPort))
      }
      const proc = yield* Command.start(Command.make("redis-server", ...args)).pipe(
        Scope.extend(scope),
        Effect.provide(executor),
        Effect.mapError((cause) => new FleetError({ message: `cannot start redis-server: ${cause.message}`, cause }))
      )
      started.add(proc.pid)
      running = { pid: proc.pid, scope }
      // Runs before the process's own finalizer (last in, first out): a stopped
      // process would not act on the SIGTERM that ends it.
      yield* Scope.addFinalizer(scope, Effect.sync(() => started.delete(proc.pid)).pipe(
        Effect.zipRight(signal(proc.pid, "SIGCONT"))
      ))
      yield* admin.awaitReady
    })

    const kill = Effect.suspend(() => {
      const current = running
      if (current === undefined) return Effect.void
      running = undefined
      return signal(current.pid, "SIGKILL").pipe(Effect.zipRight(Scope.close(current.scope, Exit.void)))
    })

    yield* start

    return {
      index,
      port,
      busPort,
      pid: () => running?.pid,
      pause: Effect.suspend(() => signal(running?.pid, "SIGSTOP")),
      resume: Effect.suspend(() => signal(running?.pid, "SIGCONT")),
      kill,
      start,
      call: admin.call
    }
  })

/**
 * `n` local `redis-server` processes on free ports, stopped by PID when the
 * layer's scope closes. A fleet that does not come up (a port taken between
 * its choice and the server's bind; a cluster whose nodes never agree) is
 * stopped and made again on new ports, twice at most.
 */
export const layerLocal = (n: number, options: FleetOptions = {}): Layer.Layer<RedisFleet, FleetError> =>
  Layer.scoped(
    RedisFleet,
    Effect.gen(function*() {
      installExitHooks()
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "effect-redlock-fleet-" }).pipe(
        Effect.mapError((cause) => new FleetError({ message: "cannot make a temporary directory", cause }))
      )
      const scope = yield* Effect.scope
      let tries = 0
      const attempt = Effect.suspend(() => {
        tries++
        return Effect.flatMap(Scope.fork(scope, ExecutionStrategy.sequential), (attemptScope) =>
          startLocalFleet(n, options, `${dir}/${tries}`, attemptScope).pipe(
            // Said on stderr: a fleet made again is worth knowing of, even when the next try comes up.
            Effect.tapError((error) => Effect.sync(() => console.error(`test fleet, try ${tries}: ${error.message}`))),
            Effect.onError(() => Scope.close(attemptScope, Exit.void))
          ))
      })
      return yield* Effect.retry(attempt, { times: 2 })
    })
  ).pipe(Layer.provide(NodeContext.layer))

// One try of `layerLocal` in `dir`, its processes stopped when `scope` closes.
const startLocalFleet = (n: number, options: FleetOptions, dir: string, scope: Scope.Scope) =>
  Effect.gen(function*() {
    if (options.tls === true && (options.replicas === true || options.sentinels === true || options.cluster === true)) {
      return yield* new FleetError({ message: "a TLS fleet has no replicas, Sentinels or cluster" })
    }
    const fs = yield* FileSystem.FileSystem
    // One directory per server: data files of different servers must not mix.
    const serverDirectory = (name: string) =>
      fs.makeDirectory(`${dir}/${name}`, { recursive: true }).pipe(
        Effect.mapError((cause) => new FleetError({ message: "cannot make a server directory", cause })),
        Effect.as(`${dir}/${name}`)
      )
    const servers = yield* Effect.forEach(
      Array.from({ length: n }, (_, index) => index),
      (index) => Effect.flatMap(serverDirectory(`node-${index}`), (path) => startLocalServer(index, path, options, scope)),
      { concurrency: "unbounded" }
    )
    const replicas = options.replicas !== true ? [] : yield* Effect.forEach(
      servers,
      (server) =>
        Effect.flatMap(
          serverDirectory(`node-${server.index}-replica`),
          (path) => startLocalServer(server.index, path, options, scope, server.port)
        ),
      { concurrency: "unbounded" }
    )
    const sentinels = options.sentinels !== true ? [] : [yield* startLocalSentinel(dir, servers, options, scope)]
    const fleet = makeFleet(servers, replicas, sentinels, options)
    if (options.cluster === true) {
      yield* createCluster(servers, replicas, options)
      yield* fleet.clusterOk.pipe(
        Effect.mapError((cause) => new FleetError({ message: "the cluster did not become ok", cause }))
      )
    }
    return fleet
  })

/**
 * One Sentinel watching `masters`, on a free port, stopped by PID with the
 * fleet. Its configuration file is its own to rewrite (Sentinel records what
 * it learns there).
 */
const startLocalSentinel = (
  dir: string,
  masters: ReadonlyArray<RedisServer>,
  options: FleetOptions,
  fleetScope: Scope.Scope
): Effect.Effect<{ readonly port: number }, FleetError, CommandExecutor.CommandExecutor | FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const port = yield* freePort
    const lines = [`port ${port}`, "bind 127.0.0.1", `dir ${dir}`, `logfile ${dir}/sentinel.log`]
    for (const master of masters) {
      const name = masterName(master.index)
      lines.push(
        `sentinel monitor ${name} 127.0.0.1 ${master.port} 1`,
        `sentinel down-after-milliseconds ${name} 1000`,
        `sentinel failover-timeout ${name} 5000`
      )
      if (options.password !== undefined) lines.push(`sentinel auth-pass ${name} ${options.password}`)
    }
    const file = `${dir}/sentinel.conf`
    yield* fs.writeFileString(file, lines.join("\n") + "\n").pipe(
      Effect.mapError((cause) => new FleetError({ message: "cannot write the Sentinel configuration", cause }))
    )
    const proc = yield* Command.start(Command.make("redis-server", file, "--sentinel")).pipe(
      Scope.extend(fleetScope),
      Effect.mapError((cause) => new FleetError({ message: `cannot start redis-server --sentinel: ${cause.message}`, cause }))
    )
    started.add(proc.pid)
    yield* Scope.addFinalizer(fleetScope, Effect.sync(() => started.delete(proc.pid)))
    // Ready once it answers, and knows every master.
    const probe = new Redis({ host: "127.0.0.1", port, lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: null })
    probe.on("error", () => {})
    yield* Effect.addFinalizer(() => Effect.sync(() => probe.disconnect())).pipe(Scope.extend(fleetScope))
    yield* Effect.tryPromise({
      try: () => probe.call("SENTINEL", "MASTERS") as Promise<ReadonlyArray<unknown>>,
      catch: (cause) => new FleetError({ message: "the Sentinel did not answer", cause })
    }).pipe(
      Effect.filterOrFail((known) => known.length === masters.length, () => new FleetError({ message: "the Sentinel does not know every master yet" })),
      Effect.timeout("500 millis"),
      Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("10 seconds"))),
      Effect.mapError((cause) => new FleetError({ message: `the Sentinel on port ${port} is not ready`, cause }))
    )
    return { port }
  })

/**
 * `redis-cli --cluster create` over `servers`: each a master of an equal
 * share of the slots; then `replicas[i]` joins as the replica of `servers[i]`.
 */
const createCluster = (servers: ReadonlyArray<RedisServer>, replicas: ReadonlyArray<RedisServer>, options: FleetOptions) =>
  Effect.gen(function*() {
    const args = ["--cluster", "create", ...servers.map((server) => `127.0.0.1:${server.port}`), "--cluster-yes"]
    if (options.password !== undefined) args.push("-a", options.password, "--no-auth-warning")
    // Bounded: it waits for the nodes to agree as long as it takes (forever when one cannot be reached).
    const exitCode = yield* Command.exitCode(Command.make("redis-cli", ...args)).pipe(
      Effect.mapError((cause) => new FleetError({ message: `cannot run redis-cli --cluster create: ${cause.message}`, cause })),
      Effect.timeoutFail({
        duration: "15 seconds",
        onTimeout: () => new FleetError({ message: "redis-cli --cluster create did not end within 15 s" })
      })
    )
    if (exitCode !== 0) return yield* new FleetError({ message: `redis-cli --cluster create exited with ${exitCode}` })
    yield* Effect.forEach(replicas, (replica, i) =>
      Effect.gen(function*() {
        const master = servers[i]
        const masterId = String(yield* master.call("CLUSTER", "MYID"))
        yield* replica.call("CLUSTER", "MEET", "127.0.0.1", master.port, master.busPort!)
        // Once the replica knows the master (the handshake takes a moment).
        yield* replica.call("CLUSTER", "REPLICATE", masterId).pipe(
          Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("10 seconds")))
        )
      }), { discard: true })
  })

const makeFleet = (
  servers: ReadonlyArray<RedisServer>,
  replicas: ReadonlyArray<RedisServer>,
  sentinels: ReadonlyArray<{ readonly port: number }>,
  options: FleetOptions
): Fleet => ({
  servers,
  replicas,
  sentinels,
  replicasInSync: replicas.length === 0 ? Effect.void : Effect.forEach(servers, (server) =>
    Effect.flatMap(server.call("WAIT", 1, 100), (acknowledged) =>
      Number(acknowledged) >= 1 ? Effect.void : Effect.fail("not in sync yet")).pipe(
        Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("10 seconds")))
      ), { discard: true }),
  cluster: options.cluster !== true ? [] : servers.map((server) => ({ host: "127.0.0.1", port: server.port })),
  clusterOk: options.cluster !== true ? Effect.void : Effect.forEach(servers, (server) =>
    Effect.flatMap(server.call("CLUSTER", "INFO"), (info) =>
      String(info).includes("cluster_state:ok") ? Effect.void : Effect.fail("cluster_state is not ok yet")).pipe(
        Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("20 seconds")))
      ), { discard: true }),
  nodes: servers.map((server) => ({
    host: "127.0.0.1",
    port: server.port,
    password: options.password === undefined ? undefined : Redacted.make(options.password),
    ...(options.tls === true ? { tls: { ca: tlsCa(options) } } : {})
  })),
  tlsCa: tlsCa(options),
  dbsizes: Effect.forEach(servers, (server) => Effect.map(server.call("DBSIZE"), Number), {
    concurrency: "unbounded"
  }),
  // Replicas are running and resumed first: a master's FLUSHALL reaches them.
  reset: Effect.zipRight(
    Effect.forEach(replicas, (replica) => Effect.zipRight(replica.resume, replica.start), { concurrency: "unbounded", discard: true }),
    Effect.forEach(servers, (server) =>
      server.resume.pipe(
        Effect.zipRight(server.start),
        Effect.zipRight(server.call("FLUSHALL"))
      ), { concurrency: "unbounded", discard: true })
  )
})

/** Whether a Docker (or compatible) engine answers; testcontainers needs one. */
export const containerEngineAvailable: Effect.Effect<boolean> = Effect.promise(() =>
  import("testcontainers").then((tc) => tc.getContainerRuntimeClient()).then(() => true, () => false)
)

const startContainerServer = (index: number, options: FleetOptions, fleetScope: Scope.Scope) =>
  Effect.gen(function*() {
    const tc = yield* Effect.promise(() => import("testcontainers"))
    const runtime = yield* Effect.tryPromise({
      try: () => tc.getContainerRuntimeClient(),
      catch: (cause) => new FleetError({ message: "no container engine", cause })
    })
    // A fixed host port on loopback, so that the port survives kill and start.
    const port = yield* freePort
    const command = ["redis-server", "--save", "", "--appendonly", "no"]
    if (options.password !== undefined) command.push("--requirepass", options.password)
    const container = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () =>
          new tc.GenericContainer("redis:7-alpine")
            .withCommand(command)
            .withExposedPorts({ container: 6379, host: port })
            .start(),
        catch: (cause) => new FleetError({ message: `cannot start a redis container`, cause })
      }),
      (started) => Effect.promise(() => started.stop({ timeout: 0 }).catch(() => undefined))
    ).pipe(Scope.extend(fleetScope))
    const handle = runtime.container.getById(container.getId())
    const docker = (what: string, run: () => Promise<unknown>) =>
      Effect.tryPromise({ try: run, catch: (cause) => new FleetError({ message: `container ${index}: ${what}`, cause }) })
    const admin = yield* adminConnection(index, port, options, fleetScope)
    yield* admin.awaitReady
    const server: RedisServer = {
      index,
      port,
      pid: () => undefined,
      pause: Effect.ignore(docker("pause", () => handle.pause())),
      resume: Effect.ignore(docker("unpause", () => handle.unpause())),
      kill: Effect.ignore(docker("kill", () => handle.kill())),
      start: docker("start", () => handle.start()).pipe(Effect.zipRight(admin.awaitReady)),
      call: admin.call
    }
    return server
  })

/**
 * `n` Redis containers through testcontainers. Fails with a `FleetError` when
 * no container engine answers (check {@link containerEngineAvailable} first).
 */
export const layerContainers = (n: number, options: FleetOptions = {}): Layer.Layer<RedisFleet, FleetError> =>
  Layer.scoped(
    RedisFleet,
    Effect.gen(function*() {
      const scope = yield* Effect.scope
      const servers = yield* Effect.forEach(
        Array.from({ length: n }, (_, index) => index),
        (index) => startContainerServer(index, options, scope),
        { concurrency: "unbounded" }
      )
      // Replicas, Sentinels and clusters are local fleets' only.
      return makeFleet(servers, [], [], { ...options, cluster: false })
    })
  )
