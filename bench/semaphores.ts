/**
 * Semaphores under contention: 8 workers, each with its own connections,
 * take one of 3 permits of one resource again and again, hold it 1 ms, and
 * release it; effect-redlock's `Semaphore` against redis-semaphore's
 * `RedlockSemaphore` on the same 5 servers, and against its single-node
 * `Semaphore` on one server (ours then on that one node), ours in line (the
 * default) and greedy (`fairHandoff: false`, as redis-semaphore waits), each
 * from an Effect program (one `runPromise` per permit, and in line also each
 * worker's loop one fiber) and from promise code. All wait with a ~10 ms
 * retry; and on one server two floors: our node alone, with no engine,
 * polling (the wire and the scripts' floor), and our scripts waiting in line
 * over a plain ioredis client, with neither engine nor node layer
 * (inLineFloor.ts: the least any client of this design spends). Then a
 * read-write workload of ours alone (8 workers, 80% reads, 1 ms hold, 5
 * servers): its throughput and the longest a writer waited, its managers
 * connected before the clock starts. Each contender, and the read-write
 * workload, runs unrecorded first (a warm-up). Part of
 * `npm run bench`; alone: `npm run bench:semaphore [-- --seconds S]`.
 *
 * RedlockSemaphore counts holders on each node and grants a permit when a
 * majority of the counts is below the limit: fast, but not safe when clients
 * reach different majorities (docs/semaphores-and-read-write-locks.md). The "most at once"
 * column is what this run saw, on healthy servers.
 */
import { Duration, Effect, Layer, ManagedRuntime } from "effect"
import type * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import { Redis } from "ioredis"
import { RedlockSemaphore, Semaphore as SingleNodeSemaphore } from "redis-semaphore"
import * as Redlock from "effect-redlock/Redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import * as RedisNode from "effect-redlock/RedisNode"
import * as ReadWriteLock from "effect-redlock/ReadWriteLock"
import * as PromiseApi from "effect-redlock/Promise"
import type { Build } from "./builds.js"
import type { EffectLine as LockLine } from "./contenders.js"
import * as Semaphore from "effect-redlock/Semaphore"
import { inLineFloor, librarySlotKeys } from "./inLineFloor.js"
import { median, ratioCell } from "./ratios.js"
import { adminsOf, format, jain, percentile, serverMicros } from "./scenarios.js"

export const workers = 8
export const limit = 3
export const ttlMillis = 10_000
/**
 * The workload's times (the hold, the retry) multiplied by
 * `BENCH_TIME_SCALE`: 1 here; permitInstructions.ts runs it under valgrind,
 * whose client is ~30× slower, with its times 30× longer, so that waiters
 * nap through no more of their retries than at full speed.
 */
export const timeScale = Number(process.env.BENCH_TIME_SCALE ?? 1)
const holdMillis = 1 * timeScale

/** One worker's way to hold a permit around `hold`; false when it gave up. */
export interface PermitClient {
  readonly withPermit: (hold: () => Promise<void>) => Promise<boolean>
  /**
   * The worker's whole loop, where the contender runs it itself (an Effect
   * program's fiber): permits around `hold` until `end` (`performance.now()`),
   * `asking` called as each is asked for, `gaveUp` for each given up.
   */
  readonly loop?: (hold: () => Promise<void>, end: number, asking: () => void, gaveUp: () => void) => Promise<void>
  readonly close: () => Promise<void>
}

/** A row a build cannot run (under `--against`: an older build without the entry): named and skipped. */
export class RowSkipped extends Error {}

export interface SemaphoreContender {
  readonly name: string
  /** How many of the servers it runs on: 5, or the first one only. */
  readonly nodes: 1 | 5
  readonly start: (ports: ReadonlyArray<number>, key: string) => Promise<PermitClient>
}

const retryOf = ({ Redlock }: EffectLine) => Redlock.retry({ delay: Duration.millis(10 * timeScale), times: 1000 })

