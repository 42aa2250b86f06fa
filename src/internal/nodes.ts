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
import * as Schema from "effect/Schema"
import type { MemoryNodesControl, NodeOperation, NodePromises, PromiseNode, RedisNode, ReleaseWatch } from "../RedisNode.js"

/**
 * Why a node could not carry out an operation (documented in RedisNode.ts).
 *
 * - `WrongType`: a key holds a value that is not a string (Redis `WRONGTYPE`).
 * - `ReadOnly`: the node is a replica (Redis `READONLY`).
 * - `OutOfMemory`: the node refuses writes (Redis `OOM`, `maxmemory` reached).
 * - `Auth`: authentication failed or is missing (`NOAUTH`, `WRONGPASS`, `NOPERM`).
 * - `NoScript`: a script was missing and could not be loaded (`NOSCRIPT`).
 * - `Busy`: the node is loading, busy running a script, or its master is down.
 * - `Unavailable`: no connection to the node right now.
 * - `Unknown`: any other error reply or driver failure.
 *
 * @since 0.1.0
 * @category errors
 */
export const RedisNodeErrorReason = Schema.Literal(
  "WrongType",
  "ReadOnly",
  "OutOfMemory",
  "Auth",
  "NoScript",
  "Busy",
  "Unavailable",
  "Unknown"
)

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
    return `node ${this.node}: ${this.reason}: ${this.detail}`
  }
}

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

const operations: ReadonlyArray<NodeOperation> = [
  "acquire",
  "acquireInTurn",
  "release",
  "extend",
  "inspect",
  "incrementFences",
  "commitFences"
]

/**
 * A node as the engine talks to it: its operations as promises and its
 * watches as plain calls. The ioredis and in-memory nodes have both; a node
 * written with effects only (a user's `RedisNode`) gets them here, each
 * operation run as its own fiber of `runtime` (the lock manager's: a test's
 * clock moves such a node's sleeps), each watch registered by running its
 * effect.
 */
export const withPromises = (node: RedisNode, runtime: Runtime.Runtime<never>): RedisNode => {
  if (node.promises !== undefined && (node.watchReleases === undefined || node.watchReleasesNow !== undefined)) return node
  const promises = node.promises ?? Object.fromEntries(operations.map((operation) => [
    operation,
    (...args: Array<unknown>) =>
      new Promise((resolve, reject) => {
        const effect = (node[operation] as (...args: Array<unknown>) => Effect.Effect<unknown, RedisNodeError>)(...args)
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
  ])) as unknown as NodePromises
  const watchEffect = node.watchReleases
  const watchReleasesNow = node.watchReleasesNow ?? (watchEffect === undefined ? undefined : (
    key: string,
    onRelease: (next: string | null) => void
  ): ReleaseWatch => {
    // The watch is registered when its effect ends: a release until then may go unheard, as with any watch not ready yet.
    let watch: ReleaseWatch | undefined
    let stopped = false
    const ready = new Promise<void>((resolve) => {
      Runtime.runFork(runtime)(watchEffect(key, onRelease)).addObserver((exit) => {
        if (Exit.isFailure(exit)) return resolve()
        watch = exit.value
        if (stopped) watch.stop()
        resolve(watch.ready)
      })
    })
    return {
      ready,
      stop: () => {
        stopped = true
        watch?.stop()
      }
    }
  })
  return { ...node, promises, watchReleasesNow }
}

/** See `RedisNode.fromPromises`. */
export const fromPromises = (node: PromiseNode): RedisNode => {
  const { promises, watchReleasesNow: watchNow } = node
  const effect = <A>(promise: () => Promise<A>) =>
    Effect.tryPromise({ try: promise, catch: (error) => error as RedisNodeError })
  return {
    name: node.name,
    run: node.run,
    promises,
    // Where only the plain registration is given, the effect is made from it.
    watchReleases: node.watchReleases ?? (watchNow === undefined
      ? undefined
      : (key, onRelease) => Effect.sync(() => watchNow(key, onRelease))),
    watchReleasesNow: watchNow,
    hearsReleases: node.hearsReleases,
    acquire: (keys, value, ttlMillis) => effect(() => promises.acquire(keys, value, ttlMillis)),
    acquireInTurn: (keys, value, ttlMillis, turn) => effect(() => promises.acquireInTurn(keys, value, ttlMillis, turn)),
    release: (keys, value, announce, keepPlace) => effect(() => promises.release(keys, value, announce, keepPlace)),
    extend: (keys, value, ttlMillis) => effect(() => promises.extend(keys, value, ttlMillis)),
    incrementFences: (keys, value, fenceKeys) => effect(() => promises.incrementFences(keys, value, fenceKeys)),
    commitFences: (keys, value, fenceKeys, tokens) => effect(() => promises.commitFences(keys, value, fenceKeys, tokens)),
    inspect: (key) => effect(() => promises.inspect(key))
  }
}
