/** Helpers shared by the test files. */
import { assert } from "@effect/vitest"
import { Cause, Context, Duration, Effect, Exit, Fiber, Layer, Option, Schedule } from "effect"
import { inspect } from "node:util"
import * as Checker from "../../../faults/checker.js"
import type * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Lock from "../src/Lock.js"
import * as Redlock from "../src/Redlock.js"
import * as RedisNode from "../src/RedisNode.js"
import * as Ioredis from "../src/RedisNode/Ioredis.js"

/** A lock manager over `n` fresh in-memory nodes, with the fault controls. */
export const memory = (n: number, options?: Redlock.Options) =>
  Redlock.layer(options).pipe(Layer.provideMerge(RedisNode.layerMemory(n)))

/**
 * A lock manager with its own connections to the given servers. The test
 * fleet's servers were just started, so under the restart quarantine they
 * would abstain for `maxTtl`: it is off here unless a test turns it on (the
 * quarantine tests do).
 */
export const redis = (nodes: ReadonlyArray<Ioredis.NodeOptions>, options?: Redlock.Options) =>
  Redlock.layer({ restartQuarantine: false, ...options }).pipe(Layer.provideMerge(Ioredis.layer(nodes)))

/** A lock manager with its own connections to the given servers (see `redis`), built in the current scope. */
export const redisManager = (nodes: ReadonlyArray<Ioredis.NodeOptions>, options?: Redlock.Options) =>
  Effect.map(Layer.build(redis(nodes, options)), (context) => Context.get(context, Redlock.Redlock))

export { aclUser } from "@effect-redlock/fleet/effect3.js"

/** A critical section as seen by the test: who held what, when (monotonic ms). */
export interface Section {
  readonly holder: string
  readonly value: string
  readonly start: number
  readonly end: number
  readonly validUntil: number
}

/** Pairs of sections that overlap in time (the fault suite's own check). */
export const overlaps = (sections: ReadonlyArray<Section>) => Checker.overlappingPairs(sections)

/** Run `body` as a critical section under a held lock, recording it on the lock's own timeline. */
export const recordSection = (holder: string, lock: Lock.Lock, body: Effect.Effect<void>, into: Array<Section>) =>
  Effect.gen(function*() {
    const start = yield* Lock.monotonicMillis
    yield* body
    const end = yield* Lock.monotonicMillis
    into.push({ holder, value: lock.value, start, end, validUntil: lock.validUntilMillis })
  })

/** The typed failure of an exit; throws (failing the test) on success or on a defect. */
export const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) throw new Error(`expected a failure, got ${inspect(exit.value, { depth: 3 })}`)
  const failure = Cause.failureOption(exit.cause)
  if (Option.isNone(failure)) throw new Error(`expected a typed failure, got ${Cause.pretty(exit.cause)}`)
  return failure.value
}

/**
 * Wait until every server is empty: a release returns at a quorum, the other
 * nodes' deletes land just after, and a paused server catches up after SIGCONT.
 */
export const expectEmpty = (fleet: RedisFleet.Fleet) =>
  fleet.dbsizes.pipe(
    Effect.filterOrFail((sizes) => sizes.every((size) => size === 0), (sizes) => `DBSIZE ${sizes.join(",")}`),
    Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("2 seconds")))
  )

/** A retry that never comes within a test: only a wake can explain an acquisition. */
export const slowRetry = Schedule.spaced("10 seconds").pipe(Schedule.intersect(Schedule.recurs(5)))

/** Holds "key" from `holder`, lets `waiter` wait past its first renewal, releases: the milliseconds until it acquired. */
export const wokenAfterRelease = (
  holder: Redlock.Redlock["Type"],
  waiter: Redlock.Redlock["Type"],
  key: string,
  beforeRelease: Effect.Effect<void, unknown> = Effect.void,
  // The holder's release by default; another process's (a script on the test's own connections) where only the channel may tell.
  release?: (held: Lock.Lock) => Effect.Effect<void, unknown>
) =>
  Effect.gen(function*() {
    const held = yield* holder.acquire(key, { ttl: "10 seconds" })
    const waiting = yield* Effect.fork(Effect.scoped(Effect.zipRight(
      // A node timeout a loaded machine meets: with the 10 s ttl's default (100 ms) one late answer
      // refuses the woken attempt, and the next is 10 s away.
      waiter.acquire(key, { ttl: "10 seconds", retry: slowRetry, nodeTimeout: "1 second" }),
      Effect.sync(() => performance.now())
    )))
    // Past the renewal of the place taken by the first attempt (~350 ms): the next attempt on its own is 10 s away.
    yield* Effect.sleep("1 second")
    yield* beforeRelease
    const released = performance.now()
    if (release !== undefined) yield* release(held)
    else assert.strictEqual((yield* holder.release(held)).status, "Released")
    const acquired = yield* Fiber.join(waiting).pipe(Effect.timeout("5 seconds"))
    return acquired - released
  })

/** A node with its operations as effects too (see `effectsOf`). */
export type TestNode = RedisNode.RedisNode & RedisNode.EffectNode

/**
 * A node with its operations as effects too, for tests that call a node
 * directly (the inverse of `RedisNode.fromEffects`): each promise as an
 * effect failing with its `RedisNodeError`, `inspect` with `Option`s.
 */
export const effectsOf = (node: RedisNode.RedisNode): TestNode => {
  const { promises, watchReleasesNow } = node
  const effect = <A>(promise: () => Promise<A>) =>
    Effect.tryPromise({ try: promise, catch: (error) => error as RedisNode.RedisNodeError })
  return {
    name: node.name,
    run: node.run,
    promises,
    watchReleasesNow,
    watchReleases: watchReleasesNow === undefined ? undefined : (key, onRelease) => Effect.sync(() => watchReleasesNow(key, onRelease)),
    hearsReleases: node.hearsReleases,
    countsHandOvers: node.countsHandOvers,
    acquire: (keys, value, ttlMillis) => effect(() => promises.acquire(keys, value, ttlMillis)),
    acquireInTurn: (keys, value, ttlMillis, turn) => effect(() => promises.acquireInTurn(keys, value, ttlMillis, turn)),
    acquireSlot: (keys, value, ttlMillis, turn) => effect(() => promises.acquireSlot(keys, value, ttlMillis, turn)),
    release: (keys, value, announce, keepPlace) => effect(() => promises.release(keys, value, announce, keepPlace)),
    extend: (keys, value, ttlMillis) => effect(() => promises.extend(keys, value, ttlMillis)),
    incrementFences: (keys, value, fenceKeys) => effect(() => promises.incrementFences(keys, value, fenceKeys).then(Option.fromNullable)),
    commitFences: (keys, value, fenceKeys, tokens) => effect(() => promises.commitFences(keys, value, fenceKeys, tokens)),
    inspect: (key) =>
      effect(async () => {
        const { ttlMillis, value } = await promises.inspect(key)
        return {
          value: Option.fromNullable(value),
          ttl: ttlMillis === undefined ? Option.none() : Option.some(Duration.millis(ttlMillis))
        }
      })
  }
}
