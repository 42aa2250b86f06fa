/**
 * The node interface: the handful of atomic operations the Redlock algorithm
 * needs from one independent Redis master, and the set of nodes a lock
 * manager talks to.
 *
 * A node's operations are promises (the engine that runs the algorithm is
 * plain code, shared with the Effect 3 line): two implementations exist,
 * `effect-redlock/RedisNode/Ioredis` (real servers) and {@link layerMemory}
 * (in memory, on Effect's `Clock`, with fault knobs for tests). A node over
 * another driver implements {@link RedisNode}: each promise rejects only with
 * a {@link RedisNodeError}.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as EffectNodes from "./internal/nodes.js"
import type * as Node from "@effect-redlock/core/engine/node.js"
import { makeNodeError } from "./internal/nodes.js"
import * as TimeOf from "./internal/monotonic.js"
import { MemoryFleet } from "@effect-redlock/core/nodes/memory.js"
import { isRedisNodeError, NodeOutcome, RedisNodeError, RedisNodeErrorReason } from "./RedlockError.js"
import type * as FrontEnd from "@effect-redlock/core/manager/frontEndTypes.js"

export {
  /**
   * @since 0.2.0
   * @category errors
   */
  isRedisNodeError,
  /**
   * What one node answered to one operation of a lock (see `RedlockError.NodeOutcome`).
   *
   * @since 0.2.0
   * @category models
   */
  NodeOutcome,
  /**
   * An operation on one node failed (see `RedlockError.RedisNodeError`).
   *
   * @since 0.2.0
   * @category errors
   */
  RedisNodeError,
  /**
   * @since 0.2.0
   * @category errors
   */
  RedisNodeErrorReason
}

/**
 * One independent Redis master. Every operation is atomic on the node, takes
 * fully prefixed keys, and rejects only with a `RedisNodeError`. Operations
 * do not time out on their own (the lock manager applies the per-node
 * timeout); an operation whose caller stopped waiting may still take effect,
 * and operations of one node are applied in the order they were issued.
 *
 * - `acquire(keys, value, ttlMillis)`: set every key to `value` with that
 *   time to live if none holds another value; `false` when any does.
 * - `acquireInTurn(keys, value, ttlMillis, turn)`: the same, only if no
 *   waiter comes before `turn` in the line of a key; otherwise join the line
 *   for `turn.leaseMillis` (`Held` with the longest ttl left, or `NotYourTurn`).
 * - `acquireSlot(keys, value, ttlMillis, turn)`: one of a resource's slots
 *   (`keys`, every slot, in the order to try them, sharing one line): the one
 *   holding `value` already, else the first free one when fewer waiters stand
 *   before `turn` than slots are free and none of them is a writer;
 *   `Granted` names the slot's index and leaves the line; otherwise join it
 *   (`Held` with the soonest ttl when every slot is held, or `NotYourTurn`).
 * - `release(keys, value, announce, keepPlace?)`: delete the keys that still
 *   hold `value` and leave their lines; how many were deleted. A free key
 *   others wait for is handed to the first of them.
 * - `extend(keys, value, ttlMillis)`: a new time to live if every key still
 *   holds `value`.
 * - `inspect(key)`: the key's value and time to live left.
 * - `incrementFences` / `commitFences`: fencing counters, advanced only while
 *   every key holds `value`.
 * - `watchReleasesNow(key, onRelease)` (optional): call `onRelease` with the
 *   next waiter's value whenever a release of `key` is announced (`null`:
 *   releases may have gone unheard). Without it, waiters only poll.
 * - `hearsReleases()` (optional): whether announcements reach this process now.
 * - `countsHandOvers` (optional, `true`): whether a slot a release handed a
 *   waiter counts without the waiter's own call; `false` where the node
 *   waits for replicas (the waiter's own `acquireSlot` waits for them).
 * - `run()`: the server run the node talks to, for the restart quarantine.
 *
 * @since 0.2.0
 * @category models
 */
export type RedisNode = Node.Node

/**
 * A node's operations as promises (see {@link RedisNode}).
 *
 * @since 0.2.0
 * @category models
 */
