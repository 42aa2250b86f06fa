/**
 * Local `redis-server` processes for this package's tests, on free ports of
 * 127.0.0.1, each with its own folder, stopped by PID when the layer's scope
 * closes (never by name: the machine may run other servers).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Redis } from "ioredis"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"

export interface RedisServer {
  readonly port: number
  /** A client for assertions and faults (queues commands while the server is away). */
  readonly admin: Redis
  readonly pause: Effect.Effect<void>
  readonly resume: Effect.Effect<void>
  /** SIGKILL (for good: the fleet does not start it again). */
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

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const signal = (pid: number | undefined, name: NodeJS.Signals) => {
  if (pid === undefined) return
  try {
    process.kill(pid, name)
  } catch {
    // the process already exited
  }
}

/** Answers PING within `withinMillis`, or rejects. */
const ready = async (admin: Redis, withinMillis: number): Promise<void> => {
  const giveUpAt = Date.now() + withinMillis
  for (;;) {
    try {
      await admin.ping()
      return
    } catch (error) {
      if (Date.now() > giveUpAt) throw error
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

/** Until `CLUSTER INFO` says the cluster is ok, at most `withinMillis`. */
const clusterOk = async (admin: Redis, withinMillis: number): Promise<void> => {
  const giveUpAt = Date.now() + withinMillis
  while (!String(await admin.call("CLUSTER", "INFO")).includes("cluster_state:ok")) {
    if (Date.now() > giveUpAt) throw new Error("the cluster did not become ok")
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** A server; with `cluster`, a cluster of its own: every hash slot on it. */
const startServer = (replicaOf?: number, cluster = false) => Effect.acquireRelease(
  Effect.promise(async () => {
    const port = await freePort()
    // A cluster's bus port of its own choosing, not `port` + 10000, which may be taken.
    const busPort = cluster ? await freePort() : undefined
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-redlock-v4-fleet-"))
    const child = ChildProcess.spawn(
      "redis-server",
      [
        "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", Path.join(dir, "redis.log"),
        ...(replicaOf === undefined ? [] : ["--replicaof", "127.0.0.1", String(replicaOf)]),
        // A cluster that never met another node announces no address of its own: ioredis could not reach it.
        ...(cluster ? ["--cluster-enabled", "yes", "--cluster-config-file", Path.join(dir, "nodes.conf"), "--cluster-announce-ip", "127.0.0.1"] : []),
        ...(busPort === undefined ? [] : ["--cluster-port", String(busPort)])
      ],
      { stdio: "ignore" }
    )
    const admin = new Redis({ host: "127.0.0.1", port, retryStrategy: () => 50, maxRetriesPerRequest: null })
    admin.on("error", () => {}) // it reconnects on its own; errors surface on the commands
    try {
      await ready(admin, 10_000)
      if (cluster) {
        await admin.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
        await clusterOk(admin, 10_000)
      }
    } catch (error) {
      // Not yet the release's to stop: stopped here.
      admin.disconnect()
      signal(child.pid, "SIGKILL")
      Fs.rmSync(dir, { recursive: true, force: true })
      throw error
    }
    const server: RedisServer = {
      port,
      admin,
      pause: Effect.sync(() => signal(child.pid, "SIGSTOP")),
      resume: Effect.sync(() => signal(child.pid, "SIGCONT")),
      kill: Effect.sync(() => signal(child.pid, "SIGKILL"))
    }
    return { server, child, dir }
  }),
  ({ child, dir, server }) =>
    Effect.sync(() => {
      server.admin.disconnect()
      signal(child.pid, "SIGCONT")
      signal(child.pid, "SIGKILL")
      Fs.rmSync(dir, { recursive: true, force: true })
    })
)

/** A Sentinel watching every server as master `fleet-<i>` (quorum 1, down after 1 s), stopped by PID. */
const startSentinel = (masters: ReadonlyArray<RedisServer>) => Effect.acquireRelease(
  Effect.promise(async () => {
    const port = await freePort()
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-redlock-v4-sentinel-"))
    const lines = [`port ${port}`, "bind 127.0.0.1", `dir ${dir}`, `logfile ${Path.join(dir, "sentinel.log")}`]
    masters.forEach((master, index) =>
      lines.push(
        `sentinel monitor fleet-${index} 127.0.0.1 ${master.port} 1`,
        `sentinel down-after-milliseconds fleet-${index} 1000`,
        `sentinel failover-timeout fleet-${index} 5000`
      )
    )
    const file = Path.join(dir, "sentinel.conf")
    Fs.writeFileSync(file, lines.join("\n") + "\n")
    const child = ChildProcess.spawn("redis-server", [file, "--sentinel"], { stdio: "ignore" })
    const probe = new Redis({ host: "127.0.0.1", port, retryStrategy: () => 50, maxRetriesPerRequest: null })
    probe.on("error", () => {})
    await ready(probe, 10_000)
    probe.disconnect()
    return { port, child, dir }
  }),
  ({ child, dir }) =>
    Effect.sync(() => {
      signal(child.pid, "SIGKILL")
      Fs.rmSync(dir, { recursive: true, force: true })
    })
)

/**
 * `n` servers, started concurrently; with `replicas`, then one replica of
 * each; with `sentinels`, a Sentinel; with `clusters`, each server a Redis
 * Cluster of one master.
 */
export const layerLocal = (
  n: number,
  options: { readonly replicas?: boolean; readonly sentinels?: boolean; readonly clusters?: boolean } = {}
): Layer.Layer<RedisFleet> =>
  Layer.effect(
    RedisFleet,
    Effect.gen(function*() {
      const started = yield* Effect.forEach(
        Array.from({ length: n }),
        () => startServer(undefined, options.clusters === true),
        { concurrency: "unbounded" }
      )
      const replicas = options.replicas !== true ? [] : yield* Effect.forEach(
        started,
        ({ server }) => startServer(server.port),
        { concurrency: "unbounded" }
      )
      const servers = started.map(({ server }) => server)
      const sentinels = options.sentinels !== true ? [] : [(yield* startSentinel(servers)).port]
      return RedisFleet.of({
        servers,
        replicas: replicas.map(({ server }) => server),
        sentinels,
        nodes: started.map(({ server }) => ({ host: "127.0.0.1", port: server.port }))
      })
    })
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
