/**
 * The lock manager: the Redlock algorithm over the {@link RedisNode.RedisNodes}
 * in context, with locks as scoped resources.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Redlock } from "effect-redlock"
 * import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
 *
 * const program = Effect.gen(function*() {
 *   const lock = yield* Redlock.acquire("orders:42", { ttl: "10 seconds" })
 *   // critical section: finish before `lock.remaining` reaches zero
 * }).pipe(Effect.scoped) // released on every node here
 *
 * const MainLive = Redlock.layer().pipe(
 *   Layer.provide(Ioredis.layer([{ port: 6379 }, { port: 6380 }, { port: 6381 }]))
 * )
 * ```
 *
 * @since 1.0.0
 */
import type { NonEmptyReadonlyArray } from "effect/Array"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { dual, identity } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Algorithm from "./internal/algorithm.js"
import * as FanOut from "./internal/fanOut.js"
import * as LockValue from "./internal/lockValue.js"
import * as Validate from "./internal/options.js"
import * as Lock from "./Lock.js"
import { type NodeOutcome, type RedisNode, RedisNodes } from "./RedisNode.js"
import { type InvalidOptions, LockNotAcquired, type RedlockError } from "./RedlockError.js"

/**
 * The retry policy of acquire: a `Schedule` fed with each failed attempt.
 * Any schedule works; retries stop when it stops.
 *
 * @since 1.0.0
 * @category models
 */
export type RetrySchedule = Schedule.Schedule<unknown, LockNotAcquired>

/**
 * The default retry: 3 retries, each after 100-200 ms chosen at random (the
 * reference's retryDelay 200 ms, jittered between half and all of it). Random
 * delays break split votes where contenders would otherwise retry in lock-step.
 *
 * @since 1.0.0
 * @category schedules
 */
export const defaultRetry: RetrySchedule = Schedule.spaced("200 millis").pipe(
  Schedule.jitteredWith({ min: 0.5, max: 1 }),
  Schedule.intersect(Schedule.recurs(3))
)

/**
 * One attempt only.
 *
 * @since 1.0.0
 * @category schedules
 */
export const noRetry: RetrySchedule = Schedule.stop

/**
 * Options of the lock manager.
 *
 * @since 1.0.0
 * @category models
 */
export interface Options {
  /** Prefix of every Redis key. Default `"redlock:"`. */
  readonly keyPrefix?: string | undefined
  /** Clock drift allowance as a fraction of the ttl (plus 2 ms). In [0, 1). Default `0.01`. */
  readonly driftFactor?: number | undefined
  /** Default per-node timeout. Default: 1% of the lock's ttl, within [10 ms, 250 ms]. */
  readonly nodeTimeout?: Duration.DurationInput | undefined
  /** Default retry policy. Default {@link defaultRetry}. */
  readonly retry?: RetrySchedule | undefined
}

/**
 * Options of one acquisition.
 *
 * @since 1.0.0
 * @category models
 */
export interface AcquireOptions {
  /** Time to live of the keys; the lock's validity is a little less. Required. */
  readonly ttl: Duration.DurationInput
  /** Per-node timeout for this lock; must be below the ttl. Default: the manager's. */
  readonly nodeTimeout?: Duration.DurationInput | undefined
  /** Retry policy for this acquisition. Default: the manager's. */
  readonly retry?: RetrySchedule | undefined
}

/**
 * What each node answered to a release. Keys that were not ours any more
 * (expired, or taken by another holder after expiry) are left untouched and
 * show as `Held`; nodes that did not answer keep the key until it expires.
 *
 * @since 1.0.0
 * @category models
 */
export interface ReleaseResult {
  /** Nodes on which our keys were deleted. */
  readonly released: number
  readonly outcomes: ReadonlyArray<NodeOutcome>
}

/**
 * The lock manager service.
 *
 * @since 1.0.0
 * @category models
 */
export interface RedlockService {
  readonly nodes: ReadonlyArray<RedisNode>
  /** How many nodes must agree: floor(N / 2) + 1. */
  readonly quorum: number
  readonly acquire: (
    resources: string | NonEmptyReadonlyArray<string>,
    options: AcquireOptions
  ) => Effect.Effect<Lock.Lock, RedlockError, Scope.Scope>
  /**
   * Release now, on every node, and report what each node answered. The scope
   * finalizer of the lock then has nothing left to do.
   */
  readonly release: (lock: Lock.Lock) => Effect.Effect<ReleaseResult>
}

/**
 * @since 1.0.0
 * @category tags
 */
