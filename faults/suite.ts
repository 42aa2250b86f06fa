/**
 * The multi-process fault suite: K worker processes (faults/worker.ts)
 * contend for one resource on 5 local redis-servers while a fault schedule
 * pauses, kills and restarts servers or workers. The parent collects every
 * critical section and the checker (faults/checker.ts) counts violations.
 *
 * Every scenario is bounded in time, seeded, and ends with every server
 * running and every worker gone (stopped by PID, never by name).
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as ChildProcess from "node:child_process"
import * as Path from "node:path"
import * as Readline from "node:readline"
import { fileURLToPath } from "node:url"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import type { Fleet, FleetError } from "@effect-redlock/fleet/effect3.js"
import * as Algorithm from "@effect-redlock/core/engine/algorithm.js"
import * as ServerRun from "@effect-redlock/core/nodes/serverRun.js"
import * as Quarantine from "@effect-redlock/core/engine/quarantine.js"
import * as Checker from "./checker.js"
import { hrMillis, type WorkerConfig, type WorkerEvent } from "./protocol.js"

/** The lock's nodes are the fleet's first 5 servers; the 6th holds the fenced storage key. */
export const lockNodes = 5
export const fleetSize = lockNodes + 1

export interface Settings {
  readonly workers: number
  readonly durationMillis: number
  readonly ttlMillis: number
  readonly maxTtlMillis: number
  readonly holdMillis: readonly [number, number]
  readonly seed: number
  /** The client library of the workers' lock nodes (default ioredis). */
  readonly client?: "ioredis" | "node-redis" | "glide" | undefined
  /**
   * What the workers are written with: the Effect 3 API (worker.ts, the
   * default), node-redlock's API (nodeRedlockWorker.ts, over ioredis), or
   * both, alternating, contending for the same keys.
   */
  readonly frontEnds?: FrontEnds | undefined
}

export type FrontEnds = "effect" | "node-redlock" | "mixed"

type EnterEvent = Extract<WorkerEvent, { readonly type: "enter" }>

/** What a fault schedule may do. Every change of a node is logged with its time. */
export interface Faults {
  /** Seeded: the same seed gives the same schedule. */
  readonly random: Random.Random
  readonly pauseNode: (index: number) => Effect.Effect<void>
  readonly resumeNode: (index: number) => Effect.Effect<void>
  readonly killNode: (index: number) => Effect.Effect<void>
  readonly startNode: (index: number) => Effect.Effect<void, FleetError>
  /** The next time a worker enters its critical section, from now on. */
  readonly nextEnter: Effect.Effect<EnterEvent>
  readonly pauseWorker: (id: number) => Effect.Effect<void>
  readonly resumeWorker: (id: number) => Effect.Effect<void>
}

export interface Scenario {
  readonly name: string
  readonly restartQuarantine: boolean
  /** `safe`: must have no violation. `hazard`: a configuration known to be unsafe, run to show it. */
  readonly expect: "safe" | "hazard"
  readonly holdMillis?: readonly [number, number]
  /** Run on servers that keep their keys across restarts (AOF, appendfsync always): see `fleetFor`. */
  readonly durable?: boolean | undefined
  /**
   * A brand-new cluster: once the workers are ready, the lock servers are
   * restarted empty, and then the workers start acquiring; the report gives
   * the time from the restart to the first acquisition.
   */
  readonly freshServers?: boolean | undefined
  /** The least time the scenario needs to show what it shows, whatever the settings' duration. */
  readonly minDurationMillis?: number | undefined
  /** The workers take permits of a semaphore of this many instead of the lock. */
  readonly limit?: number | undefined
  /** The workers hold a read-write lock of this many readers instead of the lock (a third of the holds write). */
  readonly maxReaders?: number | undefined
  readonly faults: (faults: Faults) => Effect.Effect<void, FleetError>
}

/** The fleet a scenario runs on: durable servers (AOF, appendfsync always) or servers without persistence. */
export const fleetFor = (scenario: Pick<Scenario, "durable">) =>
  RedisFleet.layerLocal(fleetSize, { persistence: scenario.durable === true })

