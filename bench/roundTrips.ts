/**
 * Diagnostic: why a semaphore at N = 1 hands over more slowly than
 * redis-semaphore's single-node `Semaphore` polls. The semaphore workload of
 * bench/semaphores.ts (8 workers, 3 permits, 1 ms hold) on one server, ours
 * in line from promise code against the peer, alternated, each warmed up
 * first; for each: permits/s, the client's CPU per permit, its event loop's
 * utilization, and the round trip of a `PING` sent every 2–5 ms on a
 * connection of its own (what any reply waits for under that load: the
 * client's busy event loop and the machine's two cores, beside the server).
 * Then where a slot's cycle goes: the hold (the body's 1 ms timer, from the
 * body's start to its end: Node fires a timer in whole milliseconds of its
 * loop's clock, so a hold is not 1 ms), the hand-over (from one holder's end
 * to the next holder's start, ends and starts paired in order: the slot is
 * not known for the peer), the share of slot time lost in hand-overs of more
 * than 2 ms, and the young-generation collections' pauses (ms per second),
 * which stop every hand-over of the process while they run.
 * `npx tsc -p tsconfig.bench.json && node .bench-build/bench/roundTrips.js [rounds] [seconds]`
 */
import * as Effect from "effect/Effect"
import { Redis } from "ioredis"
import { performance as hooks, PerformanceObserver } from "node:perf_hooks"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import { format, percentile } from "./scenarios.js"
import * as Semaphores from "./semaphores.js"

const [rounds = "2", seconds = "3"] = process.argv.slice(2)
const warmUpSeconds = 2

const compared = Semaphores.contenders.filter((contender) =>
  contender.nodes === 1 &&
  (contender.name === "effect-redlock/Promise permits, N = 1" || contender.name.startsWith("redis-semaphore"))
)

const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

interface Measured {
  readonly permitsPerSecond: number
  readonly cpuPerPermit: number
  readonly eventLoopUtilization: number
  readonly pingP50: number
  readonly pingP90: number
  readonly holdMean: number
  readonly handOverMean: number
  /** Slot time spent in hand-overs of more than 2 ms, as a share of all slot time. */
  readonly longHandOvers: number
  /** Young-generation collections' pauses, ms per second. */
  readonly scavengeMillisPerSecond: number
}

/** Holds and hand-overs as a workload's bodies saw them, while `recording`. */
class Timeline {
  recording = false
  readonly holds: Array<number> = []
  readonly handOvers: Array<number> = []
  private readonly ends: Array<number> = []

  started(at: number): void {
    const end = this.ends.shift()
    if (this.recording && end !== undefined) this.handOvers.push(at - end)
  }

  ended(start: number, at: number): void {
    if (!this.recording) return
    this.holds.push(at - start)
    this.ends.push(at)
  }
}

const measure = async (contender: Semaphores.SemaphoreContender, port: number, key: string): Promise<Measured> => {
  const clients = await Promise.all(Array.from({ length: Semaphores.workers }, () => contender.start([port], key)))
  const timeline = new Timeline()
  const run = async (millis: number) => {
    let permits = 0
    const end = performance.now() + millis
    await Promise.all(clients.map(async (client) => {
      while (performance.now() < end) {
        await client.withPermit(async () => {
          const start = performance.now()
          timeline.started(start)
          permits++
          await sleep(1)
          timeline.ended(start, performance.now())
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
  let scavengeMillis = 0
  const countScavenges = (entries: ReadonlyArray<{ readonly duration: number }>) => {
    for (const entry of entries) {
      const { detail } = entry as unknown as { readonly detail?: { readonly kind?: number } }
      if (detail?.kind === minorCollection) scavengeMillis += entry.duration
    }
  }
  const collections = new PerformanceObserver((list) => countScavenges(list.getEntries()))
  collections.observe({ entryTypes: ["gc"] })
  timeline.recording = true
  const cpu = process.cpuUsage()
  const loop = hooks.eventLoopUtilization()
  const start = performance.now()
  const permits = await run(Number(seconds) * 1000)
  const elapsed = performance.now() - start
  const used = process.cpuUsage(cpu)
  const utilization = hooks.eventLoopUtilization(loop).utilization
  timeline.recording = false
  // The entries not yet delivered to the observer count too.
  countScavenges(collections.takeRecords())
  collections.disconnect()
  pinging = false
  await pingLoop
  pinger.disconnect()
  await Promise.all(clients.map((client) => client.close()))
  return {
    permitsPerSecond: permits / (elapsed / 1000),
    cpuPerPermit: (used.user + used.system) / 1000 / Math.max(1, permits),
    eventLoopUtilization: utilization,
    pingP50: percentile(pings, 50),
    pingP90: percentile(pings, 90),
    holdMean: mean(timeline.holds),
    handOverMean: mean(timeline.handOvers),
    longHandOvers: sum(timeline.handOvers.filter((millis) => millis > 2)) / (elapsed * Semaphores.limit),
    scavengeMillisPerSecond: scavengeMillis / (elapsed / 1000)
  }
}

// perf_hooks' kind of a young-generation collection (a scavenge): NODE_PERFORMANCE_GC_MINOR.
const minorCollection = 1
const sum = (values: ReadonlyArray<number>) => values.reduce((total, value) => total + value, 0)
const mean = (values: ReadonlyArray<number>) => values.length === 0 ? 0 : sum(values) / values.length

const program = Effect.gen(function*() {
  const fleet = yield* RedisFleet.RedisFleet
  const port = fleet.servers[0].port
  const lines: Array<string> = [
    "| run | contender | permits/s | CPU ms/permit | event loop utilization | PING p50 ms | PING p90 ms | hold ms | hand-over ms | share of slot time in hand-overs > 2 ms | scavenges ms/s |",
    "|---|---|---|---|---|---|---|---|---|---|---|"
  ]
  for (let round = 0; round < Number(rounds); round++) {
    for (const contender of round % 2 === 0 ? compared : [...compared].reverse()) {
      const result = yield* Effect.promise(() =>
        measure(contender, port, `bench:roundtrips:${round}:${contender.name.split(" ")[0]}`)
      )
      yield* fleet.reset
      lines.push(
        `| ${round + 1} | ${contender.name} | ${
          [
            result.permitsPerSecond,
            result.cpuPerPermit,
            result.eventLoopUtilization,
            result.pingP50,
            result.pingP90,
            result.holdMean,
            result.handOverMean,
            result.longHandOvers,
            result.scavengeMillisPerSecond
          ].map(format).join(" | ")
        } |`
      )
    }
  }
  return lines.join("\n")
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(1)))).then((table) => {
  console.log(
    `round trips under the semaphore workload, N = 1 (${Semaphores.workers} workers, ${Semaphores.limit} permits, 1 ms hold):\n`
  )
  console.log(table)
  process.exit(0)
}, (error) => {
  console.error(error)
  process.exit(1)
})
