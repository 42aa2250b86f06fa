/**
 * `npm run faults`: the full fault suite on 6 local redis-servers (5 lock
 * nodes and a fenced storage server; durable scenarios on 6 more, with AOF),
 * every scenario in turn, then one table.
 * Exits with 1 when a scenario does not hold what it promises.
 *
 * Options: `--workers K` (default 4), `--seconds S` per scenario (default 10),
 * `--seed N` (default 1), `--only TEXT` (the scenarios whose name contains it),
 * `--client ioredis|node-redis|glide` (the client library of the lock nodes; default ioredis),
 * `--front-ends effect|node-redlock|mixed` (what the workers are written with; default effect).
 */
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Suite from "./suite.js"

const argument = (name: string, fallback: number): number => {
  const index = process.argv.indexOf(`--${name}`)
  const value = index >= 0 ? Number(process.argv[index + 1]) : fallback
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`)
  return value
}

const onlyIndex = process.argv.indexOf("--only")
const only = onlyIndex >= 0 ? process.argv[onlyIndex + 1] : undefined

const clientIndex = process.argv.indexOf("--client")
const client = clientIndex >= 0 ? process.argv[clientIndex + 1] : "ioredis"
if (client !== "ioredis" && client !== "node-redis" && client !== "glide") {
  throw new Error("--client must be ioredis, node-redis or glide")
}

const frontEndsIndex = process.argv.indexOf("--front-ends")
const frontEnds = frontEndsIndex >= 0 ? process.argv[frontEndsIndex + 1] : "effect"
if (frontEnds !== "effect" && frontEnds !== "node-redlock" && frontEnds !== "mixed") {
  throw new Error("--front-ends must be effect, node-redlock or mixed")
}

const settings: Suite.Settings = {
  client,
  frontEnds,
  workers: argument("workers", 4),
  durationMillis: argument("seconds", 10) * 1000,
  ttlMillis: 2000,
  maxTtlMillis: 2000,
  holdMillis: [20, 150],
  seed: argument("seed", 1)
}

/** A fleet started for the run, stopped (by PID) when it ends. */
const fleetOf = (durable: boolean) =>
  Effect.map(Layer.build(Suite.fleetFor({ durable })), (context) => Context.get(context, RedisFleet.RedisFleet))

const program = Effect.gen(function*() {
  // Durable scenarios run on servers of their own (AOF, appendfsync always).
  const plain = yield* fleetOf(false)
  const durable = yield* fleetOf(true)
  yield* Console.log(
    `fault suite: ${settings.workers} worker processes (${frontEnds}), ${Suite.lockNodes} lock nodes over ${client}, ` +
      `ttl ${settings.ttlMillis} ms, maxTtl ${settings.maxTtlMillis} ms, ${
        settings.durationMillis / 1000
      } s per scenario, seed ${settings.seed}`
  )
  const reports: Array<Suite.Report> = []
  for (
    const scenario of Suite.scenarios(settings).filter((scenario) => only === undefined || scenario.name.includes(only))
  ) {
    // node-redlock's API has locks only: no semaphore, no read-write lock.
    if (frontEnds !== "effect" && (scenario.limit !== undefined || scenario.maxReaders !== undefined)) continue
    const report = yield* Suite.runScenario(scenario.durable === true ? durable : plain, scenario, settings)
    reports.push(report)
    yield* Console.log(`${scenario.name}: ${report.acquisitions} acquisitions, ${report.violations} violations`)
    for (const problem of report.problems.slice(0, 5)) yield* Console.log(`  ${problem}`)
  }
  yield* Console.log("\n" + Suite.table(reports))
  return reports.every(Suite.passed)
})

Effect.runPromise(
  Effect.scoped(program)
).then(
  (ok) => process.exit(ok ? 0 : 1),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
