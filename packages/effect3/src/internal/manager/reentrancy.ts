/**
 * What each fiber holds of read-write locks (engine/reentrancy.ts), in a
 * FiberRef: a forked child inherits its parent's holds, and a joined child's
 * holds stay its own.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import type * as Scope from "effect/Scope"
import * as Reentrancy from "@effect-redlock/core/engine/reentrancy.js"
import type * as Lock from "../../Lock.js"
import { SelfDeadlock } from "../errors.js"
import type { CallerHold, HeldLock } from "../lock.js"
import * as Monotonic from "../monotonic.js"
import type { Settings } from "./settings.js"

const holdsOfFiber = FiberRef.unsafeMake<Reentrancy.Held | undefined>(undefined, {
  fork: (holds) => holds,
  join: (parent) => parent
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
  acquire: (
    resource: string,
    options: O,
    ahead: boolean,
    hold: CallerHold | undefined
  ) => Effect.Effect<Lock.Lock, E, Scope.Scope>
) =>
(resource: string, options: O, hold?: CallerHold): Effect.Effect<Lock.Lock, E | SelfDeadlock, Scope.Scope> =>
  Effect.withFiberRuntime((fiber): Effect.Effect<Lock.Lock, E | SelfDeadlock, Scope.Scope> => {
    const holds = fiber.getFiberRef(holdsOfFiber)
    const time = Monotonic.timeOfFiber(fiber)
    const decision = holds === undefined
      ? undefined
      : Reentrancy.decide(holds, settings.identity, kind, resource, time.now())
    if (decision?._tag === "SelfDeadlock") {
      return Effect.fail(new SelfDeadlock({ resource, held: decision.held, requested: kind }))
    }
    return Effect.tap(
      acquire(resource, options, decision?._tag === "ReadAhead", hold),
      (lock) =>
        FiberRef.update(holdsOfFiber, (current) =>
          Reentrancy.withHold(
            current,
            { manager: settings.identity, kind, resource, lock: lock as HeldLock },
            time.now()
          ))
    )
  })
