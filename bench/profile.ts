/**
 * One contender, one scenario, for profiling:
 * `npx tsc -p tsconfig.bench.json && node --cpu-prof .bench-build/bench/profile.js [contender] [loops|contended] [seconds]`;
 * `SINGLE=1` in the environment: one node instead of five (scenario (d)).
 * `permits` instead of a number of loops: the semaphore workload of bench/semaphores.ts, the contender
 * named by its first word and node count (`effect-redlock`, `redis-semaphore`; `SINGLE=1`: N = 1;
 * `GREEDY=1`: ours with `fairHandoff: false`).
 */
import * as Effect from "effect/Effect"
import { Redis } from "ioredis"
import * as Fs from "node:fs"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Contenders from "./contenders.js"
import * as Scenarios from "./scenarios.js"
import * as Semaphores from "./semaphores.js"

const [name = "effect-redlock", loops = "1", seconds = "5"] = process.argv.slice(2)
// `contended` instead of a number of loops: 8 workers on one key, default waiting (WAITING=10ms: a 10 ms retry).
const contended = loops === "contended"
const permits = loops === "permits"
const contender = Contenders.byName(name)!
const permitContender = Semaphores.contenders.find((candidate) =>
  candidate.name.startsWith(name) && candidate.nodes === (process.env.SINGLE ? 1 : 5) &&
  candidate.name.includes("fairHandoff: false") === (process.env.GREEDY !== undefined)
)!

/** CPU time (ms) the servers used so far: utime + stime from /proc, in clock ticks of 10 ms. */
const serversCpu = (pids: ReadonlyArray<number | undefined>) =>
  pids.reduce((sum: number, pid) => {
    const fields = Fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return sum + (Number(fields[11]) + Number(fields[12])) * 10
  }, 0)

/** Calls per command, summed over the servers (INFO commandstats). */
const commandCalls = async (ports: ReadonlyArray<number>) => {
  const calls = new Map<string, number>()
  for (const port of ports) {
    const redis = new Redis({ host: "127.0.0.1", port, lazyConnect: true })
    await redis.connect()
    const info = await redis.info("commandstats")
    // The server's reads and writes of its sockets: a command sent in two pieces is read twice.
    const stats = await redis.info("stats")
    for (const match of stats.matchAll(/^total_(reads|writes)_processed:(\d+)/gm)) {
      calls.set(`socket ${match[1]!}`, (calls.get(`socket ${match[1]!}`) ?? 0) + Number(match[2]))
    }
    redis.disconnect()
    for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
      calls.set(match[1]!, (calls.get(match[1]!) ?? 0) + Number(match[2]))
      calls.set(`${match[1]!} µs`, (calls.get(`${match[1]!} µs`) ?? 0) + Number(match[3]))
    }
  }
  return calls
}

/** The commands (and their server time) added since `before`, per operation, one decimal. */
const perOperation = (before: Map<string, number>, after: Map<string, number>, operations: number) => {
  const per: Record<string, number> = {}
  for (const [command, count] of after) {
    const added = count - (before.get(command) ?? 0)
    if (added > 0) per[command] = Math.round((added / operations) * 10) / 10
  }
  return per
}

const program = Effect.gen(function*() {
  const fleet = yield* RedisFleet.RedisFleet
  const ports = fleet.servers.map((server) => server.port)
  const pids = fleet.servers.map((server) => server.pid())
  return yield* Effect.promise(async () => {
    if (permits) {
      const on = ports.slice(0, permitContender.nodes)
      const before = { cpu: serversCpu(pids), calls: await commandCalls(on) }
      const result = await Semaphores.contention(permitContender, on, Number(seconds), "profile")
      const granted = result.acquisitionsPerSecond * Number(seconds)
      // The servers' CPU per permit (ms) and their commands per permit (and "µs": server time).
      return {
        ...result,
        serversCpuPerPermit: (serversCpu(pids) - before.cpu) / granted,
        perPermit: perOperation(before.calls, await commandCalls(on), granted),
        tally: Object.fromEntries(
          [...((globalThis as { __tally?: Map<string, number> }).__tally ?? new Map<string, number>())].map((
            [k, v]
          ) => [k, Math.round(v / granted * 100) / 100])
        )
      }
    }
    if (contended) {
      const before = { cpu: serversCpu(pids), calls: await commandCalls(ports), client: process.cpuUsage() }
      const waiting = process.env.WAITING === "10ms" ? "10ms" : "defaults"
      const result = await Scenarios.contention(contender, ports, waiting, 8, Number(seconds), "profile")
      const acquisitions = result.acquisitionsPerSecond * Number(seconds)
      const client = process.cpuUsage(before.client)
      const perAcquisition = perOperation(before.calls, await commandCalls(ports), acquisitions)
      // CPU (ms; the servers: all five) and commands (all five; "µs": their server time) per acquisition.
      return {
        ...result,
        clientCpuPerAcquisition: (client.user + client.system) / 1000 / acquisitions,
        serversCpuPerAcquisition: (serversCpu(pids) - before.cpu) / acquisitions,
        perAcquisition
      }
    }
    const client = await contender.start(
      process.env.SINGLE ? ports.slice(0, 1) : ports,
      "none",
      false,
      (process.env.SETUP ?? "library") as Contenders.Setup
    )
    const before = { cpu: serversCpu(pids), calls: await commandCalls(ports) }
    const result = await Scenarios.throughput(
      client,
      Number(loops),
      Number(seconds),
      "profile",
      process.env.SINGLE ? ports.slice(0, 1) : ports
    )
    const ops = result.opsPerSecond * Number(seconds)
    await client.close()
    // The servers' CPU per lock+unlock, all five together (ms), and their commands (and "µs": server time).
    const perOp = perOperation(before.calls, await commandCalls(ports), ops)
    return { ...result, serversCpuPerOp: (serversCpu(pids) - before.cpu) / ops, perOp }
  })
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(5)))).then((result) => {
  console.log(permits ? permitContender.name : contender.name, JSON.stringify(result))
  process.exit(0)
})
