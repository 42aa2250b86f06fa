/**
 * The lock manager: the Redlock algorithm over the N nodes of `RedisNodes`.
 * A lock is a scoped resource: `acquire` registers its release on every node
 * in the caller's `Scope`, so it is released on success, failure, defect and
 * interruption alike.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Redlock, RedisNode } from "effect-redlock"
 *
 * const program = Effect.gen(function*() {
 *   const lock = yield* Redlock.acquire("orders:42", { ttl: "10 seconds" })
 *   // ... the critical section: lock.remaining, lock.lost
 * }).pipe(Effect.scoped)
 *
 * const TestLive = Redlock.layer().pipe(Layer.provideMerge(RedisNode.layerMemory(5)))
 * Effect.runPromise(Effect.provide(program, TestLive))
 * ```
 *
 * @since 0.2.0
 */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Acquisition from "./internal/manager/acquisition.js"
import * as RedlockConfig from "./internal/config.js"
import * as Extension from "./internal/manager/extension.js"
import * as Inspection from "./internal/manager/inspection.js"
import { whileHolding } from "./internal/lock.js"
import * as ReadWrite from "./internal/manager/readWrite.js"
import * as Reentrancy from "./internal/manager/reentrancy.js"
import * as SemaphoreSlots from "./internal/manager/semaphore.js"
import * as Release from "./internal/manager/release.js"
import * as Retry from "./internal/retry.js"
import * as Settings from "./internal/manager/settings.js"
import type { Lock } from "./Lock.js"
import type { ReadWriteInspection, ReadWriteOptions } from "./ReadWriteLock.js"
import type { PermitOptions, PermitsInspection } from "./Semaphore.js"
import { RedisNodes } from "./RedisNode.js"
import type { KeyState, RedisNode } from "./RedisNode.js"
import type * as FrontEnd from "@effect-redlock/core/manager/frontEndTypes.js"
import type {
  ExtensionLimitReached,
  InvalidOptions,
  LockLost,
  LockNotAcquired,
  LockNotExtended,
  NodeOutcome,
  SelfDeadlock,
  SettingConflict
} from "./RedlockError.js"

/**
 * A retry schedule: any `Schedule` fed with each `LockNotAcquired`, needing
 * no service. {@link retry} makes the usual one (a delay, its jitter, a
 * number of retries).
 *
 * @since 0.2.0
 * @category models
 */
export type RetrySchedule = Retry.RetrySchedule

/**
 * @since 0.2.0
 * @category models
 */
export type RetryOptions = Retry.RetryOptions

/**
 * Retry after `delay`, jittered by a factor drawn from `jitter` (default
 * 0.8–1.2, from the fiber's `Random`), at most `times` times. Its steps also
 * run as plain code, so a waiting acquisition does not run an effect per
 * retry. Throws `InvalidOptions` for options out of range.
 *
 * @since 0.2.0
 * @category retry
 */
export const retry: (options: RetryOptions) => RetrySchedule = Retry.makeOrThrow

/**
 * Try once: fail with `LockNotAcquired` at once when the lock is held.
 *
 * @since 0.2.0
 * @category retry
 */
export const noRetry: RetrySchedule = Retry.noRetry

/**
 * The default retry: 200 ms jittered between half and all of it, three
 * retries (the reference's retryDelay; node-redlock's default count is 10).
 *
 * @since 0.2.0
 * @category retry
 */
export const defaultRetry: RetrySchedule = Settings.defaultRetry

/**
 * Options of the lock manager (each documented in core's `manager/frontEndTypes.ts`).
 *
 * @since 0.2.0
 * @category models
 */
export interface Options extends FrontEnd.ManagerOptionsOf<Duration.Input, RetrySchedule> {}

/**
 * Options of one acquisition: `ttl`, `nodeTimeout`, `retry`, `autoExtend`.
 *
 * @since 0.2.0
 * @category models
 */
export interface AcquireOptions extends FrontEnd.AcquireOptionsOf<Duration.Input, RetrySchedule> {}

/**
 * Automatic extension of a held lock (`maxHold`).
 *
 * @since 0.2.0
 * @category models
 */
export interface AutoExtendOptions extends FrontEnd.AutoExtendOptionsOf<Duration.Input> {}

/**
 * What a release did: `Released`, `NotHeld`, `Incomplete` or
 * `AlreadyReleased` (each explained in core's `manager/frontEndTypes.ts`).
 *
 * @since 0.2.0
 * @category models
 */
export type ReleaseStatus = FrontEnd.ReleaseStatus

