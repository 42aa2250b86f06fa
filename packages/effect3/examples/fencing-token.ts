/**
 * A write protected by a fencing token: the storage refuses a write whose
 * token is smaller than one it has seen, so a holder that was paused past
 * its validity cannot overwrite the work of the holder after it.
 *
 *   REDLOCK_NODES=redis://127.0.0.1:6379,... STORAGE_URL=redis://127.0.0.1:6382 \
 *     npx tsx examples/fencing-token.ts
 */
import { Config, Effect, Layer } from "effect"
import { Redlock } from "effect-redlock"
import * as Fenced from "effect-redlock/Fencing/Ioredis"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import { Redis } from "ioredis"

const saveReport = (storage: Redis, report: string) =>
  Effect.gen(function*() {
    const lock = yield* Redlock.acquire("reports:daily", { ttl: "10 seconds" })
    const token = yield* lock.fencingToken
    // Refused with StaleFencingToken if a later holder already wrote.
    yield* Fenced.set(storage, { key: "reports:daily:latest", value: report, token })
    yield* Effect.log(`saved with fencing token ${token}`)
  }).pipe(Effect.scoped)

const program = Effect.gen(function*() {
  const url = yield* Config.string("STORAGE_URL")
  const storage = yield* Effect.acquireRelease(
    Effect.sync(() => new Redis(url)),
    (client) => Effect.promise(() => client.quit())
  )
  yield* saveReport(storage, "first")
  yield* saveReport(storage, "second")
}).pipe(Effect.scoped)

const MainLive = Redlock.layerConfig().pipe(Layer.provide(Ioredis.layerConfig()))

Effect.runPromise(program.pipe(Effect.provide(MainLive)))
