/**
 * A read-write lock: readers together (up to `maxReaders`), or one writer
 * alone. A reader holds one of `maxReaders` read slots, each an ordinary
 * Redlock lock; a writer holds every slot at once, so it is never beside a
 * reader or another writer within their validity. Every client of a
 * resource must use the same `maxReaders`: the nodes record the holders'
 * value, and a read or write asked for with another fails at once with
 * `SettingConflict`; a new value takes effect once the resource is idle. A
 * waiting writer stands in the line
 * of every slot: readers that come after it wait behind it.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ReadWriteLock } from "effect-redlock"
 *
 * const read = Effect.log("reading the cache").pipe(ReadWriteLock.withRead("cache", { ttl: "10 seconds" }))
 * const rebuild = Effect.log("rebuilding the cache").pipe(ReadWriteLock.withWrite("cache", { ttl: "30 seconds" }))
 * ```
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { whileHolding } from "./internal/lock.js"
import type * as Lock from "./Lock.js"
import type * as Duration from "effect/Duration"
import { type InspectResult, Redlock, type RetrySchedule, type WithLockError } from "./Redlock.js"
import type { InvalidOptions, LockNotAcquired, SelfDeadlock, SettingConflict } from "./RedlockError.js"
import type * as FrontEnd from "@effect-redlock/core/manager/frontEndTypes.js"

/**
 * Options of a read or a write hold: an acquisition's, and `maxReaders`.
 *
 * @since 0.2.0
 * @category models
 */
export interface ReadWriteOptions extends FrontEnd.ReadWriteOptionsOf<Duration.Input, RetrySchedule> {}

/**
 * Who holds a read-write lock (see `ReadWriteLock.inspect`).
 *
 * @since 0.2.0
 * @category models
 */
export interface ReadWriteInspection extends FrontEnd.ReadWriteInspectionOf<InspectResult, Option.Option<string>> {}

/**
 * A read hold, as a resource of the current `Scope`.
 *
 * @since 0.2.0
 * @category combinators
 */
export const acquireRead = (
  resource: string,
  options: ReadWriteOptions
): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict | SelfDeadlock, Redlock | Scope.Scope> =>
  Effect.flatMap(Redlock, (redlock) => redlock.acquireRead(resource, options))

/**
 * The write hold, as a resource of the current `Scope`.
 *
 * @since 0.2.0
 * @category combinators
 */
export const acquireWrite = (
  resource: string,
  options: ReadWriteOptions
): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict | SelfDeadlock, Redlock | Scope.Scope> =>
  Effect.flatMap(Redlock, (redlock) => redlock.acquireWrite(resource, options))

/**
 * Run an effect while holding a read hold; interrupted with `LockLost` if it is lost.
 *
 * @since 0.2.0
 * @category combinators
 */
export const withRead: {
  (
    resource: string,
    options: ReadWriteOptions
  ): <A, E, R>(
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | WithLockError | SettingConflict | SelfDeadlock, Exclude<R, Scope.Scope> | Redlock>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    resource: string,
    options: ReadWriteOptions
  ): Effect.Effect<A, E | WithLockError | SettingConflict | SelfDeadlock, Exclude<R, Scope.Scope> | Redlock>
} = dual(
  3,
  <A, E, R>(self: Effect.Effect<A, E, R>, resource: string, options: ReadWriteOptions) =>
    whileHolding(acquireRead(resource, options), self)
)

/**
 * Run an effect while holding the write hold; interrupted with `LockLost` if it is lost.
 *
 * @since 0.2.0
 * @category combinators
 */
export const withWrite: {
  (
    resource: string,
    options: ReadWriteOptions
  ): <A, E, R>(
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | WithLockError | SettingConflict | SelfDeadlock, Exclude<R, Scope.Scope> | Redlock>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    resource: string,
    options: ReadWriteOptions
  ): Effect.Effect<A, E | WithLockError | SettingConflict | SelfDeadlock, Exclude<R, Scope.Scope> | Redlock>
} = dual(
  3,
  <A, E, R>(self: Effect.Effect<A, E, R>, resource: string, options: ReadWriteOptions) =>
    whileHolding(acquireWrite(resource, options), self)
)

/**
 * Who holds a read-write lock; takes no hold.
 *
 * @since 0.2.0
 * @category combinators
 */
export const inspect = (
  resource: string,
  maxReaders?: number
): Effect.Effect<ReadWriteInspection, InvalidOptions, Redlock> =>
  Effect.flatMap(Redlock, (redlock) => redlock.inspectReadWrite(resource, maxReaders))
