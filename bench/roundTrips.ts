/**
 * Diagnostic: why a semaphore at N = 1 hands over more slowly than
 * redis-semaphore's single-node `Semaphore` polls. The semaphore workload of
 * bench/semaphores.ts (8 workers, 3 permits, 1 ms hold) on one server, ours
 * in line from promise code against the peer, alternated, each warmed up
 * first; for each: permits/s, the client's CPU per permit, its event loop's
 * utilization, and the round trip of a `PING` sent every 2–5 ms on a
 * connection of its own (what any reply waits for under that load: the
 * client's busy event loop and the machine's two cores, beside the server).
 * `npx tsc -p tsconfig.bench.json && node .bench-build/bench/roundTrips.js [rounds] [seconds]`
 */
import * as Effect from "effect/Effect"
import { Redis } from "ioredis"
import { performance as hooks } from "node:perf_hooks"
import * as RedisFleet from "../fleet/RedisFleet.js"
import { format, percentile } from "./scenarios.js"
import * as Semaphores from "./semaphores.js"

const [rounds = "2", seconds = "3"] = process.argv.slice(2)
const warmUpSeconds = 2

const compared = Semaphores.contenders.filter((contender) =>
  contender.nodes === 1 && (contender.name === "effect-redlock/Promise permits, N = 1" || contender.name.startsWith("redis-semaphore"))
)

const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

interface Measured {
  readonly permitsPerSecond: number
  readonly cpuPerPermit: number
  readonly eventLoopUtilization: number
  readonly pingP50: number
  readonly pingP90: number
}

const measure = async (contender: Semaphores.SemaphoreContender, port: number, key: string): Promise<Measured> => {
  const clients = await Promise.all(Array.from({ length: Semaphores.workers }, () => contender.start([port], key)))
  const run = async (millis: number) => {
    let permits = 0
    const end = performance.now() + millis
    await Promise.all(clients.map(async (client) => {
      while (performance.now() < end) {
        await client.withPermit(async () => {
          permits++
          await sleep(1)
        })
      }
    }))
    return permits
  }
  await run(warmUpSeconds * 1000)
  const pinger = new Redis({ host: "127.0.0.1", port })
  await pinger.ping()
  const pings: Array<number> = []
  let pinging = true
  const pingLoop = (async () => {
    while (pinging) {
      await sleep(2 + Math.random() * 3)
      const sent = performance.now()
      await pinger.ping()
      pings.push(performance.now() - sent)
    }
  })()
  const cpu = process.cpuUsage()
  const loop = hooks.eventLoopUtilization()
  const start = performance.now()
  const permits = await run(Number(seconds) * 1000)
  const elapsed = performance.now() - start
  const used = process.cpuUsage(cpu)
  const utilization = hooks.eventLoopUtilization(loop).utilization
  pinging = false
  await pingLoop
  pinger.disconnect()
  await Promise.all(clients.map((client) => client.close()))
  return {
    permitsPerSecond: permits / (elapsed / 1000),
    cpuPerPermit: (used.user + used.system) / 1000 / Math.max(1, permits),
    eventLoopUtilization: utilization,
    pingP50: percentile(pings, 50),
    pingP90: percentile(pings, 90)
  }
}

const program = Effect.gen(function*() {
  const fleet = yield* RedisFleet.RedisFleet
  const port = fleet.servers[0].port
  const lines: Array<string> = [
    "| run | contender | permits/s | CPU ms/permit | event loop utilization | PING p50 ms | PING p90 ms |",
    "|---|---|---|---|---|---|---|"
  ]
  for (let round = 0; round < Number(rounds); round++) {
    for (const contender of round % 2 === 0 ? compared : [...compared].reverse()) {
      const result = yield* Effect.promise(() => measure(contender, port, `bench:roundtrips:${round}:${contender.name.split(" ")[0]}`))
      yield* fleet.reset
      lines.push(
        `| ${round + 1} | ${contender.name} | ${
          [result.permitsPerSecond, result.cpuPerPermit, result.eventLoopUtilization, result.pingP50, result.pingP90].map(format).join(" | ")
        } |`
      )
    }
  }
  return lines.join("\n")
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(1)))).then((table) => {
  console.log(`round trips under the semaphore workload, N = 1 (${Semaphores.workers} workers, ${Semaphores.limit} permits, 1 ms hold):\n`)
  console.log(table)
  process.exit(0)
}, (error) => {
  console.error(error)
  process.exit(1)
})
