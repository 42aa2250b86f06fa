/**
 * Nodes written with effects, as the engine's nodes (`RedisNode.fromEffects`).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { lateWatch } from "@effect-redlock/core/nodes/lateWatch.js"
import type { EffectNode, NodePromises, RedisNode, ReleaseWatch } from "../RedisNode.js"
import { RedisNodeError } from "../RedlockError.js"

/** See `RedisNode.fromEffects`. */
export const fromEffects = (node: EffectNode): Effect.Effect<RedisNode> =>
  Effect.map(Effect.context<never>(), (context) => {
    const { countsHandOvers, hearsReleases, name, run, watchReleases } = node
    const fork = Effect.runForkWith(context)
    const watchReleasesNow = watchReleases === undefined ? undefined : (
      key: string,
      onRelease: (next: string | null) => void
    ): ReleaseWatch =>
      lateWatch((registered) =>
        fork(watchReleases(key, onRelease)).addObserver((exit) => registered(Exit.isSuccess(exit) ? exit.value : undefined))
      )
    return { name, run, promises: promisesOf(node, context), watchReleasesNow, hearsReleases, countsHandOvers }
  })

// Each operation run as its own fiber, its answer made plain.
const promisesOf = (node: EffectNode, context: Context.Context<never>): NodePromises => {
  const fork = Effect.runForkWith(context)
  const run = <A>(effect: Effect.Effect<A, RedisNodeError>): Promise<A> =>
    new Promise((resolve, reject) => {
      fork(effect).addObserver((exit) => {
        if (Exit.isSuccess(exit)) return resolve(exit.value)
        const failure = Cause.findErrorOption(exit.cause)
        reject(
          Option.isSome(failure) ? failure.value : new RedisNodeError({
            node: node.name,
            reason: "Unknown",
            detail: Cause.pretty(exit.cause),
            cause: Cause.squash(exit.cause)
          })
        )
      })
    })
  return {
    acquire: (keys, value, ttlMillis) => run(node.acquire(keys, value, ttlMillis)),
    acquireInTurn: (keys, value, ttlMillis, turn) => run(node.acquireInTurn(keys, value, ttlMillis, turn)),
    acquireSlot: (keys, value, ttlMillis, turn) => run(node.acquireSlot(keys, value, ttlMillis, turn)),
    release: (keys, value, announce, keepPlace) => run(node.release(keys, value, announce, keepPlace)),
    extend: (keys, value, ttlMillis) => run(node.extend(keys, value, ttlMillis)),
    inspect: (key) =>
      run(Effect.map(node.inspect(key), (state) => ({
        value: Option.getOrUndefined(state.value),
        ttlMillis: Option.getOrUndefined(Option.map(state.ttl, Duration.toMillis))
      }))),
    incrementFences: (keys, value, fenceKeys) => run(Effect.map(node.incrementFences(keys, value, fenceKeys), Option.getOrUndefined)),
    commitFences: (keys, value, fenceKeys, tokens) => run(node.commitFences(keys, value, fenceKeys, tokens))
  }
}
