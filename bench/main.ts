/**
 * `npm run bench`: every contender in turn against the same 5 local
 * redis-servers, in alternating order between rounds, then one table per
 * scenario with each figure's ratio to the best peer and to the floor.
 *
 * Options: `--against <git ref>[,<ref>...]` (the working tree's packed build
 * beside each ref's, builds.ts; 5 rounds by default), `--seconds S` per scenario
 * (default 3), `--rounds R` (default 2), `--cycles N` for the heap scenario
 * (default 100000), `--only name,...` (lock contenders only; the semaphore
 * table (e) runs without it), `--setups library,connected,lazyConnect,aclNoPubsub,keyPrefix`
 * (how the contended scenarios' clients are made: contenders.ts `Setup`;
 * default all), `--throughput-setups` (the same for the throughput
 * scenarios: default `library`, and `connected,lazyConnect` under `--against`).
 */
import * as Effect from "effect/Effect"
import * as Os from "node:os"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Builds from "./builds.js"
import * as Contenders from "./contenders.js"
import * as Effect4 from "./effect4.js"
import { median, ratioCell } from "./ratios.js"
import * as Scenarios from "./scenarios.js"
import { format } from "./scenarios.js"
import * as Semaphores from "./semaphores.js"

const flag = (name: string): string | undefined => {
  const index = process.argv.indexOf(`--${name}`)
  return index >= 0 ? process.argv[index + 1] : undefined
}
const against = flag("against")
const seconds = Number(flag("seconds") ?? 3)
const rounds = Number(flag("rounds") ?? (against === undefined ? 2 : 5))
const cycles = Number(flag("cycles") ?? 100_000)
const only = flag("only")?.split(",")
const setupsFlag = (name: string, defaults: ReadonlyArray<Contenders.Setup>, allowed = Contenders.setups) => {
  const given = flag(name)
  // "none": no scenario of these (e.g. the throughput scenarios alone).
  const list = (given === "none" ? [] : given?.split(",") ?? defaults) as ReadonlyArray<Contenders.Setup>
  for (const setup of list) {
    if (!allowed.includes(setup)) throw new Error(`--${name}: unknown setup ${setup} (${allowed.join(", ")})`)
  }
  return list
}
const setups = setupsFlag("setups", Contenders.setups)
// The throughput scenarios run over clients made as their setups say (not as an ACL user without pub/sub).
const throughputSetups = setupsFlag(
  "throughput-setups",
  against === undefined ? ["library"] : ["connected", "lazyConnect"],
  ["library", "connected", "lazyConnect", "keyPrefix"]
)
const log = (line: string) => Effect.sync(() => console.error(line))

/**
 * `--against <ref>[,<ref>...]`: the working tree's packed build beside each
 * ref's (builds.ts), each as promise code and as an Effect program, among
 * the floors and the peers. Otherwise the working tree's sources as
 * compiled with the bench, and the Effect 4 package's rows.
 */
const builds: ReadonlyArray<Builds.Build> = against === undefined ? [] : [
  await Builds.ofWorkingTree((line) => console.error(line)),
  ...await Promise.all(against.split(",").map((ref) => Builds.ofRef(ref, (line) => console.error(line))))
]
for (const build of builds) {
  for (const entry of build.missing) console.error(`against: ${build.label} has no ${entry}: its rows are skipped`)
}
/** The rows of the refs each of the working tree's rows is held against, by name. */
const refTwins = new Map<string, ReadonlyArray<string>>(
  builds.length < 2 ? [] : Builds.rowsOf(builds[0]).map((row) => [
    row.name,
    builds.slice(1).map((ref) => row.name.replace(` @ ${builds[0].label}`, ` @ ${ref.label}`))
  ])
)
const allContenders: ReadonlyArray<Contenders.Contender> = against === undefined
  ? [...Contenders.all, ...(await Effect4.contenders())]
  : [
    Contenders.floor,
    Contenders.floorAsEffect,
    ...builds.flatMap(Builds.rowsOf),
    ...Contenders.all.filter((c) => Contenders.peers.includes(c))
  ]
const contenders = allContenders.filter((c) => only === undefined || only.some((name) => c.name.includes(name)))
const permitContenders = against === undefined ? Semaphores.contenders : Semaphores.forBuilds(builds)

