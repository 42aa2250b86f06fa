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
 * @since 0.1.0
 */
import type { NonEmptyReadonlyArray } from "effect/Array"
import type * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as RedlockConfig from "./internal/config.js"
import { takesCallerHolds, whileHolding } from "./internal/lock.js"
import * as Acquisition from "./internal/manager/acquisition.js"
import * as Extension from "./internal/manager/extension.js"
import * as Inspection from "./internal/manager/inspection.js"
import * as ReadWrite from "./internal/manager/readWrite.js"
import * as Reentrancy from "./internal/manager/reentrancy.js"
import * as Release from "./internal/manager/release.js"
import * as Semaphore from "./internal/manager/semaphore.js"
import * as Settings from "./internal/manager/settings.js"
import * as Retry from "./internal/retry.js"
import * as Validate from "./internal/validate.js"
import type * as Lock from "./Lock.js"
import { type KeyState, type NodeOutcome, type RedisNode, RedisNodes } from "./RedisNode.js"
import type {
  ExtensionLimitReached,
  InvalidOptions,
  LockLost,
  LockNotAcquired,
  LockNotExtended,
  SelfDeadlock,
  SettingConflict
} from "./RedlockError.js"
import type { ReadWriteInspection, ReadWriteOptions } from "./ReadWriteLock.js"
import type { PermitOptions, PermitsInspection } from "./Semaphore.js"
import type * as FrontEnd from "@effect-redlock/core/manager/frontEndTypes.js"

/**
 * The retry policy of acquire: a `Schedule` fed with each failed attempt.
 * Any schedule works; retries stop when it stops.
 *
 * @since 0.1.0
 * @category models
 */
export type RetrySchedule = Schedule.Schedule<unknown, LockNotAcquired>

/**
 * The default retry: 3 retries, each after 100-200 ms chosen at random (the
 * reference's retryDelay 200 ms, jittered between half and all of it). Random
 * delays break split votes where contenders would otherwise retry in lock-step.
 * It is `retry({ delay: "200 millis", times: 3, jitter: { min: 0.5, max: 1 } })`.
 *
 * @since 0.1.0
 * @category schedules
 */
export const defaultRetry: RetrySchedule = Settings.defaultRetry

/**
 * Options of {@link retry}: `delay`, `times`, `jitter`.
 *
 * @since 0.1.0
 * @category models
 */
export interface RetryOptions extends FrontEnd.RetryOptionsOf<Duration.DurationInput> {}

/**
 * A retry schedule from a delay, its jitter and a number of retries: the
 * Schedule `spaced(delay)`, jittered, delays rounded to whole milliseconds,
 * intersected with `recurs(times)`. Use it rather than building that
 * Schedule by hand: a waiter steps it as plain code, where any other
 * Schedule is stepped as an effect after each refused attempt, which costs
 * a contended waiter ~0.1 ms of CPU per step. Its jitter draws from the
 * fiber's `Random`, as the Schedule's own steps would.
 *
 * Throws `InvalidOptions` when an option is out of range (options are
 * constants of the code that calls it).
 *
 * @example
 * ```ts
 * import { Redlock } from "effect-redlock"
 *
 * // node-redlock's { retryCount: 100, retryDelay: 10, retryJitter: 2 }
 * const retry = Redlock.retry({ delay: 10, times: 100, jitter: { min: 0.8, max: 1.2 } })
 * ```
 *
 * @since 0.1.0
 * @category schedules
 */
export const retry: (options: RetryOptions) => RetrySchedule = Retry.unsafeMake

/**
 * One attempt only.
 *
 * @since 0.1.0
 * @category schedules
 */
export const noRetry: RetrySchedule = Schedule.stop

/**
 * Options of the lock manager (each documented in core's `manager/frontEndTypes.ts`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends FrontEnd.ManagerOptionsOf<Duration.DurationInput, RetrySchedule> {}

/**
 * Automatic extension of a held lock (`maxHold`).
 *
 * @since 0.1.0
 * @category models
 */
export interface AutoExtendOptions extends FrontEnd.AutoExtendOptionsOf<Duration.DurationInput> {}

/**
 * Options of one acquisition: `ttl`, `nodeTimeout`, `retry`, `autoExtend`.
 *
 * @since 0.1.0
 * @category models
 */
export interface AcquireOptions extends FrontEnd.AcquireOptionsOf<Duration.DurationInput, RetrySchedule> {}

/**
 * What a release did: `Released`, `NotHeld`, `Incomplete` or
 * `AlreadyReleased` (each explained in core's `manager/frontEndTypes.ts`).
 *
 * @since 0.1.0
 * @category models
 */
export type ReleaseStatus = FrontEnd.ReleaseStatus

