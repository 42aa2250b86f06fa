/**
 * The benchmark's scenarios, each run on one contender for a fixed time.
 * Times are `performance.now()` milliseconds; CPU is this process's (the
 * servers are other processes).
 */
import { Redis } from "ioredis"
import type { Client, Contender, Loops, Setup, Waiting } from "./contenders.js"

export interface Throughput {
  readonly opsPerSecond: number
  readonly acquireP50: number
  readonly acquireP99: number
  /** Client CPU (user + system) per lock+unlock, ms. */
  readonly cpuPerOp: number
  readonly userCpuPerOp: number
  readonly systemCpuPerOp: number
  /** The servers' CPU (all of the contender's, together) per lock+unlock, ms. */
  readonly serverCpuPerOp: number
  readonly failures: number
}

export interface Contention {
  readonly acquisitionsPerSecond: number
  readonly handoffP50: number
  readonly handoffP99: number
  readonly waitP50: number
  readonly waitP99: number
  readonly waitMax: number
  /** Share of acquisitions made by the worker that held the lock just before. */
  readonly reacquiredShare: number
  /** Jain's fairness index of per-worker acquisitions: 1 is perfectly even. */
  readonly fairness: number
  readonly gaveUp: number
  readonly overlaps: number
}

export const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

export const jain = (counts: ReadonlyArray<number>): number => {
  const sum = counts.reduce((a, b) => a + b, 0)
  const squares = counts.reduce((a, b) => a + b * b, 0)
  return squares === 0 ? 0 : (sum * sum) / (counts.length * squares)
}

const ttlMillis = 10_000
/** A figure for the tables: whole above 100, two decimals above 1, three below. */
export const format = (value: number) =>
  Number.isNaN(value)
    ? "–"
    : Math.abs(value) >= 100
    ? value.toFixed(0)
    : Math.abs(value) >= 1
    ? value.toFixed(2)
    : value.toFixed(3)

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/**
 * The CPU the servers' processes used so far, together (INFO cpu: user and
 * system, µs): commands, scripts, their replies and the servers' own upkeep,
 * what a Redis shared by many clients pays for each operation beside the
 * client's CPU. (INFO commandstats would count a script's inner commands
 * twice: in the script's time and in their own.)
 */
export const serverMicros = async (admins: ReadonlyArray<Redis>): Promise<number> => {
  const sections = await Promise.all(admins.map((admin) => admin.info("cpu")))
  let micros = 0
  for (const section of sections) {
    for (const match of section.matchAll(/^used_cpu_(?:user|sys):([\d.]+)\r?$/gm)) micros += Number(match[1]) * 1e6
  }
  return micros
}

/** Connections of the bench's own to the servers on `ports`, for INFO. */
export const adminsOf = (ports: ReadonlyArray<number>) => ports.map((port) => new Redis({ host: "127.0.0.1", port }))

/** `loops` concurrent loops of lock+unlock on distinct keys for `seconds`, on the servers on `ports`. */
export const throughput = async (
  client: Client,
  loops: number,
  seconds: number,
  tag: string,
  ports: ReadonlyArray<number>
): Promise<Throughput> => {
  const latencies: Array<number> = []
  let failures = 0
  let next = 0
  const admins = adminsOf(ports)
  const serverBefore = await serverMicros(admins)
  const cpu = process.cpuUsage()
  const start = performance.now()
  const end = start + seconds * 1000
  const harness: Loops = {
    loops,
    running: () => performance.now() < end,
    ttlMillis,
    nextKey: () => `bench:${tag}:${next++}`,
    record: (millis, acquired) => {
      latencies.push(millis)
      if (!acquired) failures++
    }
  }
  await (client.runLoops ?? promiseLoops(client))(harness)
  const elapsed = performance.now() - start
  const used = process.cpuUsage(cpu)
  const serverUsed = (await serverMicros(admins)) - serverBefore
  admins.forEach((admin) => admin.disconnect())
  return {
    opsPerSecond: (latencies.length - failures) / (elapsed / 1000),
    acquireP50: percentile(latencies, 50),
    acquireP99: percentile(latencies, 99),
    cpuPerOp: (used.user + used.system) / 1000 / Math.max(1, latencies.length),
    // The split: the kernel's share (loopback TCP, charged to the sender) is about the same for every contender.
    userCpuPerOp: used.user / 1000 / Math.max(1, latencies.length),
    systemCpuPerOp: used.system / 1000 / Math.max(1, latencies.length),
    serverCpuPerOp: serverUsed / 1000 / Math.max(1, latencies.length),
    failures
  }
}

/** The harness's own loops: async functions calling the client's `lock` and `unlock`. */
const promiseLoops = (client: Client) => async ({ loops, nextKey, record, running, ttlMillis }: Loops) => {
  const loop = async () => {
    while (running()) {
      const key = nextKey()
      const before = performance.now()
      const handle = await client.lock(key, ttlMillis)
      record(performance.now() - before, handle !== undefined)
      if (handle !== undefined) await client.unlock(handle)
    }
  }
  await Promise.all(Array.from({ length: loops }, loop))
}

