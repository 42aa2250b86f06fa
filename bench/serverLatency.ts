/**
 * How long the server takes to answer moves the client's CPU per permit, at
 * N = 1 on this kind of machine: the semaphore workload (8 workers, 3
 * permits, 1 ms hold) run by redis-semaphore's `Semaphore` as it is, by the
 * same client with its two calls sent as scripts (the control: the same
 * client work, next to no server time), and by the same client with each
 * script spending on the server as long as our floor's scripts spend per
 * permit (a Lua loop added in front). Beside them our scripts in line over
 * plain ioredis (the floor, inLineFloor.ts) and our promise code. Prints, per
 * row, the mean of alternating rounds: permits/s, client CPU µs per permit,
 * server µs per permit in the commands the client sent (INFO commandstats),
 * and how often the client's main thread went to sleep per permit
 * (voluntary context switches, Linux).
 *
 * A client that finds its answer already there when its event loop polls
 * does not sleep; one whose server still works sleeps and is woken, and on a
 * VM each sleep and wake costs CPU. Our scripts (a line of waiters, leases,
 * the setting record, hand-overs) take ~4× the peer's time on the server, so
 * the peer's unchanged client, slowed the same way, pays what our floor pays
 * (bench/README.md, "The server's time is the client's CPU at N = 1").
 * `npm run bench:server-latency [-- rounds seconds]`
 */
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as Effect from "effect/Effect"
import { Redis, type RedisOptions } from "ioredis"
import { Semaphore as SingleNodeSemaphore } from "redis-semaphore"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Semaphores from "./semaphores.js"
import { format } from "./scenarios.js"

const rounds = Number(process.argv[2] ?? "3")
const seconds = Number(process.argv[3] ?? "3")

const sha1 = (text: string) => createHash("sha1").update(text).digest("hex")

