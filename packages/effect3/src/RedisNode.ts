/**
 * The node interface: the handful of atomic operations the Redlock algorithm
 * needs from one independent Redis master, and the set of nodes a lock manager
 * talks to.
 *
 * Two implementations exist: `effect-redlock/RedisNode/Ioredis` (real servers)
 * and {@link layerMemory} (in-memory, driven by Effect's `Clock`, with fault
 * knobs for tests).
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Node from "@effect-redlock/core/engine/node.js"
import * as internal from "./internal/memory/memoryNode.js"
import * as internalNodes from "./internal/nodes.js"
import type * as FrontEnd from "@effect-redlock/core/manager/frontEndTypes.js"
import {
  isRedisNodeError,
  MemoryNodes,
  NodeOutcome,
  RedisNodeError,
  RedisNodeErrorReason,
  RedisNodes
} from "./internal/nodes.js"

export {
  /**
   * @since 0.1.0
   * @category guards
   */
  isRedisNodeError,
  /**
   * Fault controls of the in-memory nodes (see {@link layerMemory}).
   *
   * @since 0.1.0
   * @category tags
   */
  MemoryNodes,
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
  NodeOutcome,
  /**
   * An operation on one node failed. It is recorded as that node's outcome; it
   * never aborts a lock operation on its own, because the other nodes may still
   * form a quorum.
   *
   * @since 0.1.0
   * @category errors
   */
  RedisNodeError,
  /**
   * Why a node could not carry out an operation: one of core's
   * `nodeErrorReasons` (`@effect-redlock/core/engine/node.js`, where each is
   * explained: `WrongType`, `ReadOnly`, `OutOfMemory`, `Auth`, `NoScript`,
   * `Busy`, `CrossSlot`, `Unavailable`, `Unknown`).
   *
   * @since 0.1.0
   * @category errors
   */
  RedisNodeErrorReason,
  /**
   * The set of independent Redis masters a lock manager uses. A `Context.Tag`
   * holds one value, so the N nodes are provided together, in a fixed order.
   *
   * @since 0.1.0
   * @category tags
   */
  RedisNodes
}

/**
 * The state of one key on one node, as `inspect` reads it.
 *
 * @since 0.1.0
 * @category models
 */
export interface KeyState {
  /** The value the key holds, if it exists. */
  readonly value: Option.Option<string>
  /** Remaining time to live; `None` when the key is missing or never expires. */
  readonly ttl: Option.Option<Duration.Duration>
}

/**
 * What a client knows of the server process behind a node: which run it is and
 * when it started. A server that restarts without persistence comes back
 * empty, so the keys it held are gone; its run tells the lock manager how long
 * ago that can have happened (see the `restartQuarantine` option of `Redlock`).
 *
 * - `Known`: `id` names the run (Redis `run_id`); it started at
 *   `startedAtMillis` on this process's monotonic clock (Effect's `Clock`), or
 *   later, never earlier. `persistence`, when known, says whether the server
 *   keeps its keys across a restart: one that does votes at once after it.
 *   `evicts`, when set, says why the server may evict keys it holds (a
 *   `maxmemory` with a policy other than `noeviction`): a lock key evicted
 *   while held lets another client take the lock on that server.
 * - `Unknown`: not connected, or reconnected and not identified yet.
 *
 * @since 0.1.0
 * @category models
 */
export type NodeRun = Node.NodeRun

/**
 * Whether a server keeps every key it acknowledged across a restart, as the
 * client read it from the server (or the user declared it, where the server
 * does not let the client read it). Only an append-only file with
 * `appendfsync always` does: the server writes each command to disk before
 * it answers. `everysec` may lose the last second or two of writes, an RDB
 * snapshot everything written since, so those keep the restart quarantine.
 *
 * @since 0.1.0
 * @category models
 */
export type Persistence = Node.Persistence

/**
 * A place in the line of waiters for a resource (see `RedisNode.acquireInTurn`).
 *
 * @since 0.1.0
 * @category models
 */
export type Turn = Node.Turn

