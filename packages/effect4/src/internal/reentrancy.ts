/**
 * What each fiber holds (engine/reentrancy.ts), in a context reference set
 * on the fiber when it is granted a hold: a forked child inherits its
 * parent's holds; a joined child's holds stay its own.
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Reentrancy from "../engine/reentrancy.js"
import type { Lock } from "../Lock.js"
import { SelfDeadlock } from "../RedlockError.js"
import type { HeldLock } from "./lock.js"
import type { Settings } from "./settings.js"
import * as TimeOf from "./time.js"

const HoldsOfFiber = Context.Reference<Holds>("effect-redlock/HoldsOfFiber", { defaultValue: () => undefined })
type Holds = Reentrancy.Held | undefined

const resourcesOf = (input: unknown): ReadonlyArray<string> =>
  typeof input === "string" ? [input] : Array.isArray(input) ? input.filter((resource) => typeof resource === "string") : []

/**
 * `acquire` as the kind of hold it grants: served by the fiber's own hold
 * where that is the same, refused with SelfDeadlock where it would wait for
 * one, and otherwise acquired and remembered as the fiber's.
 */
export const guard = <I, O, E>(
  settings: Settings,
  kind: Reentrancy.HoldKind,
  acquire: (resources: I, options: O) => Effect.Effect<Lock, E, Scope.Scope>
) =>
(resourcesInput: I, options: O): Effect.Effect<Lock, E | SelfDeadlock, Scope.Scope> =>
  Effect.withFiber((fiber): Effect.Effect<Lock, E | SelfDeadlock, Scope.Scope> => {
    const holds = fiber.getRef(HoldsOfFiber)
    const resources = resourcesOf(resourcesInput)
    const time = TimeOf.timeOfFiber(fiber)
    if (holds !== undefined) {
      const decision = Reentrancy.decide(holds, settings.identity, kind, resources, time.now())
      if (decision._tag === "Borrow") return Effect.succeed(decision.lock as HeldLock)
      if (decision._tag === "SelfDeadlock") {
        // A read never waits for the fiber's own holds (decide): only a lock or a write is refused.
        return Effect.fail(new SelfDeadlock({ resource: decision.resource, held: decision.held, requested: kind as "lock" | "write" }))
      }
    }
    return Effect.tap(acquire(resourcesInput, options), (lock) =>
      Effect.withFiber((holder) => {
        const hold = { manager: settings.identity, kind, resources, lock: lock as HeldLock }
        holder.setContext(Context.add(holder.context, HoldsOfFiber, Reentrancy.withHold(holder.getRef(HoldsOfFiber), hold, time.now())))
        return Effect.void
      }))
  })

/** `guard` of reads, which it never refuses (a read of what the fiber holds is served by its hold). */
export const guardRead = <I, O, E>(
  settings: Settings,
  acquire: (resources: I, options: O) => Effect.Effect<Lock, E, Scope.Scope>
): (resourcesInput: I, options: O) => Effect.Effect<Lock, E, Scope.Scope> =>
  guard(settings, "read", acquire) as (resourcesInput: I, options: O) => Effect.Effect<Lock, E, Scope.Scope>