export interface Report {
  readonly scenario: string
  readonly restartQuarantine: boolean
  readonly expect: "safe" | "hazard"
  readonly acquisitions: number
  readonly violations: number
  readonly expiredOverlaps: number
  readonly tokenRegressions: number
  readonly staleWritesRejected: number
  readonly leakedKeys: number
  readonly unhandled: number
  readonly gaveUp: number
  readonly longestGapMillis: number
  /** Brand-new cluster scenarios: from the servers' start to the first acquisition by any worker. */
  readonly firstAcquisitionMillis: number | undefined
  /** Worker errors and non-zero exits, for diagnosis. */
  readonly problems: ReadonlyArray<string>
}

const here = Path.dirname(fileURLToPath(import.meta.url))

/** The program of worker `id`. */
const workerPath = (frontEnds: FrontEnds, id: number): string =>
  Path.join(
    here,
    frontEnds === "node-redlock" || (frontEnds === "mixed" && id % 2 === 1) ? "nodeRedlockWorker.ts" : "worker.ts"
  )

const sleepMillis = (millis: number) => Effect.sleep(Duration.millis(Math.round(millis)))

/** A worker process, killed by its PID when the scope closes if it is still running. */
const spawnWorker = (path: string, config: WorkerConfig, onEvent: (event: WorkerEvent) => void) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = ChildProcess.spawn(process.execPath, ["--import", "tsx", path, JSON.stringify(config)], {
        stdio: ["ignore", "pipe", "pipe"]
      })
      Readline.createInterface({ input: child.stdout }).on("line", (line) => {
        try {
          onEvent(JSON.parse(line) as WorkerEvent)
        } catch {
          onEvent({ type: "error", id: config.id, detail: `unexpected output: ${line}` })
        }
      })
      let stderr = ""
      child.stderr.on("data", (chunk: Buffer) => void (stderr += chunk.toString()))
      // "close": the process exited and its output was read to the end.
      const closed = new Promise<number>((resolve) =>
        child.once("close", (code, signal) => resolve(code ?? (signal === null ? 0 : 128)))
      )
      return { child, closed, stderr: () => stderr.trim() }
    }),
    ({ child }) =>
      Effect.sync(() => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill("SIGCONT")
          child.kill("SIGKILL")
        }
      })
  )

/** Every server running and resumed, emptied, and up long enough that no node is in quarantine. */
const settle = (fleet: Fleet, settings: Settings) =>
  Effect.gen(function*() {
    yield* fleet.reset
    // The workers' managers use the default drift factor.
    const quarantineSeconds = Math.ceil(
      Quarantine.durationMillis(settings.maxTtlMillis, Algorithm.defaultDriftFactor) / 1000
    )
    yield* Effect.forEach(fleet.servers.slice(0, lockNodes), (server) =>
      server.call("INFO", "server").pipe(
        Effect.map((reply) => ServerRun.parseInfo(String(reply))?.uptimeSeconds ?? 0),
        Effect.filterOrFail((uptime) => uptime >= quarantineSeconds, () => "in quarantine"),
        Effect.retry(Schedule.spaced("200 millis").pipe(Schedule.upTo(Duration.seconds(quarantineSeconds + 5)))),
        Effect.orDie
      ))
  })

/** Intervals in which at most a minority of nodes was down, from a log of (time, nodes down). */
const majorityUpIntervals = (log: ReadonlyArray<readonly [number, number]>, end: number): Array<Checker.Interval> => {
  const intervals: Array<Checker.Interval> = []
  const tolerated = lockNodes - Algorithm.quorum(lockNodes)
  for (let i = 0; i < log.length; i++) {
    const [at, down] = log[i]
    const until = i + 1 < log.length ? log[i + 1][0] : end
    if (down <= tolerated && until > at) intervals.push([at, until])
  }
  return intervals
}

