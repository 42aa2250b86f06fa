/**
 * A counting semaphore: five report builds want to run, at most two at once
 * across every process that uses the same Redis nodes. Each build waits for
 * a permit on its retry schedule and releases it when it ends.
 *
 *   REDLOCK_NODES=redis://127.0.0.1:6379,... npx tsx examples/semaphore.ts
 */
import { Effect, Layer, Schedule } from "effect"
import { Redlock, Semaphore } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"

let building = 0
let mostAtOnce = 0

const buildReport = (report: number) =>
  Effect.gen(function*() {
    mostAtOnce = Math.max(mostAtOnce, ++building)
    yield* Effect.log(`building report ${report} (${building} building now)`)
    yield* Effect.sleep("200 millis")
    building--
  }).pipe(
    Semaphore.withPermit("reports:build", {
      limit: 2,
      ttl: "10 seconds",
      // Every 20-40 ms, for up to 5 seconds.
      retry: Schedule.spaced("30 millis").pipe(Schedule.jittered, Schedule.upTo("5 seconds"))
    })
  )

const program = Effect.forEach([1, 2, 3, 4, 5], buildReport, { concurrency: "unbounded" }).pipe(
  Effect.zipRight(Effect.suspend(() => Effect.log(`5 reports built, at most ${mostAtOnce} at once`)))
)

const MainLive = Redlock.layerConfig().pipe(Layer.provide(Ioredis.layerConfig()))

Effect.runPromise(program.pipe(Effect.provide(MainLive)))
