/**
 * The node contract (contract.ts) on the in-memory node and on a real
 * redis-server through ioredis.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Layer } from "effect"
import type * as Scope from "effect/Scope"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as RedisNode from "../src/RedisNode.js"
import * as Ioredis from "../src/RedisNode/Ioredis.js"
import { contract, type Harness, redisHarness } from "./contract.js"
import { effectsOf } from "./support.js"

const memoryHarness: Effect.Effect<Harness, never, Scope.Scope> = Effect.gen(function*() {
  const context = yield* Layer.build(RedisNode.layerMemory(1))
  const control = Context.get(context, RedisNode.MemoryNodes)
  const node = effectsOf(Context.get(context, RedisNode.RedisNodes)[0])
  return {
    node,
    putForeign: (key) => control.putForeign(0, key),
    // The memory node keeps no list items; the list is intact if it is still there, of its type.
    foreignIntact: (key) =>
      Effect.map(Effect.exit(node.inspect(key)), (exit) =>
        Exit.isFailure(exit) && (Cause.squash(exit.cause) as RedisNode.RedisNodeError).reason === "WrongType"),
    keys: control.keys(0)
  }
})

describe("contract: in-memory node", () => {
  contract<never>((name, self) => it.live(name, self), memoryHarness)
})

layer(RedisFleet.layerLocal(1), { timeout: 30_000, excludeTestServices: true })(
  "contract: redis-server via ioredis",
  (it) => {
    contract<RedisFleet.RedisFleet>((name, self) => it.effect(name, self), redisHarness(Ioredis.make))

    // Only a real server can hold this state: its lease set evicted under maxmemory, or a script cut short.
    it.effect("a waiter in line without a lease is dropped when it reaches the head, not kept there for ever", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        const server = fleet.servers[0]
        const node = effectsOf(yield* Ioredis.make(fleet.nodes[0]))
        yield* server.call("ZADD", "q\u0000queue", Date.now() - 500, "ghost")
        const answer = yield* node.acquireInTurn(["q"], "w", 10_000, { ticket: Date.now(), leaseMillis: 1_000 })
        assert.strictEqual(answer._tag, "Granted")
        assert.deepStrictEqual(yield* server.call("ZRANGE", "q\u0000queue", 0, -1), [])
      }).pipe(Effect.scoped))
  }
)
