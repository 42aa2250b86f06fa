/**
 * What a fiber holds of read-write locks, so that it does not wait for
 * itself. Before, a reader that asked for the write lock of its resource
 * waited for its own read until its schedule ended, and a reader that asked
 * for another read while a writer waited in line (behind its first read)
 * waited for the writer, which waited for it.
 *
 * Each shell keeps a fiber's holds (newest first) in a fiber-local value
 * that its children inherit (a child waiting for its parent's hold, while
 * the parent waits for the child, is the same deadlock); a hold is dropped
 * once its lock is released, lost or past its deadline. The rules
 * (`decide`):
 * - a write of a resource the fiber holds for reading (an upgrade) or for
 *   writing, or a read of one it holds for writing, would wait for its own
 *   hold: refused at once (`SelfDeadlock`);
 * - another read of a resource it holds for reading is acquired ahead of
 *   the line (`ReadAhead`): the fiber is inside already, and a writer
 *   waiting behind its first read waits for it either way.
 * Plain locks and semaphore permits are not tracked: a fiber that asks again
 * for a lock it holds waits as any client does (and a second permit of a
 * resource is a permit like any other).
 *
 * @internal
 */
import type { Holding } from "./holding.js"

/** How a resource is held: a read or a write of a read-write lock. */
export type HoldKind = "read" | "write"

/** One hold of a fiber: its manager, kind, resource and lock; `next` the older holds. */
export interface Held {
  /** The lock manager's identity (compared as a reference). */
  readonly manager: unknown
  readonly kind: HoldKind
  readonly resource: string
  readonly lock: Holding
  readonly next: Held | undefined
}

/** What to do with an acquisition, given what its fiber holds. */
export type Decision =
  | { readonly _tag: "Acquire" }
  | { readonly _tag: "ReadAhead" }
  | { readonly _tag: "SelfDeadlock"; readonly held: HoldKind }

const acquire: Decision = { _tag: "Acquire" }

/** See the rules above. `now`: the monotonic time the locks' deadlines are on. */
export const decide = (
  holds: Held | undefined,
  manager: unknown,
  kind: HoldKind,
  resource: string,
  now: number
): Decision => {
  for (let held = holds; held !== undefined; held = held.next) {
    if (held.manager !== manager || held.resource !== resource || !held.lock.isHeldAt(now)) continue
    return kind === "read" && held.kind === "read" ? { _tag: "ReadAhead" } : { _tag: "SelfDeadlock", held: held.kind }
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
  for (let held = holds; held !== undefined; held = held.next) if (held.lock.isHeldAt(now)) live.push(held)
  let next: Held | undefined
  for (let index = live.length - 1; index >= 0; index--) next = { ...live[index], next }
  return { ...hold, next }
}