/** The Effect 3 line's modules a row drives, its Semaphore too: the working tree's sources, or a build's (builds.ts, `--against`). */
export interface EffectLine extends LockLine {
  readonly Semaphore: typeof Semaphore
}

const sources: EffectLine = { Redlock, Ioredis, Semaphore }

/** A row's name, with the build it drives when that is not the working tree's sources. */
const named = (name: string, build: string | undefined) => build === undefined ? name : `${name} @ ${build}`

/** A lock manager of its own over the servers on `ports`, as each worker of a user's would be. */
const managerOn = (ports: ReadonlyArray<number>, fairHandoff = true, { Ioredis, Redlock }: EffectLine = sources) =>
  ManagedRuntime.make(
    Redlock.layer({ restartQuarantine: false, fairHandoff }).pipe(
      Layer.provide(Ioredis.layer(ports.map((port) => ({ host: "127.0.0.1", port }))))
    )
  )

/** Ours in line (the default), or greedy (`fairHandoff: false`): waiters poll, as redis-semaphore's do. */
const effectRedlock = (nodes: 1 | 5, fairHandoff = true, line = sources, build?: string): SemaphoreContender => ({
  name: named(`effect-redlock Semaphore, N = ${nodes}${fairHandoff ? "" : ", fairHandoff: false"}`, build),
  nodes,
  start: async (ports, key) => {
    const { Semaphore } = line
    const runtime = managerOn(ports, fairHandoff, line)
    const options: Semaphore.PermitOptions = { limit, ttl: Duration.millis(ttlMillis), retry: retryOf(line) }
    return {
      withPermit: (hold) =>
        runtime.runPromise(
          Effect.promise(hold).pipe(
            Semaphore.withPermit(key, options),
            Effect.as(true),
            Effect.orElseSucceed(() => false)
          )
        ),
      close: () => runtime.dispose()
    }
  }
})

/**
 * Ours from an Effect program as its users write one: each worker's loop one
 * fiber (one `runPromise` per worker, not per permit), holding each permit
 * with `Semaphore.withPermit`.
 */
const effectRedlockFibers = (nodes: 1 | 5, line = sources, build?: string): SemaphoreContender => ({
  name: named(`effect-redlock Semaphore, loops as fibers, N = ${nodes}`, build),
  nodes,
  start: async (ports, key) => {
    const { Semaphore } = line
    const runtime = managerOn(ports, true, line)
    const options: Semaphore.PermitOptions = { limit, ttl: Duration.millis(ttlMillis), retry: retryOf(line) }
    const withPermit = (hold: () => Promise<void>) =>
      Effect.promise(hold).pipe(Semaphore.withPermit(key, options), Effect.as(true), Effect.orElseSucceed(() => false))
    return {
      withPermit: (hold) => runtime.runPromise(withPermit(hold)),
      loop: (hold, end, asking, gaveUp) =>
        runtime.runPromise(Effect.whileLoop({
          while: () => performance.now() < end,
          body: () =>
            Effect.suspend(() => {
              asking()
              return withPermit(hold)
            }),
          step: (held) => {
            if (!held) gaveUp()
          }
        })),
      close: () => runtime.dispose()
    }
  }
})

/** Ours from promise code (effect-redlock/Promise `usingPermit`): the same engine, with no fiber. */
const effectRedlockPromise = (
  nodes: 1 | 5,
  fairHandoff = true,
  api: typeof PromiseApi = PromiseApi,
  build?: string
): SemaphoreContender => ({
  name: named(`effect-redlock/Promise permits, N = ${nodes}${fairHandoff ? "" : ", fairHandoff: false"}`, build),
  nodes,
  start: async (ports, key) => {
    const redlock = await api.makeRedlock(ports.map((port) => ({ host: "127.0.0.1", port })), {
      restartQuarantine: false,
      fairHandoff
    })
    if (typeof redlock.usingPermit !== "function") {
      await redlock.close()
      throw new RowSkipped(`its promise API has no usingPermit`)
    }
    const options = { limit, ttl: ttlMillis, retry: api.retry({ delay: 10 * timeScale, times: 1000 }) }
    return {
      withPermit: (hold) => redlock.usingPermit(key, options, hold).then(() => true, () => false),
      close: () => redlock.close()
    }
  }
})

