/**
 * `npm run demo`: several workers, each with its own lock manager, contend for
 * one lock over 5 nodes while one node fails and another turns slow; then a
 * short report. `npm run demo -- --redis` uses 5 real local redis-servers,
 * started here and stopped at the end.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import * as Checker from "../faults/checker.js"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Lock from "effect-redlock/Lock"
import * as Redlock from "effect-redlock/Redlock"
import * as RedisNode from "effect-redlock/RedisNode"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import { LockNotAcquired } from "effect-redlock/RedlockError"

const WORKERS = 4
const RUN_FOR = Duration.seconds(4)
const HOLD = Duration.millis(3)
/** Time a worker spends on other things between two jobs; without it the releaser wins again at once. */
const BETWEEN_JOBS = Duration.millis(5)
const NODES = 5

interface Section {
  readonly worker: number
  readonly start: number
  readonly end: number
}

/** How to make one worker's lock manager, and how to fail and heal nodes. */
interface Setup {
  readonly description: string
  readonly manager: Effect.Effect<Redlock.RedlockService, unknown, import("effect/Scope").Scope>
  readonly fail: (index: number) => Effect.Effect<void>
  readonly slow: (index: number) => Effect.Effect<void>
  readonly heal: (index: number) => Effect.Effect<void>
}

const memorySetup = Effect.gen(function*() {
  const context = yield* Layer.build(RedisNode.layerMemory(NODES))
  const control = Context.get(context, RedisNode.MemoryNodes)
  const setup: Setup = {
    description: `${NODES} in-memory nodes`,
    manager: Redlock.make().pipe(Effect.provide(context), Effect.orDie),
    fail: (i) => control.setDown(i, true),
    slow: (i) => control.setLatency(i, "30 millis"),
    heal: control.heal
  }
  return setup
})

const redisSetup = Effect.gen(function*() {
  const fleet = Context.get(yield* Layer.build(RedisFleet.layerLocal(NODES)), RedisFleet.RedisFleet)
  const setup: Setup = {
    description: `${NODES} local redis-servers on ports ${fleet.servers.map((s) => s.port).join(", ")}`,
    manager: Layer.build(Ioredis.layer(fleet.nodes)).pipe(
      // The demo's servers were just started: under the restart quarantine they
      // would abstain for maxTtl (30 s), as a freshly started cluster does.
      Effect.flatMap((nodes) => Redlock.make({ restartQuarantine: false }).pipe(Effect.provide(nodes))),
      Effect.orDie
    ),
    fail: (i) => fleet.servers[i].pause,
    slow: (i) => fleet.servers[i].pause, // a hung server: answers nothing until resumed
    heal: (i) => fleet.servers[i].resume
  }
  return setup
})

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]

const program = Effect.gen(function*() {
  const useRedis = process.argv.includes("--redis")
  const setup = yield* (useRedis ? redisSetup : memorySetup)
  const sections: Array<Section> = []
  let gaveUp = 0
  const started = yield* Lock.monotonicMillis
  const deadline = started + Duration.toMillis(RUN_FOR)
  const retry = Schedule.spaced("2 millis").pipe(Schedule.jittered, Schedule.upTo("2 seconds"))

  const worker = (id: number) =>
    Effect.gen(function*() {
      const redlock = yield* setup.manager
      while ((yield* Lock.monotonicMillis) < deadline) {
        yield* Effect.scoped(Effect.gen(function*() {
          yield* redlock.acquire("demo:job", { ttl: "2 seconds", nodeTimeout: "50 millis", retry })
          const start = yield* Lock.monotonicMillis
          yield* Effect.sleep(HOLD)
          sections.push({ worker: id, start, end: yield* Lock.monotonicMillis })
        })).pipe(Effect.catchIf((e) => e instanceof LockNotAcquired, () => Effect.sync(() => void gaveUp++)))
        yield* Effect.sleep(BETWEEN_JOBS)
      }
    })

  const faults = Effect.gen(function*() {
    yield* Effect.sleep("1 second")
    yield* setup.fail(0)
    yield* Effect.sleep("1 second")
    yield* setup.slow(1)
    yield* Effect.sleep("1 second")
    yield* setup.heal(0)
    yield* setup.heal(1)
  })

  yield* Effect.log(
    `effect-redlock demo: ${WORKERS} workers, one lock, ${setup.description}, ${Duration.format(RUN_FOR)}`
  )
  yield* Effect.all([faults, ...Array.from({ length: WORKERS }, (_, i) => worker(i + 1))], {
    concurrency: "unbounded",
    discard: true
  })

  const byStart = [...sections].sort((a, b) => a.start - b.start)
  const overlapping = Checker.overlappingPairs(sections).length
  const handoffs: Array<number> = []
  for (let i = 1; i < byStart.length; i++) {
    const previous = byStart[i - 1]
    const next = byStart[i]
    if (next.start >= previous.end && next.worker !== previous.worker) handoffs.push(next.start - previous.end)
  }
  handoffs.sort((a, b) => a - b)
  const perWorker = Array.from({ length: WORKERS }, (_, i) => sections.filter((s) => s.worker === i + 1).length)
  const report = [
    `faults: at 1 s node 0 ${useRedis ? "paused" : "down"}; at 2 s node 1 ${
      useRedis ? "paused" : "slow (+30 ms)"
    }; at 3 s both healed`,
    `acquisitions: ${sections.length} (per worker: ${perWorker.join(", ")})`,
    `overlapping critical sections: ${overlapping}`,
    `handoff to another worker: median ${percentile(handoffs, 0.5).toFixed(2)} ms, p99 ${
      percentile(handoffs, 0.99).toFixed(2)
    } ms (${handoffs.length} handoffs)`,
    `gave up after retries: ${gaveUp}`
  ]
  for (const line of report) console.log(line)
  if (overlapping > 0) return yield* Effect.dieMessage("mutual exclusion violated")
}).pipe(Effect.scoped)

NodeRuntime.runMain(program)
