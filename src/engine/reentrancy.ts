/**
 * What a fiber holds, so that an acquisition of something it holds already
 * does not wait for itself. Before, a fiber that asked again for a lock it
 * held waited until its own lock expired, and a reader that asked for the
 * write lock of its resource (or for another read while a writer waited in
 * line) waited for itself until a schedule ended.
 *
 * Each shell keeps a fiber's holds (newest first) in a fiber-local value
 * that its children inherit (a child waiting for its parent's lock, while
 * the parent waits for the child, is the same deadlock); a hold is dropped
 * once its lock is released, lost or past its deadline. The rules
 * (`decide`):
 * - a lock on exactly the resources of a lock held: served by the held lock
 *   (re-entrant, as Redisson's locks are per thread), released with it;
 * - a read of a resource held for reading or writing, a write of one held
 *   for writing: served by the held lock;
 * - a write of a resource held for reading (an upgrade, which would wait for
 *   its own read), or a lock on resources of which some but not all are
 *   held: refused at once (`SelfDeadlock`).
 * Semaphore permits are not tracked: a second permit of a resource is a
 * permit like any other.
 *
 * @internal
 */
import type { Holding } from "./holding.js"

/** How a resource is held: a lock (on one or more resources), a read, or a write. */
export type HoldKind = "lock" | "read" | "write"

/** One hold of a fiber: its manager, kind, resources and lock; `next` the older holds. */
export interface Held {
  /** The lock manager's identity (compared as a reference). */
  readonly manager: unknown
  readonly kind: HoldKind
  readonly resources: ReadonlyArray<string>
  readonly lock: Holding
  readonly next: Held | undefined
}

/** What to do with an acquisition, given what its fiber holds. */
export type Decision =
  | { readonly _tag: "Acquire" }
  | { readonly _tag: "Borrow"; readonly lock: Holding }
  | { readonly _tag: "SelfDeadlock"; readonly resource: string; readonly held: HoldKind }

const acquire: Decision = { _tag: "Acquire" }

const isLive = (held: Held, now: number): boolean => held.lock.isHeldAt(now)

const sameResources = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean =>
  a.length === b.length && a.every((resource) => b.includes(resource))

/** See the rules above. `now`: the monotonic time the locks' deadlines are on. */
export const decide = (
  holds: Held | undefined,
  manager: unknown,
  kind: HoldKind,
  resources: ReadonlyArray<string>,
  now: number
): Decision => {
  for (let held = holds; held !== undefined; held = held.next) {
    if (held.manager !== manager || !isLive(held, now)) continue
    const shared = resources.find((resource) => held.resources.includes(resource))
    if (shared === undefined) continue
    if (kind === "lock" || held.kind === "lock") {
      if (kind !== held.kind) continue // a lock and a read-write lock of one name are different resources
      return sameResources(resources, held.resources) ? { _tag: "Borrow", lock: held.lock } : { _tag: "SelfDeadlock", resource: shared, held: "lock" }
    }
    if (kind === "write" && held.kind === "read") return { _tag: "SelfDeadlock", resource: shared, held: "read" }
    return { _tag: "Borrow", lock: held.lock }
  }
  return acquire
}

/** The holds after a new one, without those that are over (so a fiber that acquires in a loop keeps a short list). */
export const withHold = (
  holds: Held | undefined,
  hold: Omit<Held, "next">,
  now: number
): Held => {
  const live: Array<Held> = []
  for (let held = holds; held !== undefined; held = held.next) if (isLive(held, now)) live.push(held)
  let next: Held | undefined
  for (let index = live.length - 1; index >= 0; index--) next = { ...live[index], next }
  return { ...hold, next }
}