export const runScenario = (
  fleet: Fleet,
  scenario: Scenario,
  suiteSettings: Settings
): Effect.Effect<Report, FleetError> =>
  Effect.scoped(Effect.gen(function*() {
    const settings: Settings = {
      ...suiteSettings,
      durationMillis: Math.max(suiteSettings.durationMillis, scenario.minDurationMillis ?? 0)
    }
    yield* settle(fleet, settings)
    const events: Array<WorkerEvent> = []
    const enters = yield* Queue.unbounded<EnterEvent>()
    const allReady = yield* Deferred.make<void>()
    let ready = 0
    const onEvent = (event: WorkerEvent) => {
      events.push(event)
      if (event.type === "enter") Queue.unsafeOffer(enters, event)
      if (event.type === "ready" && ++ready === settings.workers) Deferred.unsafeDone(allReady, Effect.void)
    }
    const workers = yield* Effect.forEach(Array.from({ length: settings.workers }, (_, id) => id), (id) =>
      spawnWorker(workerPath(settings.frontEnds ?? "effect", id), {
        id,
        nodePorts: fleet.servers.slice(0, lockNodes).map((server) =>
          server.port
        ),
        storagePort: fleet.servers[lockNodes].port,
        resource: "fault-suite",
        ttlMillis: settings.ttlMillis,
        maxTtlMillis: settings.maxTtlMillis,
        holdMillis: scenario.holdMillis ?? settings.holdMillis,
        restartQuarantine: scenario.restartQuarantine,
        durationMillis: settings.durationMillis,
        seed: settings.seed * 31 + id,
        limit: scenario.limit,
        maxReaders: scenario.maxReaders,
        client: settings.client
      }, onEvent))
    // Workers load TypeScript first; a worker that never gets ready ends the wait at its exit.
    yield* Deferred.await(allReady).pipe(
      Effect.raceFirst(Effect.promise(() => Promise.race(workers.map((worker) => worker.closed)))),
      Effect.timeout("30 seconds"),
      Effect.orDie
    )

    const start = hrMillis()
    const downLog: Array<readonly [number, number]> = [[start, 0]]
    const paused = new Set<number>()
    const killed = new Set<number>()
    const pausedWorkers = new Set<number>()
    const logNodes = () => downLog.push([hrMillis(), new Set([...paused, ...killed]).size])
    const server = (index: number) => fleet.servers[index]
    const faults: Faults = {
      random: Random.make(settings.seed),
      pauseNode: (i) => Effect.zipRight(server(i).pause, Effect.sync(() => (paused.add(i), logNodes()))),
      resumeNode: (i) => Effect.zipRight(server(i).resume, Effect.sync(() => (paused.delete(i), logNodes()))),
      killNode: (i) => Effect.zipRight(server(i).kill, Effect.sync(() => (killed.add(i), logNodes()))),
      startNode: (i) => Effect.zipRight(server(i).start, Effect.sync(() => (killed.delete(i), logNodes()))),
      // The next entry from now on: entries made earlier (while a worker was paused, say) are dropped.
      nextEnter: Effect.zipRight(Queue.takeAll(enters), Queue.take(enters)),
      pauseWorker: (id) =>
        Effect.sync(() => {
          workers[id].child.kill("SIGSTOP")
          pausedWorkers.add(id)
        }),
      resumeWorker: (id) =>
        Effect.sync(() => {
          workers[id].child.kill("SIGCONT")
          pausedWorkers.delete(id)
        })
    }
    if (scenario.freshServers === true) {
      for (let i = 0; i < lockNodes; i++) yield* faults.killNode(i)
      for (let i = 0; i < lockNodes; i++) yield* faults.startNode(i)
    }
    // Every worker starts at once, with the faults: none runs ahead while others still load.
    for (const worker of workers) worker.child.kill("SIGUSR2")
    const freshAt = hrMillis()
    const schedule = yield* Effect.fork(
      scenario.faults(faults).pipe(Effect.timeout(Duration.millis(settings.durationMillis)), Effect.ignore)
    )
    // Workers stop on their own after the duration; the bound only guards against a hung one.
    const exitCodes = yield* Effect.promise(() => Promise.all(workers.map((worker) => worker.closed))).pipe(
      Effect.timeout(Duration.millis(settings.durationMillis + 30_000)),
      Effect.orElseSucceed(() => workers.map(() => -1))
    )
    // Bounded, and named when it is not: a fault step (a server start, say) that never ends must not hang the run.
    yield* Fiber.interrupt(schedule).pipe(
      Effect.disconnect,
      Effect.timeoutFail({
        duration: "20 seconds",
        onTimeout: () =>
          new RedisFleet.FleetError({ message: `${scenario.name}: the fault schedule did not stop within 20 s` })
      })
    )
    const end = hrMillis()

    // Heal: every server resumed and running again, every worker resumed. Every server, not only those
    // the sets name: the schedule may have been interrupted between a signal and its bookkeeping (a
    // server killed and never restarted left the leak check waiting 40 s for it once, in CI).
    for (let i = 0; i < fleet.servers.length; i++) yield* faults.resumeNode(i)
    for (let i = 0; i < fleet.servers.length; i++) yield* faults.startNode(i)
    for (const id of pausedWorkers) yield* faults.resumeWorker(id)
    // Releases sent just before a worker exited land within moments. A key
    // handed to a waiter that is gone (a worker that exited or was cut off
    // while in line) and a line's own keys expire with the waiter's lease,
    // which is at most the ttl; a semaphore's or read-write lock's setting
    // record, renewed with twice the ttl (scripts.ts, keepSetting), within
    // twice it: a key still there after that is leaked.
    const keysLeft = Effect.reduce(fleet.servers.slice(0, lockNodes), 0, (sum, srv) =>
      Effect.map(srv.call("KEYS", "redlock:*"), (keys) =>
        sum + (keys as Array<string>).length))
    yield* sleepMillis(300)
    const waitUntil = hrMillis() + 2 * settings.ttlMillis
    while ((yield* keysLeft) > 0 && hrMillis() < waitUntil) {
      yield* sleepMillis(100)
    }
    const leakedKeys = yield* keysLeft

    const sections: Array<Checker.Section> = []
    const open = new Map<number, EnterEvent>()
    for (const event of events) {
      if (event.type === "enter") {
        open.set(event.id, event)
      }
      if (event.type === "leave") {
        const entered = open.get(event.id)
        open.delete(event.id)
        if (entered !== undefined) {
          sections.push(sectionOf(entered, event.at))
        }
      }
    }
    // A worker that never left (killed, hung) held until the end, as far as anyone can tell.
    for (const entered of open.values()) {
      sections.push(sectionOf(entered, end))
    }
    const sharing: Checker.Sharing = scenario.maxReaders !== undefined
      ? { maxReaders: scenario.maxReaders }
      : { limit: scenario.limit ?? 1 }
    const verdict = Checker.check(sections, majorityUpIntervals(downLog, end), [start, end], sharing)

    const problems = [
      ...events.flatMap((event) =>
        event.type === "error" || event.type === "unhandled"
          ? [`worker ${event.id} ${event.type}: ${event.detail}`]
          : []
      ),
      ...exitCodes.flatMap((code, id) =>
        code === 0
          ? []
          : [`worker ${id} exited with ${code}${code === -1 ? " (did not stop in time)" : ""}: ${workers[id].stderr()}`]
      )
    ]
    return {
      scenario: scenario.name,
      restartQuarantine: scenario.restartQuarantine,
      expect: scenario.expect,
      acquisitions: verdict.acquisitions,
      violations: verdict.violations.length,
      expiredOverlaps: verdict.expiredOverlaps.length,
      tokenRegressions: verdict.tokenRegressions,
      staleWritesRejected: events.filter((event) =>
        event.type === "leave" && event.lateWrite === "stale"
      ).length,
      leakedKeys,
      unhandled: problems.length,
      gaveUp: events.reduce((sum, event) => sum + (event.type === "done" ? event.gaveUp : 0), 0),
      longestGapMillis: verdict.longestGapMillis,
      firstAcquisitionMillis: scenario.freshServers !== true || sections.length === 0
        ? undefined
        : Math.round(Math.min(...sections.map((section) => section.start)) - freshAt),
      problems
    }
  }))

