/**
 * The in-memory nodes of this shell: the shared memory nodes (nodes/memory.ts)
 * on the clock of the fiber that builds their layer (a test's `TestClock`
 * moves their latency and expiry), their fault controls as effects.
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { MemoryFleet } from "@effect-redlock/core/nodes/memory.js"
import type * as RedisNode from "../../RedisNode.js"
import * as Monotonic from "../monotonic.js"
import { makeNodeError, MemoryNodes, RedisNodes } from "../nodes.js"

/** @internal */
export const layer = (n: number): Layer.Layer<RedisNodes | MemoryNodes> =>
  Layer.scopedContext(Effect.gen(function*() {
    if (!Number.isInteger(n) || n < 1) {
      return yield* Effect.dieMessage(`layerMemory: n must be a positive integer, got ${n}`)
    }
    // The clock of the fiber that builds the layer: a test's TestClock moves latency and expiry.
    const time = yield* Monotonic.currentTime
    const fleet = new MemoryFleet(n, time, makeNodeError)
    const control: RedisNode.MemoryNodesControl = {
      size: n,
      setDown: (index, down) => Effect.sync(() => fleet.setDown(index, down)),
      setLatency: (index, latency) => Effect.sync(() => fleet.setLatency(index, Duration.toMillis(latency))),
      setFailure: (index, reason) => Effect.sync(() => fleet.setFailure(index, Option.getOrUndefined(reason))),
      setAnnouncementDelay: (index, delay) =>
        Effect.sync(() => fleet.setAnnouncementDelay(index, Duration.toMillis(delay))),
      heal: (index) => Effect.sync(() => fleet.heal(index)),
      restart: (index) => Effect.map(Monotonic.monotonicMillis, (now) => fleet.restart(index, now)),
      setDurable: (index, durable) => Effect.sync(() => fleet.setDurable(index, durable)),
      jumpClock: (index, millis) => Effect.sync(() => fleet.jumpClock(index, millis)),
      putForeign: (index, key) => Effect.sync(() => fleet.putForeign(index, key)),
      putString: (index, key, value, ttlMillis) => Effect.sync(() => fleet.putString(index, key, value, ttlMillis)),
      keys: (index) => Effect.sync(() => fleet.keys(index)),
      operations: (index) => Effect.sync(() => fleet.operations(index)),
      releaseWatchers: (index) => Effect.sync(() => fleet.releaseWatchers(index))
    }
    const nodes = fleet.nodes.map((memoryNode) => memoryNode.toNode())
    return Context.make(RedisNodes, nodes).pipe(Context.add(MemoryNodes, control))
  }))
