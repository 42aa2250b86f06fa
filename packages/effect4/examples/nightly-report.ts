/**
 * A nightly job that must run once across a fleet: the lock is held for as
 * long as the job runs (extended automatically), the job stops if the lock
 * is lost, and its write carries the lock's fencing token, so that a run
 * paused past its validity cannot overwrite the next run's result.
 *
 * Versions this example is checked with: effect 4.1.0, ioredis 5, Node 22.
 * Run with REDLOCK_NODES=redis://a:6379,redis://b:6379,redis://c:6379.
 */
import { Effect, Layer } from "effect"
import { Redlock } from "effect-redlock"
import * as Fenced from "effect-redlock/Fencing/Ioredis"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import { Redis } from "ioredis"

const storage = new Redis({ lazyConnect: true })

export const nightlyReport = Effect.gen(function*() {
  const lock = yield* Redlock.acquire("reports:nightly", { ttl: "30 seconds", autoExtend: { maxHold: "1 hour" } })
  const token = yield* lock.fencingToken
  yield* Effect.log(`building the report, token ${token}`)
  yield* Effect.sleep("2 seconds") // the work
  yield* Fenced.set(storage, { key: "reports:nightly:latest", value: new Date().toISOString(), token })
}).pipe(Effect.scoped)

export const MainLive = Redlock.layerConfig().pipe(Layer.provide(Ioredis.layerConfig()))

export const main = nightlyReport.pipe(
  Effect.catchTag("LockNotAcquired", () => Effect.log("another node runs the report tonight")),
  Effect.provide(MainLive)
)