// redis-semaphore's options for both of its semaphores: the same ttl and a 10 ms poll.
export const redisSemaphoreOptions = {
  lockTimeout: ttlMillis,
  acquireTimeout: 10_000 * timeScale,
  retryInterval: 10 * timeScale,
  refreshInterval: 0
}

/** A redis-semaphore contender: its semaphore made on the worker's clients for each permit. */
const redisSemaphoreOf = (
  name: string,
  nodes: 1 | 5,
  make: (clients: ReadonlyArray<Redis>, key: string) => RedlockSemaphore | SingleNodeSemaphore
): SemaphoreContender => ({
  name,
  nodes,
  start: async (ports, key) => {
    const clients = ports.map((port) => new Redis({ host: "127.0.0.1", port, maxRetriesPerRequest: 1 }))
    return {
      withPermit: async (hold) => {
        const semaphore = make(clients, key)
        if (!(await semaphore.tryAcquire().catch(() => false))) return false
        await hold()
        await semaphore.release().catch(() => undefined)
        return true
      },
      close: async () => {
        await Promise.all(clients.map((client) => client.quit().catch(() => undefined)))
      }
    }
  }
})

const redisSemaphore = redisSemaphoreOf(
  "redis-semaphore 5.8 (RedlockSemaphore), N = 5",
  5,
  (clients, key) => new RedlockSemaphore([...clients], key, limit, redisSemaphoreOptions)
)

const redisSemaphoreSingle = redisSemaphoreOf(
  "redis-semaphore 5.8 (Semaphore), N = 1",
  1,
  (clients, key) => new SingleNodeSemaphore(clients[0], key, limit, redisSemaphoreOptions)
)

/**
 * A permit from `nodes` alone, with no engine and no manager: each node's
 * `acquireSlot` (taking no place in line), the slot a majority chose held
 * around `hold` and released; refused, the slots taken are released and the
 * worker polls ~10 ms later, as redis-semaphore's do (1,000 polls at most:
 * false). Not a way to use the library (no validity, no lost-lock signal, no
 * hand-over): the floor of what the engine runs on (also permitEngine.ts).
 */
export const permitFromNodesAlone = (nodes: ReadonlyArray<RedisNode.RedisNode>, key: string) => {
  const quorum = Math.floor(nodes.length / 2) + 1
  const slots = librarySlotKeys(key, limit)
  const setting = String(limit)
  const release = (index: number, slot: number, value: string) =>
    nodes[index]!.promises!.release([slots[slot]!], value, false).catch(() => undefined)
  let made = 0
  return async (hold: () => Promise<void>): Promise<boolean> => {
    const value = `${process.pid}:${made++}:${Math.random()}`
    const turn = { ticket: Date.now(), leaseMillis: 0, setting }
    for (let polls = 0; polls < 1000; polls++) {
      const answers = await Promise.all(
        nodes.map((node) => node.promises!.acquireSlot(slots, value, ttlMillis, turn).catch(() => undefined))
      )
      const chosen = answers.map((answer) => answer?._tag === "Granted" ? answer.slot : undefined)
      const slot = chosen.find((candidate) =>
        candidate !== undefined && chosen.filter((other) => other === candidate).length >= quorum
      )
      if (slot !== undefined) {
        await hold()
        await Promise.all(nodes.map((_, index) => release(index, slot, value)))
        return true
      }
      await Promise.all(chosen.map((taken, index) => taken === undefined ? undefined : release(index, taken, value)))
      await sleep(10 * timeScale)
    }
    return false
  }
}

