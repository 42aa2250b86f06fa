/**
 * A lock as a scoped resource: held for the scope, released on every node
 * when the scope closes, whatever the exit.
 *
 *   REDLOCK_NODES=redis://127.0.0.1:6379,redis://127.0.0.1:6380,redis://127.0.0.1:6381 \
 *     npx tsx examples/scoped-lock.ts
 */
import { Duration, Effect, Layer } from "effect"
import { Redlock } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"

const chargeOrder = (orderId: string) =>
  Effect.gen(function*() {
    const lock = yield* Redlock.acquire(`orders:${orderId}`, { ttl: "10 seconds" })
    yield* Effect.log(`holding orders:${orderId} for ${Duration.format(yield* lock.remaining)}`)
    // ... charge the card; finish well before lock.remaining runs out ...
  }).pipe(Effect.scoped) // released here

// Nodes from REDLOCK_NODES; options from REDLOCK_* (all optional).
const MainLive = Redlock.layerConfig().pipe(Layer.provide(Ioredis.layerConfig()))

Effect.runPromise(chargeOrder("42").pipe(Effect.provide(MainLive)))
