/**
 * Releasing a held lock: the engine's release (engine/release.ts), one
 * `Effect.callback`.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Messages from "@effect-redlock/core/engine/messages.js"
import * as Outcome from "@effect-redlock/core/engine/outcome.js"
import * as Engine from "@effect-redlock/core/engine/release.js"
import type { Lock } from "../../Lock.js"
import type { ReleaseResult } from "../../Redlock.js"
import type { HeldLock } from "../lock.js"
import * as Metrics from "../metrics.js"
import * as Tracing from "../tracing.js"
import type { Settings } from "./settings.js"

const alreadyReleased: ReleaseResult = { status: "AlreadyReleased", released: 0, outcomes: [] }

/** A lock of this manager, or a defect: a lock is released and extended by the manager that granted it. */
export const own = (settings: Settings, lock: Lock): HeldLock => {
  const held = lock as HeldLock
  if (held.manager !== settings.identity) {
    throw new Error("effect-redlock: a lock is released and extended by the manager that acquired it")
  }
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

/** A release as a `Redlock.release` span, with what it found. */
const spanned = (lock: Lock, releasing: Effect.Effect<ReleaseResult>): Effect.Effect<ReleaseResult> =>
  Effect.withSpan(
    Effect.tap(releasing, ({ outcomes, status }) =>
      Effect.annotateCurrentSpan({ "redlock.status": status, "redlock.outcomes": Outcome.describeAll(outcomes) })),
    "Redlock.release",
    { attributes: { "redlock.resources": lock.resources } }
  )

/** `Redlock.release`: the release, as a span where a tracer records it. */
export const releaseTraced = (settings: Settings, lock: Lock): Effect.Effect<ReleaseResult> =>
  Effect.withFiber((fiber) =>
    Tracing.isRecorded(fiber) ? spanned(lock, release(settings, lock)) : release(settings, lock)
  )

/**
 * Runs when the lock's scope closes. A release that does not reach a node
 * is not fatal (the key expires), so it is reported in the log, never as an
 * error that could hide the result of the work done under the lock: a
 * warning when a majority did not confirm (the resource may then stay
 * blocked until the keys expire), else at debug level.
 */
export const finalizer = (settings: Settings, lock: HeldLock, traced: boolean): Effect.Effect<void> =>
  Effect.flatMap(traced ? spanned(lock, release(settings, lock)) : release(settings, lock), (result) => {
    const unanswered = result.outcomes.filter((outcome) => outcome._tag === "TimedOut" || outcome._tag === "Failed")
    if (unanswered.length === 0) return Effect.void
    const log = result.status === "Incomplete" ? Effect.logWarning : Effect.logDebug
    return log(Messages.releaseUnanswered(lock.resources, unanswered.length, Duration.format(lock.ttl))).pipe(
      Effect.annotateLogs({
        outcomes: unanswered.map((o) => `${Outcome.describe(o)} after ${Math.round(o.millis)} ms`)
      })
    )
  })