/**
 * What a node answered to `acquireInTurn` or `acquireSlot`.
 * - `Granted`: the keys are set to our value (`acquireSlot`: the one key
 *   `slot`).
 * - `Held`: a key exists; `ttlMillis` is the longest time to live left among
 *   them (`undefined` when a key never expires); `acquireSlot`: every slot is
 *   held, and `ttlMillis` is the soonest expiry.
 * - `NotYourTurn`: the keys are free, but a waiter comes before us in line.
 *
 * @since 0.1.0
 * @category models
 */
export type TurnAnswer = Node.TurnAnswer

/**
 * One registered watch of a key's releases on one node (see
 * `RedisNode.watchReleases`). A plain handle rather than a scoped resource:
 * a waiter watches every node on each wait, and the lock manager stops the
 * watches itself whichever way the wait ends.
 *
 * @since 0.1.0
 * @category models
 */
export type ReleaseWatch = Node.ReleaseWatch

/**
 * One independent Redis master, as the lock manager talks to it: its
 * operations as promises (`promises`, each rejecting only with a
 * `RedisNodeError`), its release announcements as plain calls. It is the
 * engine's node (`@effect-redlock/core/engine/node.js`), the same in the
 * Effect 3 line, the Effect 4 line and the promise API: one operation goes to
 * all nodes from a single asynchronous step, with no fiber per node
 * (docs/how-it-works.md). Every operation is atomic on the node and takes
 * fully prefixed keys; each is documented at {@link EffectNode}, whose
 * effects are these promises' counterparts.
 *
 * - `name`: for messages and outcomes, such as `127.0.0.1:6379`; never a password.
 * - `run()`: the server run the node talks to now (the restart quarantine's).
 * - `promises`: the operations (see {@link NodePromises}).
 * - `watchReleasesNow(key, onRelease)` (optional): `EffectNode.watchReleases` as a plain call.
 * - `hearsReleases()`, `countsHandOvers` (optional): as on {@link EffectNode}.
 *
 * Operations do not time out on their own: the lock manager applies the
 * per-node timeout. An operation whose caller stopped waiting may still take
 * effect; operations of one node are applied in the order they were issued.
 * A node written with effects becomes one with {@link fromEffects}.
 *
 * @since 0.1.0
 * @category models
 */
export type RedisNode = Node.Node

/**
 * One independent Redis master written with effects, for {@link fromEffects}:
 * the operations the Redlock algorithm needs, each atomic on the node, taking
 * fully prefixed keys and failing only with a `RedisNodeError`.
 *
 * Operations do not time out on their own: the lock manager applies the
 * per-node timeout. An operation that was interrupted may still take effect on
 * the node; implementations apply operations of one node in the order they
 * were issued, so a later release always lands after an earlier acquire.
 *
 * @since 0.1.0
 * @category models
 */