export class Redlock extends Context.Tag("effect-redlock/Redlock")<Redlock, RedlockService>() {}

interface LockState {
  readonly nodeTimeout: Duration.Duration
  released: boolean
}

/**
 * Build a lock manager over the nodes in context.
 *
 * @since 1.0.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(options: Options = {}) {
  const nodes = yield* RedisNodes
  const keyPrefix = yield* Validate.keyPrefix(options.keyPrefix ?? "redlock:")
  const driftFactor = yield* Validate.driftFactor(options.driftFactor ?? 0.01)
  yield* Validate.nodeCount(nodes.length)
  const defaultNodeTimeout = options.nodeTimeout
  if (defaultNodeTimeout !== undefined) yield* Validate.millis("nodeTimeout", defaultNodeTimeout)
  const defaultSchedule = options.retry ?? defaultRetry
  const quorum = Algorithm.quorum(nodes.length)
  // Per-lock state kept beside the public value, so a lock is released once.
  const states = new WeakMap<Lock.Lock, LockState>()

  // Release returns once a majority of the nodes asked confirmed that our keys
  // are gone (deleted, or not ours any more). The other nodes were sent the
  // release too; it lands in order on each of them, so not waiting for their
  // answer loses nothing, and a down node does not slow every release down.
  const releaseOn = (
    targets: ReadonlyArray<RedisNode>,
    keys: ReadonlyArray<string>,
    value: string,
    timeout: Duration.Duration
  ) =>
    FanOut.untilDecided(
      targets,
      (node) => node.release(keys, value),
      (deleted) => deleted > 0,
      timeout,
      (outcome) => outcome._tag === "Ok" || outcome._tag === "Held"
    )

  const release = (lock: Lock.Lock): Effect.Effect<ReleaseResult> =>
    Effect.suspend(() => {
      const state = states.get(lock)
      if (state === undefined || state.released) return Effect.succeed({ released: 0, outcomes: [] })
      state.released = true
      return Effect.map(
        releaseOn(nodes, lock.keys, lock.value, state.nodeTimeout),
        ({ outcomes, yes }) => ({ released: yes, outcomes })
      )
    }).pipe(Effect.uninterruptible)

  // Runs when the lock's scope closes. A release that does not reach a node is
  // not fatal (the key expires), so it is reported in the log, never as an
  // error that could hide the result of the work done under the lock. It is a
  // warning when a majority did not confirm: the resource may then stay
  // blocked until the keys expire.
  const releaseFinalizer = (lock: Lock.Lock) =>
    Effect.flatMap(release(lock), (result) => {
      const unanswered = result.outcomes.filter((o) => o._tag === "TimedOut" || o._tag === "Failed")
      if (unanswered.length === 0) return Effect.void
      const confirmed = result.outcomes.filter((o) => o._tag === "Ok" || o._tag === "Held").length
      const log = confirmed < quorum ? Effect.logWarning : Effect.logDebug
      return log(
        `effect-redlock: release of ${lock.resources.join(", ")} did not reach ${unanswered.length} node(s); ` +
          `their keys expire within ${Duration.format(lock.ttl)}`
      ).pipe(Effect.annotateLogs({ outcomes: unanswered.map(describeOutcome) }))
    })

  const acquire = (
    resourcesInput: string | NonEmptyReadonlyArray<string>,
    acquireOptions: AcquireOptions
  ): Effect.Effect<Lock.Lock, RedlockError, Scope.Scope> =>
    Effect.gen(function*() {
      const resources = yield* Validate.resources(resourcesInput)
      const { nodeTimeoutMillis, ttlMillis } = yield* Validate.timing(
        acquireOptions.ttl,
        acquireOptions.nodeTimeout ?? defaultNodeTimeout,
        driftFactor
      )
      const schedule = acquireOptions.retry ?? defaultSchedule
      const keys = resources.map((resource) => keyPrefix + resource) as unknown as NonEmptyReadonlyArray<string>
      const nodeTimeout = Duration.millis(nodeTimeoutMillis)
      const value = yield* LockValue.make
      const scope = yield* Effect.scope
      const firstStart = yield* Lock.monotonicMillis
      let attempts = 0

      // One attempt and the registration of its release are one unit: the
      // fan-out alone is interruptible, and whatever happens to it, either the
      // lock's release is in the scope or every node was asked to release.
      const attempt = Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          attempts++
          const start = yield* Lock.monotonicMillis
          const result = yield* Effect.exit(
            restore(FanOut.untilDecided(nodes, (node) => node.acquire(keys, value, ttlMillis), identity, nodeTimeout))
          )
          const end = yield* Lock.monotonicMillis
          if (Exit.isFailure(result)) {
            yield* releaseOn(nodes, keys, value, nodeTimeout)
            return yield* Effect.failCause(result.cause)
          }
          const { outcomes, yes } = result.value
          const validityMillis = Algorithm.validity(ttlMillis, end - start, driftFactor)
          if (yes >= quorum && validityMillis > 0) {
            const lock = Lock.make({
              resources,
              keys,
              value,
              ttl: Duration.millis(ttlMillis),
              validity: Duration.millis(validityMillis),
              validUntilMillis: end + validityMillis,
              attempts,
              outcomes
            })
            states.set(lock, { nodeTimeout, released: false })
            yield* Scope.addFinalizer(scope, releaseFinalizer(lock))
            return lock
          }
          // A node that answered Held did not take the key in this attempt, and
          // earlier attempts were released in order on the same node: skip it.
          const maybeSet = nodes.filter((_, index) => outcomes[index]._tag !== "Held")
          yield* releaseOn(maybeSet, keys, value, nodeTimeout)
          return yield* new LockNotAcquired({
            resources,
            reason: yes >= quorum ? "ValidityExpired" : "NoQuorum",
            attempts,
            elapsedMillis: (yield* Lock.monotonicMillis) - firstStart,
            quorum,
            outcomes
          })
        })
      )
      return yield* Effect.retry(attempt, schedule)
    })

  return Redlock.of({ nodes, quorum, acquire, release })
})

const describeOutcome = (outcome: NodeOutcome): string =>
  outcome._tag === "Failed"
    ? `${outcome.node}: Failed(${outcome.error.reason}: ${outcome.error.detail})`
    : `${outcome.node}: ${outcome._tag} after ${Math.round(outcome.millis)} ms`

/**
 * The lock manager as a layer over the nodes (see `RedisNode.layerMemory` and
 * `effect-redlock/RedisNode/Ioredis`). Fails with `InvalidOptions` when the
 * options are invalid or no node is provided.
 *
 * @since 1.0.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<Redlock, InvalidOptions, RedisNodes> =>
  Layer.effect(Redlock, make(options))

/**
 * Acquire a lock on one resource, or on several at once (all or none, on the
 * same quorum of nodes). The lock is released on every node when the scope
 * closes, whatever the exit: success, failure, defect or interruption.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Redlock } from "effect-redlock"
 *
 * const chargeOnce = Effect.gen(function*() {
 *   const lock = yield* Redlock.acquire(["orders:42", "cards:7"], { ttl: "10 seconds" })
 *   yield* Effect.log(`held for ${lock.validity}`)
 * }).pipe(Effect.scoped)
 * ```
 *
 * @since 1.0.0
 * @category combinators
 */