// redis-semaphore's acquire script, as its package ships it (a template literal in lua.js).
const peerAcquireLua = (() => {
  const source = readFileSync(
    createRequire(import.meta.url).resolve("redis-semaphore/lib/semaphore/acquire/lua.js"),
    "utf8"
  )
  const lua = /`([^`]*)`/.exec(source)?.[1]
  if (lua === undefined) throw new Error("redis-semaphore's acquire script was not found in its lua.js")
  return lua
})()
const peerReleaseLua = "return redis.call('ZREM', KEYS[1], ARGV[1])"

/** A Lua loop of `iterations` additions: server time that touches no key. */
const spin = (iterations: number) =>
  iterations === 0 ? "" : `local spun = 0 for i = 1, ${iterations} do spun = spun + i end\n`

/**
 * An ioredis client whose `EVALSHA` of the peer's acquire script and whose
 * `ZREM` (the peer's release) run as scripts that first spin `iterations`
 * times: redis-semaphore's client code is unchanged, its server slower.
 */
const slowedClient = (options: RedisOptions, iterations: number) => {
  const acquire = spin(iterations) + peerAcquireLua
  const release = spin(iterations) + peerReleaseLua
  const peerAcquireSha = sha1(peerAcquireLua)
  const [acquireSha, releaseSha] = [sha1(acquire), sha1(release)]
  const client = new Redis(options)
  const evalsha = client.evalsha.bind(client) as (...args: Array<unknown>) => Promise<unknown>
  Object.assign(client, {
    evalsha: (sha: string, ...args: Array<unknown>) => evalsha(sha === peerAcquireSha ? acquireSha : sha, ...args),
    zrem: (key: string, member: string) => evalsha(releaseSha, 1, key, member)
  })
  const loaded = Promise.all([client.script("LOAD", acquire), client.script("LOAD", release)])
  return { client, loaded }
}

const peerSlowed = (name: string, iterations: () => number): Semaphores.SemaphoreContender => ({
  name,
  nodes: 1,
  start: async (ports, key) => {
    const { client, loaded } = slowedClient(
      { host: "127.0.0.1", port: ports[0]!, maxRetriesPerRequest: 1 },
      iterations()
    )
    await loaded
    return {
      withPermit: async (hold) => {
        const semaphore = new SingleNodeSemaphore(client, key, Semaphores.limit, Semaphores.redisSemaphoreOptions)
        if (!(await semaphore.tryAcquire().catch(() => false))) return false
        await hold()
        await semaphore.release().catch(() => undefined)
        return true
      },
      close: async () => void (await client.quit().catch(() => undefined))
    }
  }
})

const byName = (prefix: string) => {
  const found = Semaphores.contenders.find((contender) => contender.name.startsWith(prefix))
  if (found === undefined) throw new Error(`no contender ${prefix}`)
  return found
}

/** Spin iterations that match the floor's server time per permit, set once the first round measured both. */
let matchingIterations = 0

const rows = [
  { contender: byName("redis-semaphore 5.8 (Semaphore), N = 1"), sent: ["evalsha", "zrem"] },
  { contender: peerSlowed("redis-semaphore's Semaphore, its calls as scripts", () => 0), sent: ["evalsha"] },
  {
    contender: peerSlowed("redis-semaphore's Semaphore, its scripts as slow as the floor's", () => matchingIterations),
    sent: ["evalsha"]
  },
  { contender: byName("effect-redlock's scripts in line over plain ioredis"), sent: ["evalsha"] },
  { contender: byName("effect-redlock/Promise permits, N = 1"), sent: ["evalsha"] }
] as const

type Stats = Map<string, { readonly calls: number; readonly usec: number }>

const commandStats = async (admin: Redis): Promise<Stats> => {
  const stats: Stats = new Map()
  for (const match of (await admin.info("commandstats")).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    stats.set(match[1]!, { calls: Number(match[2]), usec: Number(match[3]) })
  }
  return stats
}

/** The main thread's voluntary context switches (times it slept), where Linux tells them. */
const sleeps = (): number | undefined => {
  try {
    const status = readFileSync("/proc/self/status", "utf8")
    const match = /^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)
    return match === null ? undefined : Number(match[1])
  } catch {
    return undefined
  }
}

/** Server µs of one spin iteration, from 200 scripts of 20,000. */
const spinMicros = async (admin: Redis): Promise<number> => {
  const iterations = 20_000
  const sha = await admin.script("LOAD", spin(iterations) + "return 1") as string
  const before = (await commandStats(admin)).get("evalsha") ?? { calls: 0, usec: 0 }
  for (let call = 0; call < 200; call++) await admin.evalsha(sha, 0)
  const after = (await commandStats(admin)).get("evalsha")!
  return (after.usec - before.usec) / (after.calls - before.calls) / iterations
}

interface Measured {
  readonly permitsPerSecond: number
  readonly clientMicros: number
  readonly serverMicros: number
  readonly callsPerPermit: number
  readonly sleepsPerPermit: number
}

const program = Effect.gen(function*() {
  const fleet = yield* RedisFleet.RedisFleet
  const port = fleet.servers[0].port
  const measure = (row: typeof rows[number], round: number) =>
    Effect.promise(async (): Promise<Measured> => {
      const admin = new Redis({ host: "127.0.0.1", port })
      const before = await commandStats(admin)
      const sleptBefore = sleeps()
      const result = await Semaphores.contention(
        row.contender,
        [port],
        round < 0 ? 1 : seconds,
        `bench:latency:${round}`
      )
      const sleptAfter = sleeps()
      const after = await commandStats(admin)
      admin.disconnect()
      const sent = (field: "calls" | "usec") =>
        row.sent.reduce(
          (total, command) => total + (after.get(command)?.[field] ?? 0) - (before.get(command)?.[field] ?? 0),
          0
        )
      return {
        permitsPerSecond: result.acquisitionsPerSecond,
        clientMicros: result.cpuPerAcquisition * 1000,
        serverMicros: sent("usec") / result.granted,
        callsPerPermit: sent("calls") / result.granted,
        sleepsPerPermit: sleptBefore === undefined || sleptAfter === undefined
          ? NaN
          : (sleptAfter - sleptBefore) / result.granted
      }
    }).pipe(Effect.tap(() => fleet.reset))

  const admin = new Redis({ host: "127.0.0.1", port })
  const microsPerIteration = yield* Effect.promise(() => spinMicros(admin))
  admin.disconnect()
  // Warm-up, unrecorded, which also sets the spin: the floor's server time per permit over the peer's, per call.
  const warm: Array<Measured> = []
  for (const row of rows) warm.push(yield* measure(row, -1))
  const [peer, floor] = [warm[0]!, warm[3]!]
  matchingIterations = Math.max(
    0,
    Math.round((floor.serverMicros - peer.serverMicros) / peer.callsPerPermit / microsPerIteration)
  )

  const results = rows.map((): Array<Measured> => [])
  for (let round = 0; round < rounds; round++) {
    const order = rows.map((_, index) => index)
    for (const index of round % 2 === 0 ? order : order.reverse()) {
      results[index]!.push(yield* measure(rows[index]!, round))
    }
  }
  const mean = (values: ReadonlyArray<Measured>, field: keyof Measured) =>
    values.reduce((total, value) => total + value[field], 0) / values.length
  const peerClient = mean(results[0]!, "clientMicros")
  return [
    `server time per permit, N = 1 (${Semaphores.workers} workers, ${Semaphores.limit} permits, 1 ms hold; mean of ${rounds} rounds of ${seconds} s; spin ${matchingIterations} iterations, ${
      format(matchingIterations * microsPerIteration)
    } µs a call):`,
    "",
    "| contender | permits/s | client CPU µs/permit | ÷ the peer | server µs/permit (commands sent) | calls/permit | client sleeps/permit |",
    "|---|---|---|---|---|---|---|",
    ...rows.map((row, index) => {
      const measured = results[index]!
      return `| ${row.contender.name} | ${
        [
          mean(measured, "permitsPerSecond"),
          mean(measured, "clientMicros"),
          mean(measured, "clientMicros") / peerClient,
          mean(measured, "serverMicros"),
          mean(measured, "callsPerPermit"),
          mean(measured, "sleepsPerPermit")
        ].map(format).join(" | ")
      } |`
    })
  ].join("\n")
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(1)))).then((table) => {
  console.log(table)
  process.exit(0)
}, (error) => {
  console.error(error)
  process.exit(1)
})