export interface EffectNode {
  /** A name for messages and outcomes, such as `127.0.0.1:6379`. Never holds a password. */
  readonly name: string
  /**
   * The server run this node talks to right now. A plain read of the node's
   * state, cheap enough to call on every operation.
   */
  readonly run: () => NodeRun
  /**
   * Call `onRelease` whenever an announced release (see `release`) deletes
   * `key` on this node, or the first waiter in line for a free `key` leaves
   * the line, until the watch is stopped. It is given the lock value of the
   * waiter now first in line, or `""` when nobody waits: that waiter retries
   * at once instead of at its next scheduled attempt, and the others sleep
   * on. `null` says that releases may have gone unheard (the node listens
   * again after a reconnection): every waiter tries again at once. The
   * effect registers the watch and returns at once (see
   * {@link ReleaseWatch}). Optional: without it, waiters only poll, and take
   * no place in line.
   */
  readonly watchReleases?:
    | ((key: string, onRelease: (next: string | null) => void) => Effect.Effect<ReleaseWatch>)
    | undefined
  /**
   * Whether this node's release announcements reach this process now (or
   * will, once a key is watched): `false` while the node cannot announce,
   * as when the server refused SUBSCRIBE (an ACL without pub/sub, a proxy)
   * or the connection that listens is down. A waiter that hears fewer than a
   * quorum of nodes takes no place in line and polls on its retry schedule,
   * so that no key is handed to a waiter that cannot hear of it. Optional:
   * `true` wherever `watchReleases` is given.
   */
  readonly hearsReleases?: (() => boolean) | undefined
  /**
   * Whether a slot this node hands a waiter by a release (a permit, a read
   * or a write) counts without the waiter's own call. Optional: `true`. The
   * ioredis and node-redis nodes say `false` with `waitForReplicas`: the
   * release waited for no replica, so the waiter's own `acquireSlot`, which
   * finds the slot already its own and waits for the replicas, counts
   * instead. A node of your own that waits for replicas says `false` too.
   */
  readonly countsHandOvers?: boolean | undefined
  /**
   * Set every key to `value` with a time to live of `ttlMillis`, only if none
   * of them holds another value. A key that already holds `value` is ours (a
   * late answer of an earlier attempt of the same acquisition) and is set
   * again. `true` when set, `false` when any key is held by another value.
   * A key of another type (a list, a hash ...) fails with `WrongType` naming
   * the type, and nothing is written.
   */
  readonly acquire: (
    keys: ReadonlyArray<string>,
    value: string,
    ttlMillis: number
  ) => Effect.Effect<boolean, RedisNodeError>
  /**
   * Set every key to `value` with a time to live of `ttlMillis`, only if none
   * of them holds another value (as `acquire`) and no waiter comes before
   * `turn` in the line of any key that does not hold `value` already (a key
   * handed to us by a release is ours, whoever joined the line ahead of us
   * since); otherwise join each key's line when
   * `turn.leaseMillis` > 0. Waiters whose lease ended are dropped from the
   * line first. A newcomer's place is its ticket, bounded by the node's own
   * time (at most 1 s before it, never after it), and is kept as it is for
   * as long as the waiter stays in line. Granting keeps the place; `release`
   * takes it out.
   */
  readonly acquireInTurn: (
    keys: ReadonlyArray<string>,
    value: string,
    ttlMillis: number,
    turn: Turn
  ) => Effect.Effect<TurnAnswer, RedisNodeError>
  /**
   * One slot of a resource (a semaphore's permit, a read-write lock's
   * reader): `keys` are every slot key of the resource, in the order to try
   * them, and they share one line of waiters. Set the slot that holds
   * `value` already, else the first free one when it is `turn`'s turn:
   * fewer waiters stand before it in the line than slots are free, and none
   * of them is a writer (an `acquireInTurn` over the slots, who needs them
   * all). `Granted` names the slot (its index in `keys`) and leaves the
   * line; otherwise join the line as `acquireInTurn` does, and answer `Held`
   * (every slot held; `ttlMillis` the soonest expiry) or `NotYourTurn`.
   */
  readonly acquireSlot: (
    keys: ReadonlyArray<string>,
    value: string,
    ttlMillis: number,
    turn: Turn
  ) => Effect.Effect<TurnAnswer, RedisNodeError>
  /**
   * Delete each key that still holds `value`, and take `value` out of each
   * key's line of waiters. Returns how many keys were deleted. With
   * `announce`, each deletion is announced to the key's watchers (see
   * `watchReleases`): a held lock's release is; a failed attempt's clean-up is
   * not, so that waiters are not woken for a resource nobody held. A waiter
   * that leaves the line while first in it, with the key free, is announced
   * too, so that the next one goes. With `keepPlace`, only the keys are
   * deleted: a refused attempt undoing what it may have set stays in line,
   * and nothing is announced (an implementation that ignores it leaves the
   * line instead, which costs the waiter its place, never safety).
   *
   * Without `keepPlace`, a key left free (deleted, or found free by the first
   * in line leaving) while others wait is handed to the waiter now first:
   * set to its value for the rest of its lease, so that a newcomer's plain
   * `acquire` finds it held and that waiter's `acquireInTurn` finds it ours.
   * An implementation that frees the key instead lets newcomers take it
   * ahead of the line: fairness, never safety.
   */
  readonly release: (
    keys: ReadonlyArray<string>,
    value: string,
    announce: boolean,
    keepPlace?: boolean
  ) => Effect.Effect<number, RedisNodeError>
  /**
   * Set a new time to live on every key, only if all of them still hold
   * `value`. `true` when extended, `false` when any key is not ours.
   */
  readonly extend: (
    keys: ReadonlyArray<string>,
    value: string,
    ttlMillis: number
  ) => Effect.Effect<boolean, RedisNodeError>
  /** Read a key's value and remaining time to live. */
  readonly inspect: (key: string) => Effect.Effect<KeyState, RedisNodeError>
  /**
   * If every key still holds `value`, advance each fence counter (one per
   * key, kept without expiry) to the larger of its count + 1 and the node's
   * time in microseconds, and return the new counts; `None` when any key is
   * not ours. (The time lets a counter lost in an empty restart start again
   * above every token issued before it; docs/safety.md, "Fencing tokens".)
   */
  readonly incrementFences: (
    keys: ReadonlyArray<string>,
    value: string,
    fenceKeys: ReadonlyArray<string>
  ) => Effect.Effect<Option.Option<ReadonlyArray<bigint>>, RedisNodeError>
  /**
   * If every key still holds `value`, raise each fence counter to at least its
   * token. `false` when any key is not ours.
   */
  readonly commitFences: (
    keys: ReadonlyArray<string>,
    value: string,
    fenceKeys: ReadonlyArray<string>,
    tokens: ReadonlyArray<bigint>
  ) => Effect.Effect<boolean, RedisNodeError>
}