/**
 * What each node answered to a release.
 *
 * @since 0.2.0
 * @category models
 */
export interface ReleaseResult extends FrontEnd.ReleaseResultOf<NodeOutcome> {}

/**
 * One node's reading of a resource's key.
 *
 * @since 0.2.0
 * @category models
 */
export type NodeKeyState =
  | { readonly _tag: "Read"; readonly node: string; readonly state: KeyState }
  | { readonly _tag: "Unreadable"; readonly outcome: NodeOutcome }

/**
 * Who holds a resource, node by node, and whether a majority agrees.
 *
 * @since 0.2.0
 * @category models
 */
export interface InspectResult
  extends FrontEnd.InspectResultOf<NodeKeyState, Option.Option<string>, Option.Option<Duration.Duration>>
{}

/**
 * The lock manager service.
 *
 * @since 0.2.0
 * @category models
 */
export interface RedlockService {
  readonly nodes: ReadonlyArray<RedisNode>
  /** How many nodes must agree: floor(N / 2) + 1. */
  readonly quorum: number
  readonly acquire: (
    resources: string | ReadonlyArray<string>,
    options: AcquireOptions
  ) => Effect.Effect<Lock, InvalidOptions | LockNotAcquired, Scope.Scope>
  /**
   * Release now, on every node, and report what each node answered. The scope
   * finalizer of the lock then has nothing left to do.
   */
  readonly release: (lock: Lock) => Effect.Effect<ReleaseResult>
  /**
   * Extend the lock's keys to `ttl` (default: the lock's ttl) on every node,
   * and move its deadline as acquire would compute it.
   */
  readonly extend: (
    lock: Lock,
    ttl?: Duration.Input
  ) => Effect.Effect<Lock, InvalidOptions | LockLost | LockNotExtended | ExtensionLimitReached>
  /** Read who holds a resource on each node. Needs no lock. */
  readonly inspect: (resource: string) => Effect.Effect<InspectResult, InvalidOptions>
  /** One permit of a counting semaphore on `resource` (see the `Semaphore` module). */
  readonly acquirePermit: (
    resource: string,
    options: PermitOptions
  ) => Effect.Effect<Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope>
  /** Who holds each permit of a semaphore (see the `Semaphore` module). */
  readonly inspectPermits: (resource: string, limit: number) => Effect.Effect<PermitsInspection, InvalidOptions>
  /** Hold `resource` for reading (see the `ReadWriteLock` module). */
  readonly acquireRead: (
    resource: string,
    options: ReadWriteOptions
  ) => Effect.Effect<Lock, InvalidOptions | LockNotAcquired | SettingConflict | SelfDeadlock, Scope.Scope>
  /** Hold `resource` for writing (see the `ReadWriteLock` module). */
  readonly acquireWrite: (
    resource: string,
    options: ReadWriteOptions
  ) => Effect.Effect<Lock, InvalidOptions | LockNotAcquired | SettingConflict | SelfDeadlock, Scope.Scope>
  /** Who holds a read-write lock (see the `ReadWriteLock` module). */
  readonly inspectReadWrite: (
    resource: string,
    maxReaders?: number
  ) => Effect.Effect<ReadWriteInspection, InvalidOptions>
}

/**
 * The lock manager.
 *
 * @since 0.2.0
 * @category services
 */
export class Redlock extends Context.Service<Redlock, RedlockService>()("effect-redlock/Redlock") {}

/**
 * A manager over the nodes of `RedisNodes`.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(options: Options = {}) {
  const nodes = yield* RedisNodes
  const settings = yield* Settings.make(nodes, options)
  return Redlock.of({
    nodes,
    quorum: settings.quorum,
    acquire: Acquisition.acquire(settings),
    release: (lock) => Release.releaseTraced(settings, lock),
    extend: (lock, ttl) => Extension.extend(settings, lock, ttl),
    inspect: (resource) => Inspection.inspect(settings, resource),
    acquirePermit: SemaphoreSlots.acquireSlot(settings, SemaphoreSlots.permitSlots),
    inspectPermits: (resource, limit) =>
      SemaphoreSlots.inspectSlots(settings, resource, limit, SemaphoreSlots.permitSlots),
    acquireRead: Reentrancy.guard(settings, "read", ReadWrite.acquireRead(settings)),
    acquireWrite: Reentrancy.guard(settings, "write", ReadWrite.acquireWrite(settings)),
    inspectReadWrite: (resource, maxReaders) => ReadWrite.inspect(settings, resource, maxReaders)
  })
})

/**
 * The manager as a layer over `RedisNodes`.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<Redlock, InvalidOptions, RedisNodes> =>
  Layer.effect(Redlock, make(options))

/**
 * The manager's options from configuration (by default the environment);
 * every variable is optional and falls back to the option's default:
 * `REDLOCK_KEY_PREFIX`, `REDLOCK_DRIFT_FACTOR`, `REDLOCK_NODE_TIMEOUT` (a
 * duration such as `50ms`, read by {@link parseDuration}), `REDLOCK_MAX_EXTENSIONS`,
 * `REDLOCK_FENCE_PREFIX`, `REDLOCK_MAX_TTL` (e.g. `30s`), `REDLOCK_RESTART_QUARANTINE`
 * (`true`/`false`). A value that does not read is a `ConfigError` naming its variable.
 *
 * @since 0.2.0
 * @category layers
 */
