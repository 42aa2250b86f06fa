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
}

export class RedisFleet extends Context.Service<RedisFleet, {
  readonly servers: ReadonlyArray<RedisServer>
  /** One replica of each server, in order, when made with `replicas`. */
  readonly replicas: ReadonlyArray<RedisServer>
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

const startServer = (replicaOf?: number) => Effect.acquireRelease(
  Effect.promise(async () => {
    const port = await freePort()
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-redlock-v4-fleet-"))
    const child = ChildProcess.spawn(
      "redis-server",
      [
        "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", Path.join(dir, "redis.log"),
        ...(replicaOf === undefined ? [] : ["--replicaof", "127.0.0.1", String(replicaOf)])
      ],
      { stdio: "ignore" }
    )
    const admin = new Redis({ host: "127.0.0.1", port, retryStrategy: () => 50, maxRetriesPerRequest: null })
    admin.on("error", () => {}) // it reconnects on its own; errors surface on the commands
    await ready(admin, 10_000)
    const server: RedisServer = {
      port,
      admin,
      pause: Effect.sync(() => signal(child.pid, "SIGSTOP")),
      resume: Effect.sync(() => signal(child.pid, "SIGCONT"))
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

/** `n` servers, started concurrently; with `replicas`, then one replica of each. */
export const layerLocal = (n: number, options: { readonly replicas?: boolean } = {}): Layer.Layer<RedisFleet> =>
  Layer.effect(
    RedisFleet,
    Effect.gen(function*() {
      const started = yield* Effect.forEach(Array.from({ length: n }), () => startServer(), { concurrency: "unbounded" })
      const replicas = options.replicas !== true ? [] : yield* Effect.forEach(
        started,
        ({ server }) => startServer(server.port),
        { concurrency: "unbounded" }
      )
      return RedisFleet.of({
        servers: started.map(({ server }) => server),
        replicas: replicas.map(({ server }) => server),
        nodes: started.map(({ server }) => ({ host: "127.0.0.1", port: server.port }))
      })
    })
  )
