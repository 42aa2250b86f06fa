import { Context, Effect, Layer } from "effect"
import * as RedisFleet from "./fleet/RedisFleet.js"
import * as Redlock from "./src/Redlock.js"
import * as Ioredis from "./src/RedisNode/Ioredis.js"

const program = Effect.gen(function*() {
  const fleet = Context.get(yield* Layer.build(RedisFleet.layerLocal(5)), RedisFleet.RedisFleet)
  const redlock = Context.get(yield* Layer.build(Redlock.layer().pipe(Layer.provide(Ioredis.layer(fleet.nodes)))), Redlock.Redlock)
  const t0 = performance.now()
  for (let i = 0; i < 2000; i++) yield* Effect.scoped(redlock.acquire(`k${i}`, { ttl: "10 seconds" }))
  console.log("in-effect loop:", (2000 / (performance.now() - t0) * 1000).toFixed(0), "ops/s")
}).pipe(Effect.scoped)
Effect.runPromise(program).then(() => process.exit(0))