/** Our node alone at N = 1 (`permitFromNodesAlone`): the wire's and the scripts' floor, so that the table shows which part of a permit's cost is the engine's. */
const effectRedlockNodeAlone: SemaphoreContender = {
  name: "effect-redlock's node alone (no engine; polls), N = 1",
  nodes: 1,
  start: async (ports, key) => {
    const runtime = ManagedRuntime.make(Ioredis.layer(ports.map((port) => ({ host: "127.0.0.1", port }))))
    return {
      withPermit: permitFromNodesAlone(await runtime.runPromise(RedisNode.RedisNodes), key),
      close: () => runtime.dispose()
    }
  }
}

export const contenders: ReadonlyArray<SemaphoreContender> = [
  effectRedlock(5),
  effectRedlock(5, false),
  effectRedlockFibers(5),
  effectRedlockPromise(5),
  effectRedlockPromise(5, false),
  redisSemaphore,
  effectRedlock(1),
  effectRedlock(1, false),
  effectRedlockFibers(1),
  effectRedlockPromise(1),
  effectRedlockPromise(1, false),
  effectRedlockNodeAlone,
  inLineFloor(limit, ttlMillis),
  redisSemaphoreSingle
]

/** A build's rows of `--against` (builds.ts): those of the rows above that it can run. */
const rowsOf = (build: Build, nodes: 1 | 5): ReadonlyArray<SemaphoreContender> => [
  ...(build.effect3 === undefined
    ? []
    : [effectRedlock(nodes, true, build.effect3, build.label), effectRedlockFibers(nodes, build.effect3, build.label)]),
  ...(build.promise === undefined ? [] : [effectRedlockPromise(nodes, true, build.promise, build.label)])
]

/**
 * The rows of `--against`: each build's rows beside the other's, the peer on
 * as many servers and, on one, the in-line floor.
 */
export const forBuilds = (builds: ReadonlyArray<Build>): ReadonlyArray<SemaphoreContender> => [
  ...builds.flatMap((build) => rowsOf(build, 5)),
  redisSemaphore,
  ...builds.flatMap((build) => rowsOf(build, 1)),
  inLineFloor(limit, ttlMillis),
  redisSemaphoreSingle
]

export interface PermitContention {
  readonly acquisitionsPerSecond: number
  /** Permits granted in the run. */
  readonly granted: number
  readonly waitP50: number
  readonly waitP99: number
  readonly waitMax: number
  /** The most holders seen at once (the limit is 3). */
  readonly mostAtOnce: number
  readonly fairness: number
  readonly gaveUp: number
  /** The client's CPU (all 8 workers: one process) per permit granted, ms. */
  readonly cpuPerAcquisition: number
  /** The CPU of the contender's servers (together) per permit granted, ms. */
  readonly serverPerAcquisition: number
}

const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