const sectionOf = (entered: EnterEvent, end: number): Checker.Section => ({
  worker: entered.id,
  token: BigInt(entered.token),
  start: entered.at,
  end,
  validUntil: entered.validUntil,
  slot: entered.slot,
  write: entered.write
})

/** One or two of the lock nodes, at random. */
const minority = (random: Random.Random): Effect.Effect<Array<number>> =>
  Effect.zipWith(
    random.shuffle(Array.from({ length: lockNodes }, (_, i) => i)),
    random.nextIntBetween(1, 3),
    (indexes, count) => Array.from(indexes).slice(0, count)
  )

/**
 * The lock's scenarios, then some of the same faults for a semaphore (permits
 * of 2) and for a read-write lock (2 readers, a third of the holds writing).
 */
export const scenarios = (settings: Settings): ReadonlyArray<Scenario> => {
  const lock = lockScenarios(settings)
  const some = lock.filter((scenario) => sharedFaults.includes(scenario.name))
  return [
    ...lock,
    ...some.map((scenario): Scenario => ({ ...scenario, name: `semaphore of 2: ${scenario.name}`, limit: 2 })),
    ...some.map((scenario): Scenario => ({
      ...scenario,
      name: `read-write of 2 readers: ${scenario.name}`,
      maxReaders: 2
    }))
  ]
}

