/**
 * What each fiber holds of read-write locks (engine/reentrancy.ts), in a
 * context reference set on the fiber when it is granted a hold: a forked
 * child inherits its parent's holds; a joined child's holds stay its own.
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Reentrancy from "@effect-redlock/core/engine/reentrancy.js"
import type { Lock } from "../../Lock.js"
import { SelfDeadlock } from "../errors.js"
import type { HeldLock } from "../lock.js"
import type { Settings } from "./settings.js"
import * as TimeOf from "../monotonic.js"

const HoldsOfFiber = Context.Reference<Reentrancy.Held | undefined>("effect-redlock/HoldsOfFiber", {
  defaultValue: () => undefined
})

/**
 * A read or write acquisition (`acquire`, told whether to stand ahead of the
 * line) checked against the fiber's holds: refused with SelfDeadlock where
 * it would wait for one of them, and otherwise acquired and remembered as
 * the fiber's.
 */
export const guard = <O, E>(
  settings: Settings,
  kind: Reentrancy.HoldKind,
  acquire: (resource: string, options: O, ahead: boolean) => Effect.Effect<Lock, E, Scope.Scope>
) =>
(resource: string, options: O): Effect.Effect<Lock, E | SelfDeadlock, Scope.Scope> =>
  Effect.withFiber((fiber): Effect.Effect<Lock, E | SelfDeadlock, Scope.Scope> => {
    const holds = fiber.getRef(HoldsOfFiber)
    const time = TimeOf.timeOfFiber(fiber)
    const decision = holds === undefined
      ? undefined
      : Reentrancy.decide(holds, settings.identity, kind, resource, time.now())
    if (decision?._tag === "SelfDeadlock") {
      return Effect.fail(new SelfDeadlock({ resource, held: decision.held, requested: kind }))
    }
    return Effect.tap(
      acquire(resource, options, decision?._tag === "ReadAhead"),
      (lock) =>
        Effect.withFiber((holder) => {
          const hold = { manager: settings.identity, kind, resource, lock: lock as HeldLock }
          holder.setContext(
            Context.add(
              holder.context,
              HoldsOfFiber,
              Reentrancy.withHold(holder.getRef(HoldsOfFiber), hold, time.now())
            )
          )
          return Effect.void
        })
    )
  })