export const optionsConfig: Config.Config<Options> = RedlockConfig.options

/**
 * A finite duration as people write one in configuration or on a command
 * line: `500ms`, `30s`, `2m`, `1h`, or a duration's text (`"30 seconds"`).
 * `layerConfig` reads durations with it.
 *
 * @since 0.2.0
 * @category utils
 */
export const parseDuration: (text: string) => Option.Option<Duration.Duration> = RedlockConfig.parseDuration

/**
 * The manager with its options from configuration ({@link optionsConfig}).
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
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<Options> = optionsConfig
): Layer.Layer<Redlock, Config.ConfigError | InvalidOptions, RedisNodes> =>
  Layer.effect(Redlock, Effect.flatMap(config, make))

/**
 * Acquire a lock on one resource, or on several together (all or none), as
 * a resource of the current `Scope`: released on every node when the scope
 * closes. Retries as the options' (or the manager's) schedule says; fails
 * with `LockNotAcquired` once it gives up.
 *
 * @since 0.2.0
 * @category combinators
 */
export const acquire = (
  resources: string | ReadonlyArray<string>,
  options: AcquireOptions
): Effect.Effect<Lock, InvalidOptions | LockNotAcquired, Redlock | Scope.Scope> =>
  Effect.flatMap(Redlock, (redlock) => redlock.acquire(resources, options))

/**
 * Run an effect while holding a lock; the lock is released when it ends. If
 * the lock is lost while the effect runs (its validity runs out, or nodes say
 * it is no longer ours), the effect is interrupted and `withLock` fails with
 * `LockLost`: the critical section never runs past its validity. Fibers the
 * effect forks are interrupted when it ends, before the release, so that
 * none runs on without the lock.
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
 * @since 0.2.0
 * @category combinators
 */
export const withLock: {
  (
    resources: string | ReadonlyArray<string>,
    options: AcquireOptions
  ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | WithLockError, Exclude<R, Scope.Scope> | Redlock>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    resources: string | ReadonlyArray<string>,
    options: AcquireOptions
  ): Effect.Effect<A, E | WithLockError, Exclude<R, Scope.Scope> | Redlock>
} = dual(3, <A, E, R>(
  self: Effect.Effect<A, E, R>,
  resources: string | ReadonlyArray<string>,
  options: AcquireOptions
): Effect.Effect<A, E | WithLockError, Exclude<R, Scope.Scope> | Redlock> =>
  whileHolding(acquire(resources, options), self))

/**
 * The errors `withLock` adds to those of its body.
 *
 * @since 0.2.0
 * @category models
 */
export type WithLockError = InvalidOptions | LockNotAcquired | LockLost

/**
 * Release a lock before its scope closes (the scope's release then does nothing).
 *
 * @since 0.2.0
 * @category combinators
 */
export const release = (lock: Lock): Effect.Effect<ReleaseResult, never, Redlock> =>
  Effect.flatMap(Redlock, (redlock) => redlock.release(lock))

/**
 * Set a new ttl on every node (the lock's own ttl when none is given); the
 * lock's validity moves only if a quorum confirmed within the current one.
 *
 * @since 0.2.0
 * @category combinators
 */
export const extend = (
  lock: Lock,
  ttl?: Duration.Input
): Effect.Effect<Lock, InvalidOptions | LockLost | LockNotExtended | ExtensionLimitReached, Redlock> =>
  Effect.flatMap(Redlock, (redlock) => redlock.extend(lock, ttl))

/**
 * Read who holds a resource on each node; takes no lock.
 *
 * @since 0.2.0
 * @category combinators
 */
export const inspect = (resource: string): Effect.Effect<InspectResult, InvalidOptions, Redlock> =>
  Effect.flatMap(Redlock, (redlock) => redlock.inspect(resource))