const sharedFaults = [
  "no faults",
  "minority paused (SIGSTOP 1-2 of 5)",
  "majority killed under a holder, restarted at once, quarantine on",
  "majority paused, then back",
  "holder paused past its ttl"
]

/** The lock's scenarios, in order. `ttl` is the settings' ttl. */
const lockScenarios = (settings: Settings): ReadonlyArray<Scenario> => [
  { name: "no faults", restartQuarantine: true, expect: "safe", faults: () => Effect.void },
  // The first run: servers started just before the clients, under each documented setting.
  ...[[true, false], [true, true], [false, false]].map(([restartQuarantine, durable]): Scenario => ({
    name: `brand-new cluster${durable ? " (durable: AOF, appendfsync always)" : ""}, quarantine ${
      restartQuarantine ? "on" : "off"
    }`,
    restartQuarantine,
    durable,
    freshServers: true,
    expect: "safe",
    faults: () => Effect.void
  })),
  {
    name: "minority paused (SIGSTOP 1-2 of 5)",
    restartQuarantine: true,
    expect: "safe",
    faults: (f) =>
      Effect.forever(Effect.gen(function*() {
        yield* sleepMillis(yield* f.random.nextRange(200, 600))
        const nodes = yield* minority(f.random)
        yield* Effect.forEach(nodes, f.pauseNode)
        yield* sleepMillis(yield* f.random.nextRange(500, 1500)).pipe(
          Effect.ensuring(Effect.forEach(nodes, f.resumeNode))
        )
      }))
  },
  {
    name: "minority killed, restarted 1 s later",
    restartQuarantine: true,
    expect: "safe",
    faults: (f) =>
      Effect.forever(Effect.gen(function*() {
        yield* sleepMillis(yield* f.random.nextRange(300, 800))
        const nodes = yield* minority(f.random)
        yield* Effect.forEach(nodes, f.killNode)
        yield* sleepMillis(1000)
        yield* Effect.forEach(nodes, f.startNode)
      }))
  },
  ...[[true, false], [false, false], [true, true]].map(([restartQuarantine, durable]): Scenario => ({
    name: `majority killed under a holder, restarted at once${durable ? " (durable: AOF, appendfsync always)" : ""}, ` +
      `quarantine ${restartQuarantine ? "on" : "off"}`,
    restartQuarantine,
    durable,
    expect: restartQuarantine ? "safe" : "hazard",
    // Long holds, so that the holder is still inside its validity when the servers are back.
    holdMillis: [settings.ttlMillis * 0.4, settings.ttlMillis * 0.6],
    faults: (f) =>
      Effect.forever(Effect.gen(function*() {
        yield* f.nextEnter
        for (const i of [0, 1, 2]) yield* f.killNode(i)
        for (const i of [0, 1, 2]) yield* f.startNode(i)
        yield* sleepMillis(settings.ttlMillis)
      }))
  })),
  {
    // The fencing counterexample: a node that took part in a token round loses its counter.
    name: "a node killed after each token, restarted at once (empty)",
    restartQuarantine: true,
    expect: "safe",
    faults: (f) =>
      Effect.forever(Effect.gen(function*() {
        yield* f.nextEnter
        const node = yield* f.random.nextIntBetween(0, lockNodes)
        yield* f.killNode(node)
        yield* f.startNode(node)
        yield* sleepMillis(yield* f.random.nextRange(200, 600))
      }))
  },
  {
    name: "majority paused, then back",
    restartQuarantine: true,
    expect: "safe",
    faults: (f) =>
      Effect.forever(Effect.gen(function*() {
        yield* sleepMillis(500)
        for (const i of [0, 1, 2]) yield* f.pauseNode(i)
        yield* sleepMillis(1500).pipe(Effect.ensuring(Effect.forEach([0, 1, 2], f.resumeNode)))
      }))
  },
  {
    name: "holder paused past its ttl",
    restartQuarantine: true,
    expect: "safe",
    // Holds long enough that the SIGSTOP lands inside the section.
    holdMillis: [300, 500],
    // The pause lasts ttl + 0.5 s from an entry; another worker must enter after the paused
    // holder's key expired and write before it wakes: room for a slow start on a loaded machine.
    minDurationMillis: settings.ttlMillis * 3 + 1500,
    faults: (f) =>
      Effect.forever(Effect.gen(function*() {
        const { id } = yield* f.nextEnter
        yield* f.pauseWorker(id)
        yield* sleepMillis(settings.ttlMillis + 500).pipe(Effect.ensuring(f.resumeWorker(id)))
        yield* sleepMillis(500)
      }))
  }
]