export type NodePromises = Node.NodePromises

/**
 * The names of the operations of a node.
 *
 * @since 0.2.0
 * @category models
 */
export type NodeOperation = Node.NodeOperation

/**
 * Whether a server keeps every key it acknowledged across a restart (only an
 * append-only file with `appendfsync always` does), as read from the server
 * or declared by the user (`durable`).
 *
 * @since 0.2.0
 * @category models
 */
export type Persistence = Node.Persistence

/**
 * One independent Redis master written with effects, for {@link fromEffects}:
 * the operations of {@link RedisNode}'s `promises`, each an effect that fails
 * only with a `RedisNodeError` (`inspect` reads a {@link KeyState};
 * `incrementFences` gives `None` when a key is not ours), and
 * `watchReleases`, an effect that registers a watch of a key's releases.
 *
 * @since 0.2.0
 * @category models
 */
export interface EffectNode {
  readonly name: string
  readonly run: () => NodeRun
  readonly watchReleases?:
    | ((key: string, onRelease: (next: string | null) => void) => Effect.Effect<ReleaseWatch>)
    | undefined
  readonly hearsReleases?: (() => boolean) | undefined
  readonly countsHandOvers?: boolean | undefined
  readonly acquire: (
    keys: ReadonlyArray<string>,
    value: string,
    ttlMillis: number
  ) => Effect.Effect<boolean, RedisNodeError>
  readonly acquireInTurn: (
    keys: ReadonlyArray<string>,
    value: string,
    ttlMillis: number,
    turn: Turn
  ) => Effect.Effect<TurnAnswer, RedisNodeError>
  readonly acquireSlot: (
    keys: ReadonlyArray<string>,
    value: string,
    ttlMillis: number,
    turn: Turn
  ) => Effect.Effect<TurnAnswer, RedisNodeError>
  readonly release: (
    keys: ReadonlyArray<string>,
    value: string,
    announce: boolean,
    keepPlace?: boolean
  ) => Effect.Effect<number, RedisNodeError>
  readonly extend: (
    keys: ReadonlyArray<string>,
    value: string,
    ttlMillis: number
  ) => Effect.Effect<boolean, RedisNodeError>
  readonly inspect: (key: string) => Effect.Effect<KeyState, RedisNodeError>
  readonly incrementFences: (
    keys: ReadonlyArray<string>,
    value: string,
    fenceKeys: ReadonlyArray<string>
  ) => Effect.Effect<Option.Option<ReadonlyArray<bigint>>, RedisNodeError>
  readonly commitFences: (
    keys: ReadonlyArray<string>,
    value: string,
    fenceKeys: ReadonlyArray<string>,
    tokens: ReadonlyArray<bigint>
  ) => Effect.Effect<boolean, RedisNodeError>
}

/**
 * A node from one written with effects: each operation runs as its own fiber
 * with the services of the fiber that makes it (so a test's `TestClock`
 * moves the node's sleeps), and a watch of releases is registered by running
 * its effect. A node written with promises needs no adapter: it is a
 * {@link RedisNode} as it is.
 *
 * @since 0.2.0
 * @category constructors
 */
export const fromEffects: (node: EffectNode) => Effect.Effect<RedisNode> = EffectNodes.fromEffects

/**
 * What one node answered to `acquireInTurn` or `acquireSlot` (whose grant names the slot).
 *
 * @since 0.2.0
 * @category models
 */
export type TurnAnswer = Node.TurnAnswer

/**
 * A place in the line of waiters for a resource.
 *
 * @since 0.2.0
 * @category models
 */
export type Turn = Node.Turn

/**
 * The server run a node talks to: `Known` (its id, and when it started on
 * this process's monotonic clock, or later) or `Unknown`. A server that
 * restarted without persistence lost its keys; its votes wait out the
 * restart quarantine. `evicts`, when set, says why the server may evict keys
 * it holds (a `maxmemory` with a policy other than `noeviction`).
 *
 * @since 0.2.0
 * @category models
 */
export type NodeRun = Node.NodeRun