export const contention = async (
  contender: SemaphoreContender,
  ports: ReadonlyArray<number>,
  seconds: number,
  key: string
): Promise<PermitContention> => {
  const started = await Promise.allSettled(Array.from({ length: workers }, () => contender.start(ports, key)))
  const clients = started.flatMap((start) => start.status === "fulfilled" ? [start.value] : [])
  const refused = started.find((start) => start.status === "rejected")
  if (refused !== undefined) {
    await Promise.all(clients.map((client) => client.close()))
    throw refused.reason
  }
  const admins = adminsOf(ports)
  const serverBefore = await serverMicros(admins)
  const counts = clients.map(() => 0)
  const waits: Array<number> = []
  let holding = 0
  let mostAtOnce = 0
  let gaveUp = 0
  const cpu = process.cpuUsage()
  const start = performance.now()
  const end = start + seconds * 1000
  const worker = async (client: PermitClient, id: number) => {
    // When this worker asked for the permit it holds next.
    let asked = 0
    const hold = async () => {
      waits.push(performance.now() - asked)
      counts[id]++
      mostAtOnce = Math.max(mostAtOnce, ++holding)
      await sleep(holdMillis)
      holding--
    }
    if (client.loop !== undefined) {
      return client.loop(hold, end, () => void (asked = performance.now()), () => void gaveUp++)
    }
    while (performance.now() < end) {
      asked = performance.now()
      const held = await client.withPermit(hold)
      if (!held) gaveUp++
    }
  }
  await Promise.all(clients.map(worker))
  const elapsed = performance.now() - start
  const used = process.cpuUsage(cpu)
  const granted = counts.reduce((a, b) => a + b, 0)
  const serverUsed = (await serverMicros(admins)) - serverBefore
  admins.forEach((admin) => admin.disconnect())
  await Promise.all(clients.map((client) => client.close()))
  return {
    acquisitionsPerSecond: granted / (elapsed / 1000),
    granted,
    waitP50: percentile(waits, 50),
    waitP99: percentile(waits, 99),
    waitMax: waits.length === 0 ? NaN : Math.max(...waits),
    mostAtOnce,
    fairness: jain(counts),
    gaveUp,
    cpuPerAcquisition: (used.user + used.system) / 1000 / Math.max(1, granted),
    serverPerAcquisition: serverUsed / 1000 / Math.max(1, granted)
  }
}

/**
 * How long each contender runs before the measured rounds, unrecorded, and
 * how many times (each a new set of clients, as a round is). The contenders
 * share one process: without it the first to run pays for compiling the code
 * they share (ioredis, Effect), and the first round's first contender ran at
 * ~55% of its later rate (533 against 960 permits/s). One run was not enough
 * for ours: V8 was still compiling and deoptimizing its code in the first
 * measured round (~100 functions optimized in it, against ~15 in later
 * rounds), whose CPU per permit came out 30–50% over the later rounds' (N =
 * 1, promise code: 90.6, 70.7, 61.7, 62.4 µs after one run of 1 s, and 90.9
 * after one of 8 s; 68.5, 75.7, 62.5 after three runs of 2 s); the peer's
 * first round 10–15%.
 */
const warmUpSeconds = 1
const warmUpRuns = 3

/** Every contender `rounds` times, in alternating order, the servers emptied after each (after `warmUpRuns` warm-up runs each). */
export const rounds = (
  fleet: RedisFleet.Fleet,
  seconds: number,
  count: number,
  log: (line: string) => Effect.Effect<void>,
  list: ReadonlyArray<SemaphoreContender> = contenders
) =>
  Effect.gen(function*() {
    const ports = fleet.servers.map((server) => server.port)
    const run = (contender: SemaphoreContender, runSeconds: number, key: string) =>
      Effect.promise(() =>
        contention(contender, ports.slice(0, contender.nodes), runSeconds, key).catch((error) =>
          error instanceof RowSkipped ? error : Promise.reject(error)
        )
      )
    let runnable = list
    for (let warmUp = 0; warmUp < warmUpRuns; warmUp++) {
      for (const contender of runnable) {
        const result = yield* run(contender, warmUpSeconds, `bench:permits:warm-up:${contender.name.split(" ")[0]}`)
        yield* fleet.reset
        if (result instanceof RowSkipped) {
          yield* log(`semaphores: ${contender.name} skipped: ${result.message}`)
          runnable = runnable.filter((other) => other !== contender)
        }
      }
    }
    yield* log(`semaphores: warm-up done (${warmUpRuns} runs of ${warmUpSeconds} s each)`)
    const results = new Map<string, Array<PermitContention>>()
    for (let round = 0; round < count; round++) {
      const order = round % 2 === 0 ? runnable : [...runnable].reverse()
      for (const contender of order) {
        const result = yield* run(contender, seconds, `bench:permits:${round}:${contender.name.split(" ")[0]}`)
        yield* fleet.reset
        if (result instanceof RowSkipped) continue
        results.set(contender.name, [...(results.get(contender.name) ?? []), result])
        yield* log(
          `semaphores, round ${round + 1}: ${contender.name}: ${format(result.acquisitionsPerSecond)} acq/s, ` +
            `${format(result.cpuPerAcquisition)} ms CPU/acq, ${format(result.serverPerAcquisition)} ms server/acq`
        )
      }
    }
    return results
  })

