/**
 * `withLock` with automatic extension: the effect runs while the lock is
 * held, the lock is extended while it runs, and if it is lost anyway (nodes
 * unreachable for longer than the ttl) the effect is interrupted and
 * `withLock` fails with `LockLost`.
 *
 *   REDLOCK_NODES=redis://127.0.0.1:6379,... npx tsx examples/with-lock.ts
 */
import { Effect, Layer } from "effect"
import { Redlock } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"

const rebuildCache = Effect.gen(function*() {
  for (let step = 1; step <= 3; step++) {
    yield* Effect.log(`rebuilding the cache: step ${step} of 3`)
    yield* Effect.sleep("400 millis") // three steps take longer than one ttl
  }
  return "rebuilt"
})

const program = rebuildCache.pipe(
  Redlock.withLock("cache:rebuild", { ttl: "1 second", autoExtend: { maxHold: "1 minute" } }),
  Effect.catchTags({
    LockNotAcquired: () => Effect.succeed("someone else is rebuilding it"),
    LockLost: (lost) => Effect.succeed(`stopped: ${lost.message}`)
  }),
  Effect.tap(Effect.log)
)

const MainLive = Redlock.layerConfig().pipe(Layer.provide(Ioredis.layerConfig()))

Effect.runPromise(program.pipe(Effect.provide(MainLive)))