/**
 * One watch of a key's releases on one node.
 *
 * @since 0.2.0
 * @category models
 */
export type ReleaseWatch = Node.ReleaseWatch

/**
 * One key as `inspect` reads it.
 *
 * @since 0.2.0
 * @category models
 */
export type KeyReading = Node.KeyReading

/**
 * The state of one key on one node, as `Redlock.inspect` reads it.
 *
 * @since 0.2.0
 * @category models
 */
export interface KeyState {
  /** The value the key holds, if it exists. */
  readonly value: Option.Option<string>
  /** Remaining time to live; `None` when the key is missing or never expires. */
  readonly ttl: Option.Option<Duration.Duration>
}

/**
 * The set of independent Redis masters a lock manager uses, in a fixed order.
 *
 * @since 0.2.0
 * @category services
 */
export class RedisNodes extends Context.Service<RedisNodes, ReadonlyArray<RedisNode>>()("effect-redlock/RedisNodes") {}

/**
 * Fault controls of the in-memory nodes, by node index (each documented in
 * core's `manager/frontEndTypes.ts`); a failure is set until set to `undefined`.
 *
 * @since 0.2.0
 * @category models
 */
export interface MemoryNodesControl extends
  FrontEnd.MemoryNodesControlOf<{
    readonly Done: Effect.Effect<void>
    readonly Keys: Effect.Effect<ReadonlyArray<string>>
    readonly Count: Effect.Effect<number>
    readonly Duration: Duration.Input
    readonly Failure: RedisNodeErrorReason | undefined
  }>
{}

/**
 * Fault controls of the in-memory nodes (see {@link layerMemory}).
 *
 * @since 0.2.0
 * @category services
 */
export class MemoryNodes extends Context.Service<MemoryNodes, MemoryNodesControl>()("effect-redlock/MemoryNodes") {}

/**
 * `n` in-memory nodes with the same semantics as Redis: latency and expiry run
 * on the `Clock` of the fiber that builds the layer (so `TestClock` drives
 * them), operations of one node are applied in order, and an operation whose
 * caller gave up (timeout, interruption) is still applied, as on a real
 * server. {@link MemoryNodes} controls faults.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerMemory = (n: number): Layer.Layer<RedisNodes | MemoryNodes> =>
  Layer.effectContext(Effect.gen(function*() {
    if (!Number.isInteger(n) || n < 1) {
      return yield* Effect.die(new RangeError(`layerMemory: n must be a positive integer, got ${n}`))
    }
    // The clock of the fiber that builds the layer: a test's TestClock moves latency and expiry.
    const time = yield* TimeOf.currentTime
    const fleet = new MemoryFleet(n, time, makeNodeError)
    const control: MemoryNodesControl = {
      size: n,
      setDown: (index, down) => Effect.sync(() => fleet.setDown(index, down)),
      setLatency: (index, latency) => Effect.sync(() => fleet.setLatency(index, Duration.toMillis(latency))),
      setFailure: (index, reason) => Effect.sync(() => fleet.setFailure(index, reason)),
      setAnnouncementDelay: (index, delay) =>
        Effect.sync(() => fleet.setAnnouncementDelay(index, Duration.toMillis(delay))),
      heal: (index) => Effect.sync(() => fleet.heal(index)),
      restart: (index) => Effect.sync(() => fleet.restart(index, time.now())),
      setDurable: (index, durable) => Effect.sync(() => fleet.setDurable(index, durable)),
      jumpClock: (index, millis) => Effect.sync(() => fleet.jumpClock(index, millis)),
      putForeign: (index, key) => Effect.sync(() => fleet.putForeign(index, key)),
      putString: (index, key, value, ttlMillis) => Effect.sync(() => fleet.putString(index, key, value, ttlMillis)),
      keys: (index) => Effect.sync(() => fleet.keys(index)),
      operations: (index) => Effect.sync(() => fleet.operations(index)),
      releaseWatchers: (index) => Effect.sync(() => fleet.releaseWatchers(index))
    }
    return Context.make(RedisNodes, fleet.nodes.map((node) => node.toNode())).pipe(Context.add(MemoryNodes, control))
  }))
