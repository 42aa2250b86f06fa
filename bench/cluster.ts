/**
 * What a Redis Cluster node costs against a plain node: `npm run
 * bench:cluster [-- seconds]`. One lock manager for promise code
 * (effect-redlock/Promise) over one node, each way: a plain redis-server,
 * and a local 3-master Redis Cluster through the `cluster` option. Two
 * workloads: one caller locking and unlocking in turn (latency), and 32
 * callers on distinct resources at once (throughput); beside each, the
 * floor: the same number of round trips as bare `SET NX PX` + `DEL` from the
 * library's client (ioredis `Redis` or `Cluster`).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Cluster, Redis } from "ioredis"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import { makeRedlock } from "effect-redlock/Promise"
import { percentile } from "./scenarios.js"

const seconds = Number(process.argv[2] ?? 3)
const callers = 32

interface Figures {
  readonly opsPerSecond: number
  readonly p50Millis: number
  readonly p99Millis: number
}

/** `operation` (its argument: the caller's resource) in turn by `concurrency` callers for `seconds`. */
const run = async (concurrency: number, operation: (resource: string) => Promise<void>): Promise<Figures> => {
  const latencies: Array<number> = []
  const endAt = performance.now() + seconds * 1000
  await Promise.all(Array.from({ length: concurrency }, async (_, caller) => {
    for (let i = 0; performance.now() < endAt; i++) {
      const started = performance.now()
      await operation(`bench:cluster:${caller}:${i % 100}`)
      latencies.push(performance.now() - started)
    }
  }))
  return {
    opsPerSecond: latencies.length / seconds,
    p50Millis: percentile(latencies, 50),
    p99Millis: percentile(latencies, 99)
  }
}

const measure = async (
  label: string,
  node: {
    readonly host?: string
    readonly port?: number
    readonly cluster?: { readonly nodes: ReadonlyArray<{ readonly host: string; readonly port: number }> }
  },
  bare: Redis | Cluster
) => {
  const redlock = await makeRedlock([node], { restartQuarantine: false })
  const lockAndUnlock = async (resource: string) => {
    const lock = await redlock.acquire(resource, { ttl: 10_000 })
    await redlock.release(lock)
  }
  const floor = async (resource: string) => {
    await bare.set(`{${resource}}`, "v", "PX", 10_000, "NX")
    await bare.del(`{${resource}}`)
  }
  await run(4, lockAndUnlock) // warm-up, not reported
  for (const [workload, concurrency] of [["1 caller", 1], [`${callers} callers`, callers]] as const) {
    const ours = await run(concurrency, lockAndUnlock)
    const wire = await run(concurrency, floor)
    console.log(
      `${label.padEnd(22)} ${workload.padEnd(11)} lock+unlock ${ours.opsPerSecond.toFixed(0).padStart(6)}/s ` +
        `p50 ${ours.p50Millis.toFixed(2)} ms p99 ${ours.p99Millis.toFixed(2)} ms | ` +
        `SET NX+DEL floor ${wire.opsPerSecond.toFixed(0).padStart(6)}/s p50 ${wire.p50Millis.toFixed(2)} ms ` +
        `(${(ours.opsPerSecond / wire.opsPerSecond).toFixed(2)}x)`
    )
  }
  await redlock.close()
}

const program = Effect.gen(function*() {
  // Built in the program's scope: the servers run until it ends.
  const plain = Context.get(yield* Layer.build(RedisFleet.layerLocal(1)), RedisFleet.RedisFleet)
  const cluster = Context.get(yield* Layer.build(RedisFleet.layerLocal(3, { cluster: true })), RedisFleet.RedisFleet)
  yield* Effect.promise(async () => {
    const bare = new Redis({ host: "127.0.0.1", port: plain.servers[0].port })
    await measure("plain node", { host: "127.0.0.1", port: plain.servers[0].port }, bare)
    bare.disconnect()
    const bareCluster = new Cluster([...cluster.cluster])
    await new Promise((resolve) => bareCluster.once("ready", resolve))
    await measure("3-master cluster node", { cluster: { nodes: cluster.cluster } }, bareCluster)
    bareCluster.disconnect()
  })
})

Effect.runPromise(Effect.scoped(program)).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
