/**
 * A counting semaphore: at most `limit` holders of a resource at once, with
 * the lock's guarantee. Each of the `limit` slots is an ordinary Redlock
 * lock and a permit is one slot held, so no more than `limit` permits are
 * held within their validity, under exactly the lock's assumptions. Every
 * client of a resource must use the same `limit`: the nodes record the
 * holders' limit, and a permit asked for with another fails at once with
 * `SettingConflict` (decided by a majority of nodes, as a grant is); the
 * record goes with the last holder on each node (or expires within twice its ttl),
 * so a new limit takes effect once the resource is idle. Waiters are woken
 * by releases, as lock waiters are.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Semaphore } from "effect-redlock"
 *
 * // At most 3 thumbnail jobs at once, across every process.
 * const thumbnail = Effect.log("making a thumbnail").pipe(
 *   Semaphore.withPermit("thumbnails", { limit: 3, ttl: "30 seconds" })
 * )
 * ```
 *
 * @since 0.2.0
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
 * @since 0.2.0
 * @category models
 */
export interface PermitOptions extends FrontEnd.PermitOptionsOf<Duration.Input, RetrySchedule> {}

/**
 * Who holds the permits of a semaphore, slot by slot (see `Semaphore.inspect`).
 *
 * @since 0.2.0
 * @category models
 */
export interface PermitsInspection extends FrontEnd.PermitsInspectionOf<InspectResult> {}

/**
 * One permit, as a resource of the current `Scope`: released on every node
 * when the scope closes. Fails with `LockNotAcquired` (naming the resource)
 * once the retry schedule gives up while every permit is held.
 *
 * @since 0.2.0
 * @category combinators
 */
export const acquire = (
  resource: string,
  options: PermitOptions
): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Redlock | Scope.Scope> =>
  Effect.flatMap(Redlock, (redlock) => redlock.acquirePermit(resource, options))

/**
 * Run an effect while holding a permit; interrupted with `LockLost` if the
 * permit is lost.
 *
 * @since 0.2.0
 * @category combinators
 */
export const withPermit: {
  (
    resource: string,
    options: PermitOptions
  ): <A, E, R>(
    self: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | WithLockError | SettingConflict, Exclude<R, Scope.Scope> | Redlock>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    resource: string,
    options: PermitOptions
  ): Effect.Effect<A, E | WithLockError | SettingConflict, Exclude<R, Scope.Scope> | Redlock>
} = dual(
  3,
  <A, E, R>(self: Effect.Effect<A, E, R>, resource: string, options: PermitOptions) =>
    whileHolding(acquire(resource, options), self)
)

/**
 * Who holds each permit of a resource; takes no permit.
 *
 * @since 0.2.0
 * @category combinators
 */
export const inspect = (resource: string, limit: number): Effect.Effect<PermitsInspection, InvalidOptions, Redlock> =>
  Effect.flatMap(Redlock, (redlock) => redlock.inspectPermits(resource, limit))
