/**
 * A read-write lock over the same Redis nodes as the locks: many readers of
 * a resource at once (up to `maxReaders`), or one writer and no reader,
 * across every process ("many readers of the cache, one rebuilder"). Read and
 * write holds are scoped resources, released on every exit of their scope.
 *
 * Guarantee: a writer never holds within its validity while another writer
 * or a reader does, and at most `maxReaders` readers hold at once, under the
 * lock's own assumptions. A resource has `maxReaders` read slots, each an
 * ordinary Redlock lock: a reader holds one slot, a writer holds every slot
 * at once (one lock of many keys, all or none on each node). A writer and a
 * reader within their validity would both hold the reader's slot, which a
 * lock forbids.
 *
 * Readers and writers of a resource wait in one line, in the order they
 * began: readers that ask after a waiting writer wait behind it, so a writer
 * is not starved by a stream of readers, and a reader that waited first is
 * not overtaken by a later writer.
 *
 * A hold is the `Lock` of its slots: `remaining`, `validity`, `lost`,
 * `guard`, extension and `autoExtend` work as for a lock. Its `resources`
 * name the slots (the resource, a NUL character, `read` and the slot number).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ReadWriteLock } from "effect-redlock"
 *
 * const readCache = Effect.log("reading the cache").pipe(
 *   ReadWriteLock.withRead("cache", { ttl: "10 seconds" })
 * )
 * const rebuildCache = Effect.log("rebuilding the cache").pipe(
 *   ReadWriteLock.withWrite("cache", { ttl: "30 seconds", autoExtend: true })
 * )
 * ```
 *
 * @since 0.1.0
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
 * @since 0.1.0
 * @category models
 */
export interface ReadWriteOptions extends FrontEnd.ReadWriteOptionsOf<Duration.DurationInput, RetrySchedule> {}

/**
 * Who holds a read-write lock (see `ReadWriteLock.inspect`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ReadWriteInspection extends FrontEnd.ReadWriteInspectionOf<InspectResult, Option.Option<string>> {}

/**
 * Hold `resource` for reading until the scope closes: with other readers,
 * never with a writer. Fails with `LockNotAcquired` once the retry schedule
 * ends, and with `InvalidOptions` for a bad resource or option.
 *
 * @since 0.1.0
 * @category combinators
 */
export const acquireRead = (
  resource: string,
  options: ReadWriteOptions
): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict | SelfDeadlock, Redlock | Scope.Scope> =>
  Effect.flatMap(Redlock, (redlock) => redlock.acquireRead(resource, options))

/**
 * Hold `resource` for writing until the scope closes: with no reader and no
 * other writer. Fails with `LockNotAcquired` once the retry schedule ends,
 * and with `InvalidOptions` for a bad resource or option.
 *
 * @since 0.1.0
 * @category combinators
 */
export const acquireWrite = (
  resource: string,
  options: ReadWriteOptions
): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict | SelfDeadlock, Redlock | Scope.Scope> =>
  Effect.flatMap(Redlock, (redlock) => redlock.acquireWrite(resource, options))

/**
 * Run an effect while holding `resource` for reading, released when it ends;
 * interrupted with `LockLost` if the hold is lost first.
 *
 * @since 0.1.0
 * @category combinators
 */
export const withRead: {
  (
    resource: string,
    options: ReadWriteOptions
  ): <A, E, R>(
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | WithLockError | SettingConflict | SelfDeadlock, R | Redlock>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    resource: string,
    options: ReadWriteOptions
  ): Effect.Effect<A, E | WithLockError | SettingConflict | SelfDeadlock, R | Redlock>
} = dual(
  3,
  <A, E, R>(self: Effect.Effect<A, E, R>, resource: string, options: ReadWriteOptions) =>
    Effect.flatMap(Redlock, (redlock) => whileHolding(redlock, redlock.acquireRead, resource, options, self))
)

/**
 * Run an effect while holding `resource` for writing, released when it ends;
 * interrupted with `LockLost` if the hold is lost first.
 *
 * @since 0.1.0
 * @category combinators
 */
export const withWrite: {
  (
    resource: string,
    options: ReadWriteOptions
  ): <A, E, R>(
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | WithLockError | SettingConflict | SelfDeadlock, R | Redlock>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    resource: string,
    options: ReadWriteOptions
  ): Effect.Effect<A, E | WithLockError | SettingConflict | SelfDeadlock, R | Redlock>
} = dual(
  3,
  <A, E, R>(self: Effect.Effect<A, E, R>, resource: string, options: ReadWriteOptions) =>
    Effect.flatMap(Redlock, (redlock) => whileHolding(redlock, redlock.acquireWrite, resource, options, self))
)

/**
 * Who holds `resource` for reading or writing, read slot by read slot, on
 * each node. Needs no hold; `maxReaders` must be the holders' (default 16).
 *
 * @since 0.1.0
 * @category combinators
 */
export const inspect = (
  resource: string,
  maxReaders?: number
): Effect.Effect<ReadWriteInspection, InvalidOptions, Redlock> =>
  Effect.flatMap(Redlock, (redlock) => redlock.inspectReadWrite(resource, maxReaders))
