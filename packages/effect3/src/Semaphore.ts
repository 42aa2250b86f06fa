/**
 * A counting semaphore over the same Redis nodes as the locks: at most
 * `limit` holders of a resource's permits at once, across every process
 * ("at most 3 report builders across the fleet"). A permit is a scoped
 * resource, released on every exit of its scope, as a lock is.
 *
 * Guarantee: never more than `limit` holders within their validity, under
 * the lock's own assumptions (a majority of nodes keeps its keys; the
 * restart quarantine covers restarts). A resource has `limit` slots, each an
 * ordinary Redlock lock, and a permit is one slot held: two holders of one
 * slot never overlap within their validity, so `limit` slots give at most
 * `limit` holders.
 *
 * A permit is the `Lock` of its slot: `remaining`, `validity`, `lost`,
 * `guard`, extension, `autoExtend` and fencing tokens work as for a lock (a
 * slot's fencing tokens order the holders of that slot). Its `resources`
 * name the slot: the resource, a NUL character, `permit` and the slot
 * number.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Semaphore } from "effect-redlock"
 *
 * // At most 3 report builds at once across the fleet.
 * const build = Effect.log("building the report").pipe(
 *   Semaphore.withPermit("reports:build", { limit: 3, ttl: "30 seconds", autoExtend: true })
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as Scope from "effect/Scope"
import { whileHolding } from "./internal/lock.js"
import type * as Lock from "./Lock.js"
import type * as Duration from "effect/Duration"
import { type InspectResult, Redlock, type RetrySchedule, type WithLockError } from "./Redlock.js"
import type { InvalidOptions, LockNotAcquired, SettingConflict } from "./RedlockError.js"
import type * as FrontEnd from "@effect-redlock/core/manager/frontEndTypes.js"

/**
 * Options of a permit: an acquisition's, and the resource's `limit`.
 *
 * @since 0.1.0
 * @category models
 */
export interface PermitOptions extends FrontEnd.PermitOptionsOf<Duration.DurationInput, RetrySchedule> {}

/**
 * Who holds the permits of a semaphore, slot by slot (see `Semaphore.inspect`).
 *
 * @since 0.1.0
 * @category models
 */
export interface PermitsInspection extends FrontEnd.PermitsInspectionOf<InspectResult> {}

/**
 * A permit of the semaphore on `resource`, held until the scope closes.
 * Fails with `LockNotAcquired` once the retry schedule ends with every slot
 * taken, with `SettingConflict` when the holders use another `limit`, and
 * with `InvalidOptions` for a bad resource, limit or option.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Semaphore } from "effect-redlock"
 *
 * const program = Effect.gen(function*() {
 *   const permit = yield* Semaphore.acquire("exports", { limit: 2, ttl: "10 seconds" })
 *   yield* Effect.log(`one of 2 exports, valid for ${permit.validity}`)
 * }).pipe(Effect.scoped)
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const acquire = (
  resource: string,
  options: PermitOptions
): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Redlock | Scope.Scope> =>
  Effect.flatMap(Redlock, (redlock) => redlock.acquirePermit(resource, options))

/**
 * Run an effect while holding a permit, released when it ends. If the permit
 * is lost while the effect runs, the effect is interrupted and `withPermit`
 * fails with `LockLost`, as `Redlock.withLock` does.
 *
 * @since 0.1.0
 * @category combinators
 */
export const withPermit: {
  (
    resource: string,
    options: PermitOptions
  ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | WithLockError | SettingConflict, R | Redlock>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    resource: string,
    options: PermitOptions
  ): Effect.Effect<A, E | WithLockError | SettingConflict, R | Redlock>
} = dual(3, <A, E, R>(
  self: Effect.Effect<A, E, R>,
  resource: string,
  options: PermitOptions
): Effect.Effect<A, E | WithLockError | SettingConflict, R | Redlock> =>
  Effect.flatMap(Redlock, (redlock) => whileHolding(redlock, redlock.acquirePermit, resource, options, self)))

/**
 * Who holds each of the `limit` permits of `resource` on each node, and how
 * many are held on a majority. Needs no permit.
 *
 * @since 0.1.0
 * @category combinators
 */
export const inspect = (resource: string, limit: number): Effect.Effect<PermitsInspection, InvalidOptions, Redlock> =>
  Effect.flatMap(Redlock, (redlock) => redlock.inspectPermits(resource, limit))
