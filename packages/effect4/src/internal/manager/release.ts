/**
 * Releasing a held lock: the engine's release (engine/release.ts), one
 * `Effect.callback`.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Engine from "@effect-redlock/core/engine/release.js"
import type { Lock } from "../../Lock.js"
import type { ReleaseResult } from "../../Redlock.js"
import type { HeldLock } from "../lock.js"
import * as Metrics from "../metrics.js"
import type { Settings } from "./settings.js"

const alreadyReleased: ReleaseResult = { status: "AlreadyReleased", released: 0, outcomes: [] }

/** A lock of this manager, or a defect: a lock is released and extended by the manager that granted it. */
export const own = (settings: Settings, lock: Lock): HeldLock => {
  const held = lock as HeldLock
  if (held.manager !== settings.identity) throw new Error("effect-redlock: a lock is released and extended by the manager that acquired it")
  return held
}

/**
 * Delete the lock's keys where they still hold its value, on every node,
 * announced to the waiters; once. Released after its validity ran out, the
 * lock was lost before, unnoticed: it is marked so.
 */
export const release = (settings: Settings, lock: Lock): Effect.Effect<ReleaseResult> =>
  Effect.suspend(() => {
    const held = own(settings, lock)
    if (held.released) return Effect.succeed(alreadyReleased)
    held.released = true
    const remainingMillis = held.deadline - held.time.now()
    // Released after its validity ran out: it was lost before, unnoticed.
    if (remainingMillis <= 0) held.markLostQuietly("Expired")
    Metrics.released(Math.max(0, remainingMillis))
    return Effect.callback<ReleaseResult>((resume) =>
      Engine.release(
        settings.nodes,
        settings.quorum,
        held.keys,
        held.value,
        held.nodeTimeoutMillis,
        settings.nodeError,
        held.time,
        (result) => {
          held.markLostQuietly("Released", result.outcomes)
          resume(Effect.succeed(result))
        }
      )
    )
  })
