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
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort } from "../../../fleet/freePort.js"

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

const signal = (pid: number | undefined, name: NodeJS.Signals) => {
  if (pid === undefined) return
  try {
    process.kill(pid, name)
  } catch {
    // the process already exited
  }
}

// PIDs this process started and has not stopped: killed when it exits even if
// no finalizer ran (a test that timed out leaves its layer's scope open).
const running = new Set<number>()
process.once("exit", () => running.forEach((pid) => signal(pid, "SIGKILL")))

export const stop = (child: ChildProcess.ChildProcess, dir: string) => {
  running.delete(child.pid ?? -1)
  signal(child.pid, "SIGCONT")
  signal(child.pid, "SIGKILL")
  Fs.rmSync(dir, { recursive: true, force: true })
}

/** `work`, or a rejection after `millis` or as soon as `exited` rejects: a dead server never answers. */
const within = <A>(work: Promise<A>, millis: number, exited: Promise<never>): Promise<A> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${millis} ms`)), millis)
  })
  return Promise.race([work, exited, late]).finally(() => clearTimeout(timer))
}

/** Until `CLUSTER INFO` says the cluster is ok. */
const clusterOk = async (admin: Redis): Promise<void> => {
  while (!String(await admin.call("CLUSTER", "INFO")).includes("cluster_state:ok")) {
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

export interface Started {
  readonly port: number
  readonly admin: Redis
  readonly child: ChildProcess.ChildProcess
  readonly dir: string
}

/**
 * A redis-server run with the arguments `argsOf` gives for a new folder and
 * `portCount` free ports (its own first), once it answers PING and `setUp`
 * is done, each within 10 s. A server that exits first (a port taken by
 * another program between its choice and the bind) or does not answer is
 * stopped and started again on new ports, three tries in all.
 */
export const startProcess = async (
  prefix: string,
  portCount: number,
  argsOf: (dir: string, ports: ReadonlyArray<number>) => ReadonlyArray<string>,
  setUp: (admin: Redis) => Promise<unknown> = async () => {}
): Promise<Started> => {
  for (let tries = 1;; tries++) {
    const ports: Array<number> = []
    for (let index = 0; index < portCount; index++) ports.push(await freePort())
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))
    const child = ChildProcess.spawn("redis-server", argsOf(dir, ports), { stdio: "ignore" })
    if (child.pid !== undefined) running.add(child.pid)
    const exited = new Promise<never>((_, reject) => {
      child.once("error", reject)
      child.once("exit", (code, name) => reject(new Error(`redis-server on port ${ports[0]} exited (${code ?? name}) before it was ready`)))
    })
    exited.catch(() => {})
    const admin = new Redis({ host: "127.0.0.1", port: ports[0], retryStrategy: () => 50, maxRetriesPerRequest: null })
    admin.on("error", () => {}) // it reconnects on its own; errors surface on the commands
    try {
      await within(admin.ping(), 10_000, exited)
      await within(setUp(admin), 10_000, exited)
      return { port: ports[0], admin, child, dir }
    } catch (error) {
      admin.disconnect()
      const log = Fs.readdirSync(dir).filter((file) => file.endsWith(".log"))
        .map((file) => Fs.readFileSync(Path.join(dir, file), "utf8").trim().split("\n").slice(-2).join(" / ")).join("")
      stop(child, dir)
      if (tries === 3) throw error
      // Said on stderr: a server started again is worth knowing of, even when the next try comes up.
      console.error(`test fleet, try ${tries}: ${(error as Error).message}${log === "" ? "" : `; its log ends: ${log}`}`)
    }
  }
}

/** A server; with `cluster`, a cluster of its own: every hash slot on it. */
const startServer = (replicaOf?: number, cluster = false) => Effect.acquireRelease(
  Effect.promise(async () => {
    // A cluster's bus port of its own choosing, not `port` + 10000, which may be taken.
    const started = await startProcess("effect-redlock-v4-fleet-", cluster ? 2 : 1, (dir, [port, busPort]) => [
      "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", Path.join(dir, "redis.log"),
      ...(replicaOf === undefined ? [] : ["--replicaof", "127.0.0.1", String(replicaOf)]),
      // A cluster that never met another node announces no address of its own: ioredis could not reach it.
      ...(cluster ? ["--cluster-enabled", "yes", "--cluster-config-file", Path.join(dir, "nodes.conf"), "--cluster-announce-ip", "127.0.0.1"] : []),
      ...(busPort === undefined ? [] : ["--cluster-port", String(busPort)])
    ], async (admin) => {
      if (!cluster) return
      await admin.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
      await clusterOk(admin)
    })
    const { admin, child, dir, port } = started
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
      stop(child, dir)
    })
)

/** A Sentinel watching every server as master `fleet-<i>` (quorum 1, down after 1 s), stopped by PID. */
const startSentinel = (masters: ReadonlyArray<RedisServer>) => Effect.acquireRelease(
  Effect.promise(() =>
    startProcess("effect-redlock-v4-sentinel-", 1, (dir, [port]) => {
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
      return [file, "--sentinel"]
    }).then((started) => {
      started.admin.disconnect()
      return started
    })
  ),
  ({ child, dir }) => Effect.sync(() => stop(child, dir))
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
