/**
 * The semaphore workload's permits over in-memory nodes, for the benches
 * that count a permit's cost without the network (permitEngine.ts,
 * permitInstructions.ts): one set of nodes, shared by managers over them
 * (promise code's `usingPermit`, or the Effect API's `Semaphore.withPermit`,
 * with the workload's options) and the nodes alone (their `acquireSlot` and
 * `release` called directly, a refused worker polling every 10 ms: no
 * engine).
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Scope from "effect/Scope"
import { makeRedlock } from "effect-redlock/Promise"
import * as Redlock from "effect-redlock/Redlock"
import * as RedisNode from "effect-redlock/RedisNode"
import * as Semaphore from "effect-redlock/Semaphore"
import { limit, permitFromNodesAlone, ttlMillis } from "./semaphores.js"

/** A permit around `hold` (one of the workload's bodies). */
export type Permit = (hold: () => Promise<void>) => Promise<unknown>

export interface InMemoryPermits {
  /** Through the library: `usingPermit` on `resource`. */
  readonly viaLibrary: (resource: string) => Permit
  /** Through the library's Effect API: `Semaphore.withPermit` on `resource`, one `runPromise` per permit. */
  readonly viaEffect: (resource: string) => Permit
  /** From the nodes alone, on `resource`. */
  readonly viaNodes: (resource: string) => Permit
  readonly close: () => Promise<void>
}

export const make = async (nodes: number): Promise<InMemoryPermits> => {
  const nodesScope = Effect.runSync(Scope.make())
  const nodeList = await Effect.runPromise(
    Effect.map(Layer.buildWithScope(RedisNode.layerMemory(nodes), nodesScope), Context.get(RedisNode.RedisNodes))
  )
  const redlock = await makeRedlock(Layer.succeed(RedisNode.RedisNodes, nodeList), { restartQuarantine: false })
  // Redlock.retry: a Schedule for the Effect API, with the plain steps the promise API takes.
  const options = { limit, ttl: ttlMillis, retry: Redlock.retry({ delay: Duration.millis(10), times: 1000 }) }
  const runtime = ManagedRuntime.make(
    Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(Layer.succeed(RedisNode.RedisNodes, nodeList)))
  )
  const effectOptions = { ...options, ttl: Duration.millis(ttlMillis) }
  return {
    viaLibrary: (resource) => (hold) => redlock.usingPermit(resource, options, hold),
    viaEffect: (resource) => (hold) =>
      runtime.runPromise(Semaphore.withPermit(Effect.promise(hold), resource, effectOptions)),
    viaNodes: (resource) => permitFromNodesAlone(nodeList, resource),
    close: async () => {
      await redlock.close()
      await runtime.dispose()
      await Effect.runPromise(Scope.close(nodesScope, Exit.void))
    }
  }
}

/** Whether to run each worker's next permit. */
export type Going = (granted: number) => boolean

/** `workers` loops of `permit`, while `going` says so; the permits granted. */
export const run = async (
  permit: Permit,
  workers: number,
  body: () => Promise<void>,
  going: Going
): Promise<number> => {
  let granted = 0
  const hold = () => {
    granted++
    return body()
  }
  await Promise.all(Array.from({ length: workers }, async () => {
    while (going(granted)) await permit(hold)
  }))
  return granted
}
