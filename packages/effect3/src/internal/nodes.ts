/**
 * The node error and the tags of the node set: defined here, re-exported by
 * the public `RedisNode` module, and used by the in-memory node, which that
 * module builds (so that neither imports the other at run time).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import { recognisePlain } from "@effect-redlock/core/manager/errors.js"
import * as Schema from "effect/Schema"
import * as Messages from "@effect-redlock/core/engine/messages.js"
import * as Engine from "@effect-redlock/core/engine/node.js"
import { lateWatch } from "@effect-redlock/core/nodes/lateWatch.js"
import type { EffectNode, MemoryNodesControl, NodePromises, RedisNode, ReleaseWatch } from "../RedisNode.js"

/**
 * Why a node could not carry out an operation (documented in RedisNode.ts).
 *
 * @since 0.1.0
 * @category errors
 */
export const RedisNodeErrorReason = Schema.Literal(...Engine.nodeErrorReasons)

/**
 * @since 0.1.0
 * @category errors
 */
export type RedisNodeErrorReason = typeof RedisNodeErrorReason.Type

/**
 * An operation on one node failed. It is recorded as that node's outcome; it
 * never aborts a lock operation on its own, because the other nodes may still
 * form a quorum.
 *
 * @since 0.1.0
 * @category errors
 */
export class RedisNodeError extends Schema.TaggedError<RedisNodeError>("effect-redlock/RedisNodeError")(
  "RedisNodeError",
  {
    node: Schema.String,
    reason: RedisNodeErrorReason,
    detail: Schema.String,
    cause: Schema.optional(Schema.Defect)
  }
) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return Messages.nodeError(this)
  }
}

// The promise API's nodes fail with core's plain RedisNodeError.
recognisePlain(RedisNodeError, "RedisNodeError")

/**
 * @since 0.1.0
 * @category guards
 */
export const isRedisNodeError = (u: unknown): u is RedisNodeError => Schema.is(RedisNodeError)(u)

/**
 * What one node answered to one operation of a lock.
 *
 * - `Ok`: the node did it (acquired, released, extended every key).
 * - `Held`: another value holds a key (acquire), or a key is no longer ours
 *   (release, extend).
 * - `TimedOut`: no answer within the per-node timeout.
 * - `Failed`: the node answered with an error.
 * - `NotAwaited`: the operation was decided by the other nodes before this one
 *   answered, so its answer was not waited for.
 * - `Abstained`: the node did it, but its vote does not count: it restarted
 *   (and may have lost keys) less than the quarantine ago, or this client has
 *   not yet learned when its server started. `detail` says which.
 *
 * `millis` is how long the node took to answer (or how long we waited).
 *
 * @since 0.1.0
 * @category models
 */
export const NodeOutcome = Schema.Union(
  Schema.TaggedStruct("Ok", { node: Schema.String, millis: Schema.Number }),
  Schema.TaggedStruct("Held", { node: Schema.String, millis: Schema.Number }),
  Schema.TaggedStruct("TimedOut", { node: Schema.String, millis: Schema.Number }),
  Schema.TaggedStruct("Failed", { node: Schema.String, millis: Schema.Number, error: RedisNodeError }),
  Schema.TaggedStruct("NotAwaited", { node: Schema.String, millis: Schema.Number }),
  Schema.TaggedStruct("Abstained", { node: Schema.String, millis: Schema.Number, detail: Schema.String })
)

/**
 * @since 0.1.0
 * @category models
 */
export type NodeOutcome = typeof NodeOutcome.Type

/** `MakeNodeError` of this shell, for the drivers and the memory nodes. */
export const makeNodeError = (fields: Parameters<Engine.MakeNodeError>[0]): RedisNodeError =>
  new RedisNodeError(fields, true)

/**
 * The set of independent Redis masters a lock manager uses. A `Context.Tag`
 * holds one value, so the N nodes are provided together, in a fixed order.
 *
 * @since 0.1.0
 * @category tags
 */
export class RedisNodes extends Context.Tag("effect-redlock/RedisNodes")<RedisNodes, ReadonlyArray<RedisNode>>() {}

/**
 * @since 0.1.0
 * @category tags
 */
export class MemoryNodes extends Context.Tag("effect-redlock/MemoryNodes")<MemoryNodes, MemoryNodesControl>() {}

/** See `RedisNode.fromEffects`. */
export const fromEffects = (node: EffectNode): Effect.Effect<RedisNode> =>
  Effect.map(Effect.runtime<never>(), (runtime) => fromEffectsIn(node, runtime))

/** A node written with effects, each operation run as its own fiber of `runtime`, each watch registered by running its effect. */
export const fromEffectsIn = (node: EffectNode, runtime: Runtime.Runtime<never>): RedisNode => {
  const { countsHandOvers, hearsReleases, name, run, watchReleases } = node
  const watchReleasesNow = watchReleases === undefined ? undefined : (
    key: string,
    onRelease: (next: string | null) => void
  ): ReleaseWatch =>
    lateWatch((registered) =>
      Runtime.runFork(runtime)(watchReleases(key, onRelease)).addObserver((exit) =>
        registered(Exit.isSuccess(exit) ? exit.value : undefined)
      )
    )
  return { name, run, promises: promisesOf(node, runtime), watchReleasesNow, hearsReleases, countsHandOvers }
}

// Each operation run as its own fiber, its answer made plain.
const promisesOf = (node: EffectNode, runtime: Runtime.Runtime<never>): NodePromises => {
  const run = <A>(effect: Effect.Effect<A, RedisNodeError>): Promise<A> =>
    new Promise((resolve, reject) => {
      Runtime.runFork(runtime)(effect).addObserver((exit) => {
        if (Exit.isSuccess(exit)) return resolve(exit.value)
        const failure = Cause.failureOption(exit.cause)
        reject(
          failure._tag === "Some" ? failure.value : new RedisNodeError({
            node: node.name,
            reason: "Unknown",
            detail: Cause.pretty(exit.cause),
            cause: Cause.squash(exit.cause)
          }, true)
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
    incrementFences: (keys, value, fenceKeys) =>
      run(Effect.map(node.incrementFences(keys, value, fenceKeys), Option.getOrUndefined)),
    commitFences: (keys, value, fenceKeys, tokens) => run(node.commitFences(keys, value, fenceKeys, tokens))
  }
}
