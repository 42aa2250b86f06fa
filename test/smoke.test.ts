import { assert, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as RedisFleet from "../fleet/RedisFleet.js"
import * as Redlock from "../src/Redlock.js"
import * as Ioredis from "../src/RedisNode/Ioredis.js"

it.live("smoke", () =>
  Effect.gen(function*() {
    const fleet = yield* RedisFleet.RedisFleet
    const lock = yield* Redlock.acquire("a", { ttl: "1 second" }).pipe(
      Effect.provide(Redlock.layer().pipe(Layer.provide(Ioredis.layer(fleet.nodes))))
    )
    console.log(lock.validity, lock.outcomes)
    console.log(yield* fleet.dbsizes)
    assert.isTrue(true)
  }).pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(5))))
