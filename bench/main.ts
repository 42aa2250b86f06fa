/**
 * `npm run bench`: every contender in turn against the same 5 local
 * redis-servers, in alternating order between rounds, then one table per
 * scenario with each figure's ratio to the floor and to the best peer.
 *
 * Options: `--seconds S` per scenario (default 3), `--rounds R` (default 2),
 * `--cycles N` for the heap scenario (default 100000), `--only name,...`
 * (lock contenders only; the semaphore table (e) runs without it),
 * `--setups library,connected,lazyConnect,aclNoPubsub,keyPrefix` (how the contended
 * scenarios' clients are made: contenders.ts `Setup`; default all).
 */
import * as Effect from "effect/Effect"
import * as Os from "node:os"
import * as RedisFleet from "../fleet/RedisFleet.js"
import * as Contenders from "./contenders.js"
import * as Effect4 from "./effect4.js"
import * as Scenarios from "./scenarios.js"
import { format } from "./scenarios.js"
import * as Semaphores from "./semaphores.js"

const flag = (name: string): string | undefined => {
  const index = process.argv.indexOf(`--${name}`)
  return index >= 0 ? process.argv[index + 1] : undefined
}
const seconds = Number(flag("seconds") ?? 3)
const rounds = Number(flag("rounds") ?? 2)
const cycles = Number(flag("cycles") ?? 100_000)
const only = flag("only")?.split(",")
// Both lines in one run: the Effect 4 package's rows (effect4.ts) beside the Effect 3 line's.
const effect4 = await Effect4.contenders()
const contenders = [...Contenders.all, ...effect4].filter((c) => only === undefined || only.some((name) => c.name.includes(name)))
const setups = (flag("setups")?.split(",") ?? Contenders.setups) as ReadonlyArray<Contenders.Setup>
for (const setup of setups) {
  if (!Contenders.setups.includes(setup)) throw new Error(`--setups: unknown setup ${setup} (${Contenders.setups.join(", ")})`)
}

/** The contended scenarios' results, by setup and waiting: `library:defaults`, `aclNoPubsub:10ms` ... */
type ContendedKey = `${Contenders.Setup}:${Contenders.Waiting}`

interface Row {
  sequential?: Array<Scenarios.Throughput>
  concurrent?: Array<Scenarios.Throughput>
  single?: Array<Scenarios.Throughput>
  contended?: Partial<Record<ContendedKey, Array<Scenarios.Contention>>>
  heapMb?: number
}

const push = <K extends keyof Row>(row: Row, key: K, value: NonNullable<Row[K]> extends Array<infer A> ? A : never) => {
  const list = (row[key] ?? []) as Array<unknown>
  list.push(value)
  ;(row as Record<string, unknown>)[key] = list
}

const mean = <A>(values: ReadonlyArray<A> | undefined, pick: (a: A) => number) =>
  values === undefined || values.length === 0 ? NaN : values.reduce((sum, v) => sum + pick(v), 0) / values.length