/** The throughput scenarios' results, by setup and scenario: `lazyConnect:sequential` ... */
type ThroughputKey = `${Contenders.Setup}:${"sequential" | "concurrent" | "single"}`
/** The contended scenarios' results, by setup and waiting: `library:defaults`, `aclNoPubsub:10ms` ... */
type ContendedKey = `${Contenders.Setup}:${Contenders.Waiting}`

/** A contender's results, one per round. */
interface Row {
  readonly throughput: Partial<Record<ThroughputKey, Array<Scenarios.Throughput>>>
  readonly contended: Partial<Record<ContendedKey, Array<Scenarios.Contention>>>
  heapMb?: number
}

const push = (row: Row, key: ThroughputKey | ContendedKey, value: Scenarios.Throughput | Scenarios.Contention) => {
  const table = (key.endsWith(":defaults") || key.endsWith(":10ms") ? row.contended : row.throughput) as Record<
    string,
    Array<unknown>
  >
  ;(table[key] ??= []).push(value)
}

/** One round's figure of a list of results (`NaN` where the contender has none). */
const inRound = <A>(values: ReadonlyArray<A> | undefined, round: number, pick: (a: A) => number) =>
  values === undefined || values[round] === undefined ? NaN : pick(values[round])

const program = Effect.gen(function*() {
  const fleet = yield* RedisFleet.RedisFleet
  const ports = fleet.servers.map((server) => server.port)
  if (setups.includes("aclNoPubsub")) {
    yield* Effect.forEach(
      fleet.servers,
      (server) => server.call("ACL", "SETUSER", Contenders.aclUser.username, ...Contenders.aclRule)
    )
  }
  const rows = new Map<string, Row>(contenders.map((c) => [c.name, { throughput: {}, contended: {} }]))
  yield* log(
    `bench: ${contenders.length} contenders, 5 redis-servers on ports ${
      ports.join(", ")
    }, ${seconds} s per scenario, ${rounds} rounds`
  )
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? contenders : [...contenders].reverse()
    for (const contender of order) {
      const row = rows.get(contender.name)!
      const tag = `${round}:${contender.name.split(" ")[0]}`
      yield* Effect.promise(async () => {
        for (const setup of throughputSetups) {
          const client = await contender.start(ports, "none", false, setup)
          push(row, `${setup}:sequential`, await Scenarios.throughput(client, 1, seconds, `seq:${setup}:${tag}`, ports))
          push(
            row,
            `${setup}:concurrent`,
            await Scenarios.throughput(client, 64, seconds, `c64:${setup}:${tag}`, ports)
          )
          await client.close()
          const single = await contender.start(ports.slice(0, 1), "none", false, setup)
          push(
            row,
            `${setup}:single`,
            await Scenarios.throughput(single, 1, seconds, `n1:${setup}:${tag}`, ports.slice(0, 1))
          )
          await single.close()
        }
        if (contender.throughputOnly) return
        for (const setup of setups) {
          for (const waiting of ["defaults", "10ms"] as const) {
            push(
              row,
              `${setup}:${waiting}`,
              await Scenarios.contention(contender, ports, waiting, 8, seconds, `${setup}:${waiting}:${tag}`, setup)
            )
          }
        }
      })
      yield* fleet.reset
      yield* log(`round ${round + 1}: ${contender.name} done`)
    }
  }
  for (const contender of contenders.filter((c) => !c.throughputOnly)) {
    yield* Effect.promise(async () => {
      const client = await contender.start(ports, "none")
      rows.get(contender.name)!.heapMb = await Scenarios.heapGrowth(
        client,
        cycles,
        `heap:${contender.name.split(" ")[0]}`
      )
      await client.close()
    })
    yield* fleet.reset
    yield* log(`heap: ${contender.name} done`)
  }
  // (e) semaphores: only when every contender runs (not with --only).
  const permits = only === undefined
    ? yield* Semaphores.rounds(fleet, seconds, rounds, log, permitContenders)
    : new Map()
  return { rows, permits }
})

/** A column: its label, one round's figure of a row, and which way is better. */
type Metric = readonly [label: string, value: (row: Row, round: number) => number, better: "higher" | "lower"]

const throughputMetrics = (key: ThroughputKey): ReadonlyArray<Metric> => {
  const of = (pick: (t: Scenarios.Throughput) => number) => (row: Row, round: number) =>
    inRound(row.throughput[key], round, pick)
  return [
    ["ops/s", of((t) => t.opsPerSecond), "higher"],
    ["acquire p50 ms", of((t) => t.acquireP50), "lower"],
    ["acquire p99 ms", of((t) => t.acquireP99), "lower"],
    ["CPU ms/op", of((t) => t.cpuPerOp), "lower"],
    ["servers' CPU ms/op", of((t) => t.serverCpuPerOp), "lower"]
  ]
}