/**
 * The results as a Markdown table: medians of the rounds; each of ours
 * against redis-semaphore's semaphore on as many servers (permits/s, the
 * client's and the servers' CPU) and, under `--against`, against its twin at
 * the ref, as ratios of round to round with their spread (ratios.ts).
 */
export const table = (
  results: ReadonlyMap<string, ReadonlyArray<PermitContention>>,
  list: ReadonlyArray<SemaphoreContender> = contenders,
  working?: string
): string => {
  const metrics: ReadonlyArray<readonly [string, (r: PermitContention) => number]> = [
    ["acq/s", (r) => r.acquisitionsPerSecond],
    ["wait p50 ms", (r) => r.waitP50],
    ["wait p99 ms", (r) => r.waitP99],
    ["wait max ms", (r) => r.waitMax],
    ["most at once", (r) => r.mostAtOnce],
    ["fairness (Jain)", (r) => r.fairness],
    ["gave up", (r) => r.gaveUp],
    ["CPU ms/acq", (r) => r.cpuPerAcquisition],
    ["server ms/acq", (r) => r.serverPerAcquisition]
  ]
  const nodesOf = (name: string) => list.find((contender) => contender.name === name)?.nodes
  const ratioLine = (name: string, runs: ReadonlyArray<PermitContention>, other: string) => {
    const theirs = results.get(other) ?? []
    const cells = metrics.map(([label, pick]) =>
      label === "acq/s" || label.endsWith("ms/acq") ? ratioCell(runs.map(pick), theirs.map(pick)) : "–"
    )
    return `| ${name} ÷ ${other} | ${cells.join(" | ")} |`
  }
  // Under --against only the working tree's rows are held against others: the peer, and their twin at each ref.
  const suffix = working === undefined ? undefined : ` @ ${working}`
  const ratios = [...results].flatMap(([name, runs]) => {
    if (!name.startsWith("effect-redlock") || (suffix !== undefined && !name.endsWith(suffix))) return []
    const peer = [...results.keys()].find((other) =>
      other.startsWith("redis-semaphore") && nodesOf(other) === nodesOf(name)
    )
    const base = suffix === undefined ? undefined : name.slice(0, name.length - suffix.length + 3)
    const twins = base === undefined
      ? []
      : [...results.keys()].filter((other) => other !== name && other.startsWith(base))
    return [...(peer === undefined ? [] : [peer]), ...twins].map((other) => ratioLine(name, runs, other))
  })
  return [
    `(e) semaphore: ${workers} workers, ${limit} permits, ${holdMillis} ms hold, ~10 ms retry`,
    "",
    `| contender | ${metrics.map(([label]) => label).join(" | ")} |`,
    `|---|${metrics.map(() => "---").join("|")}|`,
    ...[...results].map(([name, runs]) =>
      `| ${name} | ${metrics.map(([, pick]) => format(median(runs.map(pick)))).join(" | ")} |`
    ),
    ...ratios
  ].join("\n")
}

/** The read-write workload: 8 workers, 80% reads, 1 ms hold, on every server given. */
export interface ReadWriteContention {
  readonly operationsPerSecond: number
  readonly reads: number
  readonly writes: number
  readonly readWaitP50: number
  readonly writeWaitP99: number
  /** The longest any writer waited, ms. */
  readonly writeWaitMax: number
  /** Whether a writer ever held beside anyone (it must not). */
  readonly writerBesideOthers: number
  readonly cpuPerOperation: number
}

