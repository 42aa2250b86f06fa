/**
 * Helpers of the shared Effect suites, written once over the names both
 * lines' `test/line.ts` export.
 */
import {
  Context,
  Duration,
  Effect,
  errorOf,
  Exit,
  type Fleet,
  Ioredis,
  Layer,
  Lock,
  Option,
  RedisNode,
  Redlock,
  RedlockError,
  Schedule,
  TestClock
} from "@effect-redlock/line"
import { inspect } from "node:util"
import * as Checker from "../../../faults/checker.js"

/** A lock manager over `n` fresh in-memory nodes, with the fault controls. */
export const memory = (n: number, options?: Redlock.Options) =>
  Redlock.layer(options).pipe(Layer.provideMerge(RedisNode.layerMemory(n)))

/**
 * A lock manager with its own connections to the given servers. The test
 * fleet's servers were just started, so under the restart quarantine they
 * would abstain for `maxTtl`: it is off here unless a test turns it on.
 */
export const redis = (nodes: ReadonlyArray<Ioredis.NodeOptions>, options?: Redlock.Options) =>
  Redlock.layer({ restartQuarantine: false, ...options }).pipe(Layer.provideMerge(Ioredis.layer(nodes)))

/** A lock manager with its own connections to the given servers (see `redis`), built in the current scope. */
export const redisManager = (nodes: ReadonlyArray<Ioredis.NodeOptions>, options?: Redlock.Options) =>
  Effect.map(Layer.build(redis(nodes, options)), (context) => Context.get(context, Redlock.Redlock))

/**
 * Wait until every server is empty: a release returns at a quorum, the other
 * nodes' deletes land just after, and a paused server catches up after SIGCONT.
 */
export const expectEmpty = (fleet: Fleet) =>
  Effect.retry(
    Effect.flatMap(fleet.dbsizes, (sizes) =>
      sizes.every((size) => size === 0) ? Effect.void : Effect.fail(`DBSIZE ${sizes.join(",")}`)),
    { schedule: Schedule.spaced("20 millis"), times: 100 }
  )

/** The typed failure of an exit; throws (failing the test) on success or on a defect. */
export const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) throw new Error(`expected a failure, got ${inspect(exit.value, { depth: 3 })}`)
  const failure = errorOf(exit)
  if (Option.isNone(failure)) throw new Error(`expected a typed failure, got ${inspect(exit, { depth: 5 })}`)
  return failure.value
}

/** The typed failure of an exit, which must be an instance of `type`. */
export const failureOfType = <A, E, T>(exit: Exit.Exit<A, E>, type: abstract new(...args: never) => T): T => {
  const error = failureOf(exit)
  if (!(error instanceof type)) throw new Error(`expected ${type.name}, got ${inspect(error)}`)
  return error
}

/** The refusal of an exit, which must be a `LockNotAcquired`. */
export const refusalOf = <A, E>(exit: Exit.Exit<A, E>) => failureOfType(exit, RedlockError.LockNotAcquired)

/** The failure of an exit, which must be an `InvalidOptions`. */
export const invalidOf = <A, E>(exit: Exit.Exit<A, E>) => failureOfType(exit, RedlockError.InvalidOptions)

/** The failure of an exit, which must be a `LockLost`. */
export const lossOf = <A, E>(exit: Exit.Exit<A, E>) => failureOfType(exit, RedlockError.LockLost)

/** Each node's outcome of a refusal, by tag. */
export const tags = (error: RedlockError.LockNotAcquired) => error.outcomes.map((outcome) => outcome._tag)

/** The live keys of every memory node, by node. */
export const allKeys = Effect.gen(function*() {
  const control = yield* RedisNode.MemoryNodes
  return yield* Effect.forEach(Array.from({ length: control.size }, (_, i) => i), control.keys)
})

export const assertNoKeys = Effect.map(allKeys, (keys) => {
  const left = keys.flat()
  if (left.length > 0) throw new Error(`expected no keys, found ${left.join(", ")}`)
})

/** Advance the TestClock in steps (1 ms by default), so that sleeps started along the way also fire in order. */
export const tick = (millis: number, step = 1) =>
  Effect.forEach(Array.from({ length: Math.ceil(millis / step) }), () => TestClock.adjust(Duration.millis(step)), {
    discard: true
  })

/** Every memory node up, fast and healthy again, so that the scope's own release is answered. */
export const heal = Effect.gen(function*() {
  const control = yield* RedisNode.MemoryNodes
  for (let i = 0; i < control.size; i++) yield* control.heal(i)
})

/**
 * A node written with effects from a node, for tests that call a node
 * directly or wrap one operation (the inverse of `RedisNode.fromEffects`):
 * each promise as an effect failing with its `RedisNodeError`, `inspect`
 * and `incrementFences` with `Option`s.
 */
export const effectsOf = (node: RedisNode.RedisNode): RedisNode.EffectNode => {
  const { promises, watchReleasesNow } = node
  const effect = <A>(promise: () => Promise<A>) =>
    Effect.tryPromise({ try: promise, catch: (error) => error as RedlockError.RedisNodeError })
  const option = <A>(value: A | null | undefined): Option.Option<A> =>
    value == null ? Option.none() : Option.some(value)
  return {
    name: node.name,
    run: node.run,
    watchReleases: watchReleasesNow === undefined
      ? undefined
      : (key, onRelease) => Effect.sync(() => watchReleasesNow(key, onRelease)),
    hearsReleases: node.hearsReleases,
    countsHandOvers: node.countsHandOvers,
    acquire: (keys, value, ttlMillis) => effect(() => promises.acquire(keys, value, ttlMillis)),
    acquireInTurn: (keys, value, ttlMillis, turn) => effect(() => promises.acquireInTurn(keys, value, ttlMillis, turn)),
    acquireSlot: (keys, value, ttlMillis, turn) => effect(() => promises.acquireSlot(keys, value, ttlMillis, turn)),
    release: (keys, value, announce, keepPlace) => effect(() => promises.release(keys, value, announce, keepPlace)),
    extend: (keys, value, ttlMillis) => effect(() => promises.extend(keys, value, ttlMillis)),
    incrementFences: (keys, value, fenceKeys) =>
      effect(() => promises.incrementFences(keys, value, fenceKeys).then(option)),
    commitFences: (keys, value, fenceKeys, tokens) =>
      effect(() => promises.commitFences(keys, value, fenceKeys, tokens)),
    inspect: (key) =>
      effect(async () => {
        const { ttlMillis, value } = await promises.inspect(key)
        return {
          value: option(value),
          ttl: ttlMillis === undefined ? Option.none() : Option.some(Duration.millis(ttlMillis))
        }
      })
  }
}

/** A generator of numbers in [0, 1) from a seed, the same on every run (a 32-bit LCG): a test's "random" points, reproducible. */
export const seededRandom = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0
    return state / 2 ** 32
  }
}

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