/**
 * The names of the operations of a node.
 *
 * @since 0.1.0
 * @category models
 */
export type NodeOperation = Node.NodeOperation

/**
 * A node's operations as promises (see `RedisNode.promises`): the same
 * operations with plain values where the effects have `Option`s (`inspect`
 * gives `{ value, ttlMillis }`, each `undefined` when absent;
 * `incrementFences` gives `undefined` when a key is not ours), so that
 * every shell of the engine shares one node interface.
 *
 * @since 0.1.0
 * @category models
 */
export type NodePromises = Node.NodePromises

/**
 * A node from one written with effects: each operation runs as its own fiber
 * of the runtime of the fiber that makes it (so a test's `TestClock` moves
 * the node's sleeps), and a watch of releases is registered by running its
 * effect. A node written with promises needs no adapter: it is a
 * {@link RedisNode} as it is.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromEffects: (node: EffectNode) => Effect.Effect<RedisNode> = internalNodes.fromEffects

/**
 * One key as a node's `inspect` promise reads it: its value and remaining
 * time to live in milliseconds, each `undefined` when absent.
 *
 * @since 0.1.0
 * @category models
 */
export type KeyReading = Node.KeyReading

/**
 * Fault controls of the in-memory nodes, by node index (each documented in
 * core's `manager/frontEndTypes.ts`); a failure is set until set to `None`.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryNodesControl extends
  FrontEnd.MemoryNodesControlOf<{
    readonly Done: Effect.Effect<void>
    readonly Keys: Effect.Effect<ReadonlyArray<string>>
    readonly Count: Effect.Effect<number>
    readonly Duration: Duration.DurationInput
    readonly Failure: Option.Option<RedisNodeErrorReason>
  }>
{}

/**
 * `n` in-memory nodes with the same semantics as Redis: latency and expiry run
 * on the `Clock` of the fiber that builds the layer (so `TestClock` drives
 * them), operations of one node are applied in order, and an operation whose
 * caller gave up (timeout, interruption) is still applied, as on a real
 * server. They offer the same promises as the ioredis nodes, so the lock
 * manager runs the same engine over both. {@link MemoryNodes} controls faults.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Redlock, RedisNode } from "effect-redlock"
 *
 * const TestLive = Redlock.layer().pipe(Layer.provideMerge(RedisNode.layerMemory(5)))
 *
 * const program = Effect.gen(function*() {
 *   const control = yield* RedisNode.MemoryNodes
 *   yield* control.setDown(0, true)
 *   yield* Redlock.acquire("job", { ttl: "1 second" })
 * }).pipe(Effect.scoped, Effect.provide(TestLive))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (n: number): Layer.Layer<RedisNodes | MemoryNodes> => internal.layer(n)