const contentionMetrics = (key: ContendedKey): ReadonlyArray<Metric> => {
  const of = (pick: (c: Scenarios.Contention) => number) => (row: Row, round: number) =>
    inRound(row.contended[key], round, pick)
  return [
    ["acq/s", of((c) => c.acquisitionsPerSecond), "higher"],
    ["handoff p50 ms", of((c) => c.handoffP50), "lower"],
    ["handoff p99 ms", of((c) => c.handoffP99), "lower"],
    ["wait p50 ms", of((c) => c.waitP50), "lower"],
    ["wait p99 ms", of((c) => c.waitP99), "lower"],
    ["wait max ms", of((c) => c.waitMax), "lower"],
    ["re-acquired by releaser", of((c) => c.reacquiredShare), "lower"],
    ["fairness (Jain)", of((c) => c.fairness), "higher"],
    ["gave up", of((c) => c.gaveUp), "lower"],
    ["overlaps", of((c) => c.overlaps), "lower"]
  ]
}

/** How each setup's clients are made, as the tables' titles say it. */
const setupTitles: Record<Contenders.Setup, string> = {
  library: "connections each library opens (the peers: clients connected as usual)",
  connected: "user clients, connected, passed as { client }",
  lazyConnect: "user clients made with lazyConnect, connected before use",
  aclNoPubsub: "an ACL user without pub/sub rights",
  keyPrefix: "user clients with a keyPrefix, connected, passed as { client }"
}

/** A row's figure: the median of its rounds. */
const figure = (row: Row, [, value]: Metric) => median(Array.from({ length: rounds }, (_, round) => value(row, round)))

/** A row's figures round by round. */
const perRound = (row: Row, [, value]: Metric) => Array.from({ length: rounds }, (_, round) => value(row, round))

/**
 * The floor's own figure in each round, where they differ by more than a
 * quarter: the machine's speed changed during the table (a shared host), and
 * the ratios of the rounds then say more about when each contender ran than
 * about the contender.
 */
const unevenRounds = (floorRow: Row, metric: Metric): string | undefined => {
  const figures = perRound(floorRow, metric).filter(Number.isFinite)
  if (figures.length < 2 || Math.min(...figures) <= 0 || Math.max(...figures) <= 1.25 * Math.min(...figures)) {
    return undefined
  }
  return `Caution: the floor's ${metric[0]} was ${figures.map(format).join(", ")} in its ${figures.length} rounds: ` +
    `the machine's speed changed during this table, and its ratios are not reliable.`
}

/**
 * One table: a row per contender (medians of rounds), a column per metric;
 * then each effect-redlock row's ratios, round by round with their spread:
 * to the best peer of each round and to the better of that and the floor
 * (a floor a peer beats is no floor), to its twin at the ref under
 * `--against`, and to the rows it is held against besides.
 */