/** `workers` clients (own connections each, made as `setup` says) contending for one key, holding it 1 ms, for `seconds`. */
export const contention = async (
  contender: Contender,
  ports: ReadonlyArray<number>,
  waiting: Waiting,
  workers: number,
  seconds: number,
  tag: string,
  setup: Setup = "library"
): Promise<Contention> => {
  const clients = await Promise.all(
    Array.from({ length: workers }, () => contender.start(ports, waiting, false, setup))
  )
  const key = `bench:contended:${tag}`
  const counts = clients.map(() => 0)
  const waits: Array<number> = []
  const handoffs: Array<number> = []
  let holder: number | undefined
  let previous: { readonly worker: number; readonly releasedAt: number } | undefined
  let reacquired = 0
  let gaveUp = 0
  let overlaps = 0
  const start = performance.now()
  const end = start + seconds * 1000
  let lastAcquiredAt = start
  const waitingSince: Array<number | undefined> = clients.map(() => undefined)
  const worker = async (client: Client, id: number) => {
    while (performance.now() < end) {
      const asked = performance.now()
      waitingSince[id] = asked
      const handle = await client.lock(key, ttlMillis)
      const acquiredAt = performance.now()
      waitingSince[id] = undefined
      if (handle !== undefined) lastAcquiredAt = acquiredAt
      if (handle === undefined) {
        gaveUp++
        continue
      }
      if (holder !== undefined) overlaps++
      holder = id
      counts[id]++
      waits.push(acquiredAt - asked)
      if (previous !== undefined) {
        if (previous.worker === id) reacquired++
        else handoffs.push(acquiredAt - previous.releasedAt)
      }
      await sleep(1)
      holder = undefined
      previous = { worker: id, releasedAt: performance.now() }
      await client.unlock(handle)
    }
  }
  const watchdog = process.env.STALL_DUMP
    ? stallWatchdog(ports, `redlock:${key}`, () => lastAcquiredAt, waitingSince)
    : undefined
  await Promise.all(clients.map(worker))
  watchdog?.stop()
  const elapsed = performance.now() - start
  await Promise.all(clients.map((client) => client.close()))
  const acquisitions = counts.reduce((a, b) => a + b, 0)
  return {
    acquisitionsPerSecond: acquisitions / (elapsed / 1000),
    handoffP50: percentile(handoffs, 50),
    handoffP99: percentile(handoffs, 99),
    waitP50: percentile(waits, 50),
    waitP99: percentile(waits, 99),
    waitMax: waits.length === 0 ? NaN : Math.max(...waits),
    reacquiredShare: acquisitions <= 1 ? 0 : reacquired / (acquisitions - 1),
    fairness: jain(counts),
    gaveUp,
    overlaps
  }
}

/** Heap growth (MB) over `cycles` lock+unlock after a warm-up, measured after full GCs (run node with --expose-gc). */
export const heapGrowth = async (client: Client, cycles: number, tag: string): Promise<number> => {
  const gc = (globalThis as { gc?: () => void }).gc
  const settle = async () => {
    for (let i = 0; i < 3; i++) {
      gc?.()
      await sleep(20)
    }
    return process.memoryUsage().heapUsed
  }
  const run = async (count: number, prefix: string) => {
    let next = 0
    const loop = async () => {
      while (next < count) {
        const handle = await client.lock(`bench:${tag}:${prefix}:${next++}`, ttlMillis)
        if (handle !== undefined) await client.unlock(handle)
      }
    }
    await Promise.all(Array.from({ length: 16 }, loop))
  }
  await run(Math.min(5000, cycles), "warm")
  const before = await settle()
  await run(cycles, "measured")
  const after = await settle()
  return (after - before) / (1024 * 1024)
}

/**
 * Diagnostic (`STALL_DUMP=1`): when nobody acquired the contended key for
 * 150 ms, print each node's view of it (its holder and ttl, its line and
 * the leases, the server's time) and how long each worker has waited, once
 * per stall, to stderr. Keys of effect-redlock's lines; other contenders
 * show only the key.
 */
const stallWatchdog = (
  ports: ReadonlyArray<number>,
  key: string,
  lastAcquiredAt: () => number,
  waitingSince: ReadonlyArray<number | undefined>
) => {
  const nodes = ports.map((port) => new Redis({ host: "127.0.0.1", port }))
  let dumped = false
  const check = async () => {
    const now = performance.now()
    const quiet = now - lastAcquiredAt()
    if (quiet < 150) return void (dumped = false)
    if (dumped) return
    dumped = true
    const views = await Promise.all(nodes.map(async (node) => {
      const [time, value, pttl, queue, leases] = await Promise.all([
        node.time(),
        node.get(key),
        node.pttl(key),
        node.zrange(`${key}\u0000queue`, 0, -1, "WITHSCORES"),
        node.zrange(`${key}\u0000lease`, 0, -1, "WITHSCORES")
      ])
      return { time: Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000), value, pttl, queue, leases }
    }))
    const waits = waitingSince.map((since) => since === undefined ? "-" : `${Math.round(now - since)}ms`)
    console.error(`STALL ${Math.round(quiet)} ms without an acquisition of ${key}; workers waiting: ${waits.join(" ")}`)
    for (const view of views) console.error(`  ${JSON.stringify(view)}`)
  }
  const timer = setInterval(() => void check().catch(() => undefined), 50)
  return {
    stop: () => {
      clearInterval(timer)
      for (const node of nodes) node.disconnect()
    }
  }
}
