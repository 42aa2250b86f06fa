/**
 * This line's node errors and outcomes, and its nodes written with effects
 * (`RedisNode.fromEffects`) as the engine's nodes.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Messages from "@effect-redlock/core/engine/messages.js"
import * as Node from "@effect-redlock/core/engine/node.js"
import { recognisePlain } from "@effect-redlock/core/manager/errors.js"
import { lateWatch } from "@effect-redlock/core/nodes/lateWatch.js"
import type { EffectNode, NodePromises, RedisNode, ReleaseWatch } from "../RedisNode.js"

/**
 * Why a node could not carry out an operation: one of core's
 * `nodeErrorReasons` (`@effect-redlock/core/engine/node.js`, where each is
 * explained: `WrongType`, `ReadOnly`, `OutOfMemory`, `Auth`, `NoScript`,
 * `Busy`, `CrossSlot`, `Unavailable`, `Unknown`).
 */
export const RedisNodeErrorReason = Schema.Literals(Node.nodeErrorReasons)

export type RedisNodeErrorReason = typeof RedisNodeErrorReason.Type

/**
 * An operation on one node failed. It is recorded as that node's outcome; it
 * never fails a lock operation on its own, because the other nodes may still
 * form a quorum.
 */
export class RedisNodeError extends Schema.TaggedError<RedisNodeError>("effect-redlock/RedisNodeError")(
  "RedisNodeError",
  {
    node: Schema.String,
    reason: RedisNodeErrorReason,
    detail: Schema.String,
    cause: Schema.optional(Schema.Defect())
  }
) {
  /**
   * @since 0.2.0
   */
  override get message(): string {
    return Messages.nodeError(this)
  }
}

// The promise API's nodes fail with core's plain RedisNodeError.
recognisePlain(RedisNodeError, "RedisNodeError")

export const isRedisNodeError = (u: unknown): u is RedisNodeError => u instanceof RedisNodeError

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
 */
export const NodeOutcome = Schema.Union([
  Schema.TaggedStruct("Ok", { node: Schema.String, millis: Schema.Number }),
  Schema.TaggedStruct("Held", { node: Schema.String, millis: Schema.Number }),
  Schema.TaggedStruct("TimedOut", { node: Schema.String, millis: Schema.Number }),
  Schema.TaggedStruct("Failed", { node: Schema.String, millis: Schema.Number, error: RedisNodeError }),
  Schema.TaggedStruct("NotAwaited", { node: Schema.String, millis: Schema.Number }),
  Schema.TaggedStruct("Abstained", { node: Schema.String, millis: Schema.Number, detail: Schema.String })
])

export type NodeOutcome = typeof NodeOutcome.Type

/** `MakeNodeError` for the drivers and the memory nodes: this line's `RedisNodeError`. */
export const makeNodeError = (fields: Parameters<Node.MakeNodeError>[0]): RedisNodeError => new RedisNodeError(fields)

/** A failure that is not a RedisNodeError already (a driver that broke its contract) as one (the engine's `nodeError` rule). */
export const nodeError = (node: Node.Node, error: unknown): RedisNodeError =>
  error instanceof RedisNodeError
    ? error
    : new RedisNodeError({ node: node.name, reason: "Unknown", detail: String(error), cause: error })

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
        fork(watchReleases(key, onRelease)).addObserver((exit) =>
          registered(Exit.isSuccess(exit) ? exit.value : undefined)
        )
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
    incrementFences: (keys, value, fenceKeys) =>
      run(Effect.map(node.incrementFences(keys, value, fenceKeys), Option.getOrUndefined)),
    commitFences: (keys, value, fenceKeys, tokens) => run(node.commitFences(keys, value, fenceKeys, tokens))
  }
}
