/**
 * What each fiber holds (engine/reentrancy.ts), in a FiberRef: a forked
 * child inherits its parent's holds, and a joined child's holds stay its own
 * (a lock a child took is not the parent's to be served by).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import type * as Scope from "effect/Scope"
import * as Reentrancy from "../../engine/reentrancy.js"
import type * as Lock from "../../Lock.js"
import { SelfDeadlock } from "../errors.js"
import type { HeldLock } from "../lock.js"
import * as Monotonic from "../monotonic.js"
import type { Settings } from "./settings.js"

const holdsOfFiber = FiberRef.unsafeMake<Reentrancy.Held | undefined>(undefined, {
  fork: (holds) => holds,
  join: (parent) => parent
})

const resourcesOf = (input: unknown): ReadonlyArray<string> =>
  typeof input === "string" ? [input] : Array.isArray(input) ? input.filter((resource) => typeof resource === "string") : []

/**
 * `acquire` as the kind of hold it grants: served by the fiber's own hold
 * where that is the same, refused with SelfDeadlock where it would wait for
 * one, and otherwise acquired and remembered as the fiber's.
 */
/** `guard` of reads, which it never refuses (a read of what the fiber holds is served by its hold). */
export const guardRead = <I, O, E>(
  settings: Settings,
  acquire: (resources: I, options: O) => Effect.Effect<Lock.Lock, E, Scope.Scope>
): (resourcesInput: I, options: O) => Effect.Effect<Lock.Lock, E, Scope.Scope> =>
  guard(settings, "read", acquire) as (resourcesInput: I, options: O) => Effect.Effect<Lock.Lock, E, Scope.Scope>

export const guard = <I, O, E>(
  settings: Settings,
  kind: Reentrancy.HoldKind,
  acquire: (resources: I, options: O) => Effect.Effect<Lock.Lock, E, Scope.Scope>
) =>
(resourcesInput: I, options: O): Effect.Effect<Lock.Lock, E | SelfDeadlock, Scope.Scope> =>
  Effect.withFiberRuntime((fiber): Effect.Effect<Lock.Lock, E | SelfDeadlock, Scope.Scope> => {
    const holds = fiber.getFiberRef(holdsOfFiber)
    const resources = resourcesOf(resourcesInput)
    const time = Monotonic.timeOfFiber(fiber)
    if (holds !== undefined) {
      const decision = Reentrancy.decide(holds, settings.identity, kind, resources, time.now())
      if (decision._tag === "Borrow") return Effect.succeed(decision.lock as HeldLock)
      if (decision._tag === "SelfDeadlock") {
        // A read never waits for the fiber's own holds (decide): only a lock or a write is refused.
        return Effect.fail(new SelfDeadlock({ resource: decision.resource, held: decision.held, requested: kind as "lock" | "write" }))
      }
    }
    return Effect.tap(acquire(resourcesInput, options), (lock) =>
      FiberRef.update(holdsOfFiber, (current) =>
        Reentrancy.withHold(current, { manager: settings.identity, kind, resources, lock: lock as HeldLock }, time.now())))
  })