export const readWriteContention = async (
  ports: ReadonlyArray<number>,
  seconds: number,
  key: string
): Promise<ReadWriteContention> => {
  const runtimes = Array.from({ length: workers }, () => managerOn(ports))
  // Connected before the clock starts: a writer's wait is for the lock, not for its manager's 5 connections.
  await Promise.all(runtimes.map((runtime) => runtime.runtime()))
  const options = { ttl: Duration.millis(ttlMillis), retry: retryOf(sources) }
  const readWaits: Array<number> = []
  const writeWaits: Array<number> = []
  let readers = 0
  let writing = 0
  let writerBesideOthers = 0
  const cpu = process.cpuUsage()
  const start = performance.now()
  const end = start + seconds * 1000
  const worker = async (runtime: (typeof runtimes)[number]) => {
    while (performance.now() < end) {
      const asked = performance.now()
      const writes = Math.random() < 0.2
      const section = Effect.promise(async () => {
        ;(writes ? writeWaits : readWaits).push(performance.now() - asked)
        if (writes) {
          writing++
          if (readers > 0 || writing > 1) writerBesideOthers++
        } else {
          readers++
          if (writing > 0) writerBesideOthers++
        }
        await sleep(holdMillis)
        if (writes) writing--
        else readers--
      })
      await runtime.runPromise(
        (writes ? ReadWriteLock.withWrite(key, options) : ReadWriteLock.withRead(key, options))(section).pipe(
          Effect.orElseSucceed(() => undefined)
        )
      )
    }
  }
  await Promise.all(runtimes.map(worker))
  const elapsed = performance.now() - start
  const used = process.cpuUsage(cpu)
  await Promise.all(runtimes.map((runtime) => runtime.dispose()))
  const done = readWaits.length + writeWaits.length
  return {
    operationsPerSecond: done / (elapsed / 1000),
    reads: readWaits.length,
    writes: writeWaits.length,
    readWaitP50: percentile(readWaits, 50),
    writeWaitP99: percentile(writeWaits, 99),
    writeWaitMax: writeWaits.length === 0 ? NaN : Math.max(...writeWaits),
    writerBesideOthers,
    cpuPerOperation: (used.user + used.system) / 1000 / Math.max(1, done)
  }
}

/** The read-write workload `count` times on 5 servers (after one warm-up run), emptied after each, as a Markdown table. */
export const readWriteRounds = (fleet: RedisFleet.Fleet, seconds: number, count: number) =>
  Effect.gen(function*() {
    const ports = fleet.servers.map((server) => server.port)
    // One run unrecorded first, as the semaphore contenders have (`warmUpSeconds`).
    yield* Effect.promise(() => readWriteContention(ports, warmUpSeconds, "bench:readwrite:warm-up"))
    yield* fleet.reset
    const rows: Array<string> = []
    for (let round = 0; round < count; round++) {
      const result = yield* Effect.promise(() => readWriteContention(ports, seconds, `bench:readwrite:${round}`))
      yield* fleet.reset
      rows.push(
        `| effect-redlock ReadWriteLock, run ${round + 1} | ${
          [
            result.operationsPerSecond,
            result.reads,
            result.writes,
            result.readWaitP50,
            result.writeWaitP99,
            result.writeWaitMax,
            result.writerBesideOthers,
            result.cpuPerOperation
          ].map(format).join(" | ")
        } |`
      )
    }
    return [
      `(f) read-write lock: ${workers} workers, 80% reads, ${holdMillis} ms hold, ~10 ms retry, N = 5`,
      "",
      "| run | ops/s | reads | writes | read wait p50 ms | write wait p99 ms | write wait max ms | writer beside others | CPU ms/op |",
      "|---|---|---|---|---|---|---|---|---|",
      ...rows
    ].join("\n")
  })