const table = (title: string, metrics: ReadonlyArray<Metric>, rows: Map<string, Row>) => {
  // A contender that did not run these scenarios has no row here.
  const names = [...rows.keys()].filter((name) =>
    metrics.some((metric) => !Number.isNaN(figure(rows.get(name)!, metric)))
  )
  const lines = [
    `### ${title}`,
    "",
    `| contender | ${metrics.map(([label]) => label).join(" | ")} |`,
    `|---|${metrics.map(() => "---").join("|")}|`
  ]
  for (const name of names) {
    lines.push(`| ${name} | ${metrics.map((m) => format(figure(rows.get(name)!, m))).join(" | ")} |`)
  }
  // Under --against only the working tree's rows are held against the others (the first build's).
  const ours = names.filter((name) =>
    name.startsWith(Contenders.effectRedlock.name) && (builds.length === 0 || name.endsWith(` @ ${builds[0].label}`))
  )
  const floorRow = rows.get(Contenders.floor.name)
  const peers = names.filter((name) => !name.startsWith(Contenders.effectRedlock.name) && !name.startsWith("floor"))
  const pick = (better: Metric[2], values: ReadonlyArray<number>) => {
    const finite = values.filter(Number.isFinite)
    return finite.length === 0 ? NaN : better === "higher" ? Math.max(...finite) : Math.min(...finite)
  }
  const bestPeer = (metric: Metric) =>
    Array.from(
      { length: rounds },
      (_, round) => pick(metric[2], peers.map((name) => metric[1](rows.get(name)!, round)))
    )
  const bar = (metric: Metric) =>
    bestPeer(metric).map((best, round) =>
      pick(metric[2], [best, floorRow === undefined ? NaN : metric[1](floorRow, round)])
    )
  const ratioLine = (name: string, label: string, other: (metric: Metric) => ReadonlyArray<number>) =>
    `| ${name} ÷ ${label} | ${metrics.map((m) => ratioCell(perRound(rows.get(name)!, m), other(m))).join(" | ")} |`
  const against = (name: string, otherName: string, label = otherName) => {
    const otherRow = rows.get(otherName)
    if (otherRow !== undefined) lines.push(ratioLine(name, label, (m) => perRound(otherRow, m)))
  }
  for (const name of ours) {
    lines.push(ratioLine(name, "best peer", bestPeer))
    lines.push(ratioLine(name, "the better of floor and best peer", bar))
    for (const twin of refTwins.get(name) ?? []) against(name, twin)
    if (name.startsWith(Contenders.effectRedlockFibers.name)) against(name, Contenders.floorAsEffect.name)
    const driverTwin = Contenders.driverTwins.get(name)
    if (driverTwin !== undefined) {
      for (const other of [driverTwin.overIoredis, driverTwin.peer, driverTwin.floor]) {
        if (other !== undefined) against(name, other)
      }
    }
    // node-redlock's API on the engine: held against the promise API it maps onto, and node-redlock itself.
    if (name === Contenders.effectRedlockNodeRedlock.name) {
      against(name, Contenders.effectRedlockPromise.name)
      against(name, Contenders.nodeRedlock.name)
    }
    if (name === Effect4.overRedisService.name) against(name, Effect4.overRedisService.overIoredis)
    const effect3Twin = Effect4.effect3TwinOf(name)
    if (effect3Twin !== undefined) against(name, effect3Twin, "its Effect 3 twin")
    if (name === Contenders.effectRedlockFibersTraced.name) {
      against(name, Contenders.effectRedlockFibers.name, "untraced")
      against(name, Contenders.floorAsEffectTraced.name)
    }
  }
  const caution = floorRow === undefined ? undefined : unevenRounds(floorRow, metrics[0])
  if (caution !== undefined) lines.push("", caution)
  return lines.join("\n")
}

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(5)))).then(({ permits, rows }) => {
  const heap: Metric = ["heap growth MB", (row, round) => round === 0 ? row.heapMb ?? NaN : NaN, "lower"]
  const throughputTables = (scenario: "sequential" | "concurrent" | "single", title: string) =>
    throughputSetups.flatMap((
      setup
    ) => [table(`${title}; ${setupTitles[setup]}`, throughputMetrics(`${setup}:${scenario}`), rows), ""])
  console.log([
    `Benchmark ${new Date().toISOString().slice(0, 10)}: ${Os.cpus().length} × ${
      Os.cpus()[0]?.model ?? "cpu"
    }, Node ${process.version}, ` +
    `5 local redis-servers; ${seconds} s per scenario, ${rounds} rounds (order alternating), medians of rounds; ` +
    `ratios: the median of the rounds' ratios (their range)` +
    (against === undefined
      ? "."
      : `; the working tree's packed build against ${builds.slice(1).map((ref) => ref.label).join("'s and ")}'s.`),
    "",
    ...throughputTables("sequential", "(a) sequential lock+unlock, distinct keys"),
    ...throughputTables("concurrent", "(b) 64 concurrent loops, distinct keys"),
    ...setups.flatMap((setup) => [
      table(
        `(c) 8 workers, one key, 1 ms hold, each library's default waiting; ${setupTitles[setup]}`,
        contentionMetrics(`${setup}:defaults`),
        rows
      ),
      "",
      table(`(c') the same with a 10 ms retry delay; ${setupTitles[setup]}`, contentionMetrics(`${setup}:10ms`), rows),
      ""
    ]),
    ...throughputTables("single", "(d) N = 1, sequential"),
    table(`heap growth over ${cycles} lock+unlock cycles (16 loops, after GC)`, [heap], rows),
    ...(permits.size === 0 ? [] : ["", `### ${Semaphores.table(permits, permitContenders, builds[0]?.label)}`])
  ].join("\n"))
  process.exit(0)
}, (error) => {
  console.error(error)
  process.exit(1)
})