export const acquire = (
  resources: string | NonEmptyReadonlyArray<string>,
  options: AcquireOptions
): Effect.Effect<Lock.Lock, RedlockError, Redlock | Scope.Scope> =>
  Effect.flatMap(Redlock, (redlock) => redlock.acquire(resources, options))

/**
 * Release a lock now rather than at the end of its scope, and see what each
 * node answered.
 *
 * @since 1.0.0
 * @category combinators
 */
export const release = (lock: Lock.Lock): Effect.Effect<ReleaseResult, never, Redlock> =>
  Effect.flatMap(Redlock, (redlock) => redlock.release(lock))

/**
 * Run an effect while holding a lock; the lock is released when it ends.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Redlock } from "effect-redlock"
 *
 * const rebuild = Effect.log("rebuilding the cache").pipe(
 *   Redlock.withLock("cache:rebuild", { ttl: "30 seconds" })
 * )
 * ```
 *
 * @since 1.0.0
 * @category combinators
 */
export const withLock: {
  (
    resources: string | NonEmptyReadonlyArray<string>,
    options: AcquireOptions
  ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | RedlockError, R | Redlock>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    resources: string | NonEmptyReadonlyArray<string>,
    options: AcquireOptions
  ): Effect.Effect<A, E | RedlockError, R | Redlock>
} = dual(3, <A, E, R>(
  self: Effect.Effect<A, E, R>,
  resources: string | NonEmptyReadonlyArray<string>,
  options: AcquireOptions
): Effect.Effect<A, E | RedlockError, R | Redlock> =>
  Effect.acquireUseRelease(
    Scope.make(),
    (scope) => Effect.zipRight(Scope.extend(acquire(resources, options), scope), self),
    (scope, exit) => Scope.close(scope, exit)
  ))