const program = Effect.gen(function*() {
  const fleet = yield* RedisFleet.RedisFleet
  const ports = fleet.servers.map((server) => server.port)
  if (setups.includes("aclNoPubsub")) {
    yield* Effect.forEach(fleet.servers, (server) => server.call("ACL", "SETUSER", Contenders.aclUser.username, ...Contenders.aclRule))
  }
  const rows = new Map<string, Row>(contenders.map((c) => [c.name, {}]))
  const log = (line: string) => Effect.sync(() => console.error(line))
  yield* log(`bench: ${contenders.length} contenders, 5 redis-servers on ports ${ports.join(", ")}, ${seconds} s per scenario, ${rounds} rounds`)
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? contenders : [...contenders].reverse()
    for (const contender of order) {
      const row = rows.get(contender.name)!
      const tag = `${round}:${contender.name.split(" ")[0]}`
      yield* Effect.promise(async () => {
        const client = await contender.start(ports, "none")
        push(row, "sequential", await Scenarios.throughput(client, 1, seconds, `seq:${tag}`))
        push(row, "concurrent", await Scenarios.throughput(client, 64, seconds, `c64:${tag}`))
        await client.close()
        const single = await contender.start(ports.slice(0, 1), "none")
        push(row, "single", await Scenarios.throughput(single, 1, seconds, `n1:${tag}`))
        await single.close()
        if (contender.throughputOnly) return
        for (const setup of setups) {
          for (const waiting of ["defaults", "10ms"] as const) {
            const contended = row.contended ??= {}
            const results = contended[`${setup}:${waiting}`] ??= []
            results.push(await Scenarios.contention(contender, ports, waiting, 8, seconds, `${setup}:${waiting}:${tag}`, setup))
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
      rows.get(contender.name)!.heapMb = await Scenarios.heapGrowth(client, cycles, `heap:${contender.name.split(" ")[0]}`)
      await client.close()
    })
    yield* fleet.reset
    yield* log(`heap: ${contender.name} done`)
  }
  // (e) semaphores: only when every contender runs (not with --only).
  const permits = only === undefined ? yield* Semaphores.rounds(fleet, seconds, rounds, log) : new Map()
  return { rows, permits }
})

type Metric = readonly [label: string, value: (row: Row) => number, better: "higher" | "lower"]

const throughputMetrics = (key: "sequential" | "concurrent" | "single"): ReadonlyArray<Metric> => [
  ["ops/s", (row) => mean(row[key], (t) => t.opsPerSecond), "higher"],
  ["acquire p50 ms", (row) => mean(row[key], (t) => t.acquireP50), "lower"],
  ["acquire p99 ms", (row) => mean(row[key], (t) => t.acquireP99), "lower"],
  ["CPU ms/op", (row) => mean(row[key], (t) => t.cpuPerOp), "lower"]
]

const contentionMetrics = (key: ContendedKey): ReadonlyArray<Metric> => {
  const of = (pick: (c: Scenarios.Contention) => number) => (row: Row) => mean(row.contended?.[key], pick)
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

/**
 * The floor's own figure in each round, where they differ by more than a
 * quarter: the machine's speed changed during the table (a shared host), and
 * the ratios of a mean of rounds then say more about when each contender ran
 * than about the contender.
 */
const unevenRounds = (floorRow: Row, [label, value]: Metric): string | undefined => {
  const perRound = Array.from({ length: rounds }, (_, round) => {
    const one: Row = {}
    const inRound = (list: unknown) => Array.isArray(list) ? [list[round]] : list
    for (const [key, list] of Object.entries(floorRow)) {
      ;(one as Record<string, unknown>)[key] = key === "contended"
        ? Object.fromEntries(Object.entries(list as object).map(([setup, results]) => [setup, inRound(results)]))
        : inRound(list)
    }
    return value(one)
  }).filter(Number.isFinite)
  if (perRound.length < 2 || Math.min(...perRound) <= 0 || Math.max(...perRound) <= 1.25 * Math.min(...perRound)) {
    return undefined
  }
  return `Caution: the floor's ${label} was ${perRound.map(format).join(", ")} in its ${perRound.length} rounds: ` +
    `the machine's speed changed during this table, and its ratios are not reliable.`
}

/** One table: a row per contender, a column per metric; then each effect-redlock row's ratios to the floor and to the best peer. */
const table = (title: string, metrics: ReadonlyArray<Metric>, rows: Map<string, Row>) => {
  // A contender that did not run these scenarios has no row here.
  const names = [...rows.keys()].filter((name) => metrics.some(([, value]) => !Number.isNaN(value(rows.get(name)!))))
  const lines = [`### ${title}`, "", `| contender | ${metrics.map(([label]) => label).join(" | ")} |`, `|---|${metrics.map(() => "---").join("|")}|`]
  for (const name of names) lines.push(`| ${name} | ${metrics.map(([, value]) => format(value(rows.get(name)!))).join(" | ")} |`)
  const ours = names.filter((name) => name.startsWith(Contenders.effectRedlock.name))
  const floorRow = rows.get(Contenders.floor.name)
  const floorAsEffectRow = rows.get(Contenders.floorAsEffect.name)
  const peers = names.filter((name) => !ours.includes(name) && !name.startsWith("floor"))
  const ratio = (a: number, b: number) => Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? `${(a / b).toFixed(2)}x` : "–"
  const best = ([, value, better]: Metric) => {
    const values = peers.map((name) => value(rows.get(name)!)).filter(Number.isFinite)
    return values.length === 0 ? NaN : better === "higher" ? Math.max(...values) : Math.min(...values)
  }
  for (const name of ours) {
    const row = rows.get(name)!
    lines.push(`| ${name} ÷ floor | ${metrics.map((m) => floorRow === undefined ? "–" : ratio(m[1](row), m[1](floorRow))).join(" | ")} |`)
    lines.push(`| ${name} ÷ best peer | ${metrics.map((m) => ratio(m[1](row), best(m))).join(" | ")} |`)
    if (name === Contenders.effectRedlockFibers.name && floorAsEffectRow !== undefined) {
      lines.push(`| ${name} ÷ floor as an Effect resource | ${metrics.map((m) => ratio(m[1](row), m[1](floorAsEffectRow))).join(" | ")} |`)
    }
    const driverTwin = Contenders.driverTwins.get(name)
    if (driverTwin !== undefined) {
      for (const other of [driverTwin.overIoredis, driverTwin.peer]) {
        const otherRow = rows.get(other)
        if (otherRow !== undefined) lines.push(`| ${name} ÷ ${other} | ${metrics.map((m) => ratio(m[1](row), m[1](otherRow))).join(" | ")} |`)
      }
    }
    const effect3Twin = rows.get(Effect4.effect3TwinOf(name) ?? "")
    if (effect3Twin !== undefined) {
      lines.push(`| ${name} ÷ its Effect 3 twin | ${metrics.map((m) => ratio(m[1](row), m[1](effect3Twin))).join(" | ")} |`)
    }
    const untracedRow = rows.get(Contenders.effectRedlockFibers.name)
    if (name === Contenders.effectRedlockFibersTraced.name && untracedRow !== undefined) {
      lines.push(`| ${name} ÷ untraced | ${metrics.map((m) => ratio(m[1](row), m[1](untracedRow))).join(" | ")} |`)
      const tracedFloorRow = rows.get(Contenders.floorAsEffectTraced.name)
      if (tracedFloorRow !== undefined) {
        lines.push(`| ${name} ÷ floor as an Effect resource, traced | ${metrics.map((m) => ratio(m[1](row), m[1](tracedFloorRow))).join(" | ")} |`)
      }
    }
  }
  const caution = floorRow === undefined ? undefined : unevenRounds(floorRow, metrics[0])
  if (caution !== undefined) lines.push("", caution)
  return lines.join("\n")
}

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(5)))).then(({ permits, rows }) => {
  const heap: Metric = ["heap growth MB", (row) => row.heapMb ?? NaN, "lower"]
  console.log([
    `Benchmark ${new Date().toISOString().slice(0, 10)}: ${Os.cpus().length} × ${Os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}, ` +
      `5 local redis-servers; ${seconds} s per scenario, ${rounds} rounds (order alternating), means of rounds.`,
    "",
    table("(a) sequential lock+unlock, distinct keys", throughputMetrics("sequential"), rows),
    "",
    table("(b) 64 concurrent loops, distinct keys", throughputMetrics("concurrent"), rows),
    "",
    ...setups.flatMap((setup) => [
      table(`(c) 8 workers, one key, 1 ms hold, each library's default waiting; ${setupTitles[setup]}`, contentionMetrics(`${setup}:defaults`), rows),
      "",
      table(`(c') the same with a 10 ms retry delay; ${setupTitles[setup]}`, contentionMetrics(`${setup}:10ms`), rows),
      ""
    ]),
    table("(d) N = 1, sequential", throughputMetrics("single"), rows),
    "",
    table(`heap growth over ${cycles} lock+unlock cycles (16 loops, after GC)`, [heap], rows),
    ...(permits.size === 0 ? [] : ["", `### ${Semaphores.table(permits)}`])
  ].join("\n"))
  process.exit(0)
}, (error) => {
  console.error(error)
  process.exit(1)
})