/**
 * What each node answered to a release.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReleaseResult extends FrontEnd.ReleaseResultOf<NodeOutcome> {}

/**
 * One node's view of a resource, as `inspect` reads it.
 *
 * @since 0.1.0
 * @category models
 */
export type NodeKeyState =
  | { readonly _tag: "Read"; readonly node: string; readonly state: KeyState }
  | { readonly _tag: "Unreadable"; readonly outcome: NodeOutcome }

/**
 * Who holds a resource, node by node, and whether a majority agrees.
 *
 * @since 0.1.0
 * @category models
 */
export interface InspectResult
  extends FrontEnd.InspectResultOf<NodeKeyState, Option.Option<string>, Option.Option<Duration.Duration>>
{}

/**
 * The lock manager service.
 *
 * @since 0.1.0
 * @category models
 */
export interface RedlockService {
  readonly nodes: ReadonlyArray<RedisNode>
  /** How many nodes must agree: floor(N / 2) + 1. */
  readonly quorum: number
  readonly acquire: (
    resources: string | NonEmptyReadonlyArray<string>,
    options: AcquireOptions
  ) => Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired, Scope.Scope>
  /**
   * Release now, on every node, and report what each node answered. The scope
   * finalizer of the lock then has nothing left to do.
   */
  readonly release: (lock: Lock.Lock) => Effect.Effect<ReleaseResult>
  /**
   * Extend the lock's keys to `ttl` (default: the lock's ttl) on every node,
   * and move its deadline as acquire would compute it.
   */
  readonly extend: (
    lock: Lock.Lock,
    ttl?: Duration.DurationInput
  ) => Effect.Effect<Lock.Lock, InvalidOptions | LockLost | LockNotExtended | ExtensionLimitReached>
  /** Read who holds a resource on each node. Needs no lock. */
  readonly inspect: (resource: string) => Effect.Effect<InspectResult, InvalidOptions>
  /** One permit of a counting semaphore on `resource` (see the `Semaphore` module). */
  readonly acquirePermit: (
    resource: string,
    options: PermitOptions
  ) => Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope>
  /** Who holds each permit of a semaphore (see the `Semaphore` module). */
  readonly inspectPermits: (resource: string, limit: number) => Effect.Effect<PermitsInspection, InvalidOptions>
  /** Hold `resource` for reading (see the `ReadWriteLock` module). */
  readonly acquireRead: (
    resource: string,
    options: ReadWriteOptions
  ) => Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict | SelfDeadlock, Scope.Scope>
  /** Hold `resource` for writing (see the `ReadWriteLock` module). */
  readonly acquireWrite: (
    resource: string,
    options: ReadWriteOptions
  ) => Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict | SelfDeadlock, Scope.Scope>
  /** Who holds a read-write lock (see the `ReadWriteLock` module). */
  readonly inspectReadWrite: (
    resource: string,
    maxReaders?: number
  ) => Effect.Effect<ReadWriteInspection, InvalidOptions>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class Redlock extends Context.Tag("effect-redlock/Redlock")<Redlock, RedlockService>() {}

/**
 * Build a lock manager over the nodes in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(options: Options = {}) {
  const settings = yield* Settings.fromContext(options)
  const manager = Redlock.of({
    nodes: settings.redisNodes,
    quorum: settings.quorum,
    acquire: Acquisition.acquire(settings),
    release: (lock) => Release.release(settings, lock),
    extend: (lock, ttl) => Extension.extend(settings, lock, ttl),
    inspect: (resource) => Inspection.inspect(settings, resource),
    acquirePermit: Semaphore.acquirePermit(settings),
    inspectPermits: (resource, limit) => Semaphore.inspectPermits(settings, resource, limit),
    acquireRead: Reentrancy.guard(settings, "read", ReadWrite.acquireRead(settings)),
    acquireWrite: Reentrancy.guard(settings, "write", ReadWrite.acquireWrite(settings)),
    inspectReadWrite: (resource, maxReaders) => ReadWrite.inspect(settings, resource, maxReaders)
  })
  // Its acquire, acquirePermit, acquireRead and acquireWrite take a CallerHold after their options.
  takesCallerHolds(manager)
  return manager
})

/**
 * The lock manager as a layer over the nodes (see `RedisNode.layerMemory` and
 * `effect-redlock/RedisNode/Ioredis`). Fails with `InvalidOptions` when the
 * options are invalid or no node is provided.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<Redlock, InvalidOptions, RedisNodes> =>
  Layer.effect(Redlock, make(options))

/**
 * The manager's options from configuration (by default the environment);
 * every variable is optional and falls back to the option's default:
 * `REDLOCK_KEY_PREFIX`, `REDLOCK_DRIFT_FACTOR`, `REDLOCK_NODE_TIMEOUT` (a
 * duration such as `50 millis`), `REDLOCK_MAX_EXTENSIONS`, `REDLOCK_FENCE_PREFIX`,
 * `REDLOCK_MAX_TTL` (e.g. `30 seconds`), `REDLOCK_RESTART_QUARANTINE`
 * (`true`/`false`).
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { Redlock } from "effect-redlock"
 * import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
 *
 * // REDLOCK_NODES=redis://a:6379,redis://b:6379,redis://c:6379
 * const MainLive = Redlock.layerConfig().pipe(Layer.provide(Ioredis.layerConfig()))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<Options> = optionsConfig
): Layer.Layer<Redlock, ConfigError.ConfigError | InvalidOptions, RedisNodes> =>
  Layer.effect(Redlock, Effect.flatMap(config, make))

/**
 * The manager's options from configuration, as {@link layerConfig} reads them
 * by default (the variables are listed there): to read them elsewhere, or to
 * combine them with a program's own configuration.
 *
 * @since 0.1.0
 * @category layers
 */
export const optionsConfig: Config.Config<Options> = RedlockConfig.options

/**
 * A finite duration as people write one in configuration or on a command
 * line: `500ms`, `30s`, `2m`, `1h`, or anything `Duration.decode` reads from
 * a string (`"30 seconds"`). `layerConfig` reads durations with it.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseDuration: (text: string) => Option.Option<Duration.Duration> = Validate.parseDuration

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
 * @since 0.1.0
 * @category combinators
 */
export const acquire = (
  resources: string | NonEmptyReadonlyArray<string>,
  options: AcquireOptions
): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired, Redlock | Scope.Scope> =>
  Effect.flatMap(Redlock, (redlock) => redlock.acquire(resources, options))

/**
 * Release a lock now rather than at the end of its scope, and see what each
 * node answered. Releasing a lock that expired, or that another client took
 * after it expired, answers `NotHeld` at once and leaves the other's keys.
 *
 * @since 0.1.0
 * @category combinators
 */
export const release = (lock: Lock.Lock): Effect.Effect<ReleaseResult, never, Redlock> =>
  Effect.flatMap(Redlock, (redlock) => redlock.release(lock))

/**
 * Extend a held lock to `ttl` (default: its own ttl). It succeeds only if a
 * majority of nodes extended it within its current validity; the new
 * validity is computed as acquire does. Fails with `LockLost` at once when
 * the lock expired or is held by another client, with `LockNotExtended` when
 * too few nodes answered (the lock stays valid until its deadline), and with
 * `ExtensionLimitReached` past `maxExtensions`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const extend = (
  lock: Lock.Lock,
  ttl?: Duration.DurationInput
): Effect.Effect<Lock.Lock, InvalidOptions | LockLost | LockNotExtended | ExtensionLimitReached, Redlock> =>
  Effect.flatMap(Redlock, (redlock) => redlock.extend(lock, ttl))

/**
 * Who holds a resource on each node and whether a majority agrees (as
 * StackExchange.Redis's LockQuery). Needs no lock value.
 *
 * @since 0.1.0
 * @category combinators
 */
export const inspect = (resource: string): Effect.Effect<InspectResult, InvalidOptions, Redlock> =>
  Effect.flatMap(Redlock, (redlock) => redlock.inspect(resource))

/**
 * Run an effect while holding a lock; the lock is released when it ends. If
 * the lock is lost while the effect runs (its validity runs out, or nodes say
 * it is no longer ours), the effect is interrupted and `withLock` fails with
 * `LockLost`: the critical section never runs past its validity. Fibers the
 * effect forks are interrupted when it ends, before the release, so that
 * none runs on without the lock. With `autoExtend`, the lock is extended for
 * as long as the effect runs.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Redlock } from "effect-redlock"
 *
 * const rebuild = Effect.log("rebuilding the cache").pipe(
 *   Redlock.withLock("cache:rebuild", { ttl: "30 seconds", autoExtend: true })
 * )
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const withLock: {
  (
    resources: string | NonEmptyReadonlyArray<string>,
    options: AcquireOptions
  ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | WithLockError, R | Redlock>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    resources: string | NonEmptyReadonlyArray<string>,
    options: AcquireOptions
  ): Effect.Effect<A, E | WithLockError, R | Redlock>
} = dual(3, <A, E, R>(
  self: Effect.Effect<A, E, R>,
  resources: string | NonEmptyReadonlyArray<string>,
  options: AcquireOptions
): Effect.Effect<A, E | WithLockError, R | Redlock> =>
  Effect.flatMap(Redlock, (redlock) => whileHolding(redlock, redlock.acquire, resources, options, self)))

/**
 * The errors `withLock` adds to those of its body.
 *
 * @since 0.1.0
 * @category models
 */
export type WithLockError = InvalidOptions | LockNotAcquired | LockLost
