/**
 * Fenced writes on a real redis-server, with the tokens of real locks: a
 * holder that lost its lock (paused past its validity) cannot overwrite the
 * next holder's write.
 */
import { assert, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Redlock } from "effect-redlock"
import * as Fenced from "effect-redlock/Fencing/Ioredis"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import { layerLocal, RedisFleet } from "./fleet.js"

it.live("a holder whose lock expired writes nothing over the next holder's write: StaleFencingToken", () =>
  Effect.gen(function*() {
    const fleet = yield* RedisFleet
    const storage = fleet.servers[0].admin
    yield* Effect.provide(
      Effect.gen(function*() {
        const redlock = yield* Redlock.Redlock
        const first = yield* redlock.acquire("report", { ttl: "200 millis" })
        const firstToken = yield* first.fencingToken
        yield* Fenced.set(storage, { key: "report:latest", value: "first", token: firstToken })
        // The first holder pauses past its validity; a second takes the lock and writes.
        yield* Effect.sleep("300 millis")
        const second = yield* redlock.acquire("report", { ttl: "5 seconds" })
        const secondToken = yield* second.fencingToken
        assert.isTrue(secondToken > firstToken)
        yield* Fenced.set(storage, { key: "report:latest", value: "second", token: secondToken })
        // The first holder wakes up and writes: refused.
        const stale = yield* Effect.flip(Fenced.set(storage, { key: "report:latest", value: "late", token: firstToken }))
        assert.strictEqual(stale._tag, "StaleFencingToken")
        if (stale._tag === "StaleFencingToken") assert.strictEqual(stale.highestSeen, secondToken)
        // The same holder may write again with its token.
        yield* Fenced.set(storage, { key: "report:latest", value: "second again", token: secondToken })
        assert.strictEqual(yield* Effect.promise(() => storage.get("report:latest")), "second again")
      }).pipe(Effect.scoped),
      Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(Ioredis.layer(fleet.nodes)))
    )
  }).pipe(Effect.provide(layerLocal(3))))
