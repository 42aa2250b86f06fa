/**
 * Diagnostic: where a contended permit's client CPU goes between promise
 * code and the Effect API. The semaphore workload of bench/semaphores.ts
 * (8 workers, 3 permits, 1 ms hold, N = 5) through four layers, alternated in
 * slices in one process (runs of this machine drift by 10-30%; slices side
 * by side do not):
 * - promise code (effect-redlock/Promise `usingPermit`);
 * - the same inside an Effect (`runPromise(Effect.promise(usingPermit))`):
 *   the cost of a fiber per permit;
 * - `Effect.scoped(Semaphore.acquire)` then the body: the Effect shell's
 *   acquisition, scope and release finalizer;
 * - `Semaphore.withPermit`: that, with the body in a child fiber watched
 *   for the lock's loss.
 * `npx tsc -p tsconfig.bench.json && node .bench-build/bench/permitLayers.js [slices] [seconds]`;
 * `GREEDY=1`: waiters with `fairHandoff: false`.
 */
import { Duration, Effect, Layer, ManagedRuntime } from "effect"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import { makeRedlock } from "effect-redlock/Promise"
import * as Redlock from "effect-redlock/Redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import * as Semaphore from "effect-redlock/Semaphore"
import * as Semaphores from "./semaphores.js"

const [slices = "4", seconds = "2"] = process.argv.slice(2)
const fairHandoff = process.env.GREEDY === undefined
const retry = Redlock.retry({ delay: "10 millis", times: 1000 })
const ttl = 10_000
const options: Semaphore.PermitOptions = { limit: Semaphores.limit, ttl: Duration.millis(ttl), retry }
const nodesOf = (ports: ReadonlyArray<number>) => ports.map((port) => ({ host: "127.0.0.1", port }))

/** A worker's manager for the Effect API, and how it holds a permit around `hold` as an effect. */
const effectLayer = (
  name: string,
  permit: (key: string, hold: Effect.Effect<void>) => Effect.Effect<unknown, unknown, Redlock.Redlock>
): Semaphores.SemaphoreContender => ({
  name,
  nodes: 5,
  start: async (ports, key) => {
    const runtime = ManagedRuntime.make(
      Redlock.layer({ restartQuarantine: false, fairHandoff }).pipe(Layer.provide(Ioredis.layer(nodesOf(ports))))
    )
    return {
      withPermit: (hold) =>
        runtime.runPromise(permit(key, Effect.promise(hold)).pipe(Effect.as(true), Effect.orElseSucceed(() => false))),
      close: () => runtime.dispose()
    }
  }
})

/** Promise code's `usingPermit`, called as is or from inside an Effect. */
const promiseLayer = (name: string, inEffect: boolean): Semaphores.SemaphoreContender => ({
  name,
  nodes: 5,
  start: async (ports, key) => {
    const redlock = await makeRedlock(nodesOf(ports), { restartQuarantine: false, fairHandoff })
    const runtime = ManagedRuntime.make(Layer.empty)
    const permit = (hold: () => Promise<void>) =>
      redlock.usingPermit(key, { limit: Semaphores.limit, ttl, retry }, hold)
    return {
      withPermit: (hold) =>
        (inEffect ? runtime.runPromise(Effect.promise(() => permit(hold))) : permit(hold)).then(
          () => true,
          () => false
        ),
      close: () => redlock.close().then(() => runtime.dispose())
    }
  }
})

const layers: ReadonlyArray<Semaphores.SemaphoreContender> = [
  promiseLayer("promise code", false),
  promiseLayer("promise code inside an Effect", true),
  effectLayer(
    "Effect.scoped(Semaphore.acquire), then the body",
    (key, hold) => Effect.scoped(Effect.zipRight(Semaphore.acquire(key, options), hold))
  ),
  effectLayer("Semaphore.withPermit", (key, hold) => Semaphore.withPermit(hold, key, options))
]

const program = Effect.gen(function*() {
  const fleet = yield* RedisFleet.RedisFleet
  const ports = fleet.servers.map((server) => server.port)
  const totals = new Map<string, { permits: number; cpuMillis: number; seconds: number }>()
  for (let slice = 0; slice < Number(slices); slice++) {
    for (const layer of slice % 2 === 0 ? layers : [...layers].reverse()) {
      const result = yield* Effect.promise(() =>
        Semaphores.contention(layer, ports, Number(seconds), `layers:${slice}`)
      )
      yield* fleet.reset
      const permits = result.acquisitionsPerSecond * Number(seconds)
      const total = totals.get(layer.name) ?? { permits: 0, cpuMillis: 0, seconds: 0 }
      totals.set(layer.name, {
        permits: total.permits + permits,
        cpuMillis: total.cpuMillis + result.cpuPerAcquisition * permits,
        seconds: total.seconds + Number(seconds)
      })
    }
  }
  return [...totals].map(([name, total]) =>
    `${name}: ${(total.permits / total.seconds).toFixed(0)} permits/s, ${
      (total.cpuMillis / total.permits).toFixed(3)
    } ms CPU per permit`
  )
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(5)))).then((lines) => {
  console.log(`permit layers, ${fairHandoff ? "in line" : "fairHandoff: false"}:\n${lines.join("\n")}`)
  process.exit(0)
})