/** Whether a hazard scenario hit the hazard: two holders within validity, or tokens that went back. */
export const hazardShown = (report: Report): boolean => report.violations > 0 || report.tokenRegressions > 0

/** Whether a report is what its scenario promises: a safe one has no violation of any kind. */
export const passed = (report: Report): boolean =>
  report.leakedKeys === 0 && report.unhandled === 0 && report.acquisitions > 0 &&
  (report.expect === "hazard" || (report.violations === 0 && report.tokenRegressions === 0))

const columns: ReadonlyArray<readonly [string, (report: Report) => string | number]> = [
  ["scenario", (r) => r.scenario],
  ["acquisitions", (r) => r.acquisitions],
  ["violations", (r) => r.violations],
  ["expired overlaps", (r) => r.expiredOverlaps],
  ["token regressions", (r) => r.tokenRegressions],
  ["stale writes refused", (r) => r.staleWritesRejected],
  ["leaked keys", (r) => r.leakedKeys],
  ["unhandled", (r) => r.unhandled],
  ["gave up", (r) => r.gaveUp],
  ["longest gap (ms)", (r) => r.longestGapMillis],
  ["first acquisition (ms)", (r) => r.firstAcquisitionMillis ?? "–"],
  [
    "verdict",
    (r) => !passed(r) ? "FAIL" : r.expect === "safe" ? "ok" : hazardShown(r) ? "unsafe, as expected" : "hazard not hit"
  ]
]

/** The reports as a Markdown table. */
export const table = (reports: ReadonlyArray<Report>): string =>
  [
    `| ${columns.map(([name]) => name).join(" | ")} |`,
    `|${columns.map(() => "---").join("|")}|`,
    ...reports.map((report) => `| ${columns.map(([, value]) => value(report)).join(" | ")} |`)
  ].join("\n")
