/**
 * Releasing a held lock: the compare-and-delete on every node, and the
 * finalizer that runs it when the lock's scope closes.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import type * as MetricLabel from "effect/MetricLabel"
import type { Time } from "@effect-redlock/core/engine/time.js"
import type * as Lock from "../../Lock.js"
import type { ReleaseResult } from "../../Redlock.js"
import * as Engine from "@effect-redlock/core/engine/release.js"
import type { HeldLock } from "../lock.js"
import * as RedlockMetrics from "../metrics.js"
import * as Monotonic from "../monotonic.js"
import * as Messages from "@effect-redlock/core/engine/messages.js"
import * as Outcome from "@effect-redlock/core/engine/outcome.js"
import * as Tracing from "../tracing.js"
import { held, type Settings } from "./settings.js"

/**
 * The release's bookkeeping before anything is sent: `false` when the lock
 * was released already (nothing is sent again).
 */
const begin = (state: HeldLock, time: Time, labels: ReadonlyArray<MetricLabel.MetricLabel>): boolean => {
  if (state.released) return false
  state.released = true
  const remainingMillis = state.deadline - time.now()
  // Released after its validity ran out: it was lost before, unnoticed.
  if (remainingMillis <= 0) state.markLostQuietly("Expired")
  RedlockMetrics.remainingAtRelease.unsafeUpdate(Math.max(0, remainingMillis), labels)
  return true
}

const alreadyReleased: ReleaseResult = { status: "AlreadyReleased", released: 0, outcomes: [] }

/** The release of a held lock on every node (engine/release.ts), its state marked; `done` once decided. */
const send = (
  settings: Settings,
  state: HeldLock,
  time: Time,
  labels: ReadonlyArray<MetricLabel.MetricLabel>,
  done: (result: ReleaseResult) => void
): void => {
  if (!begin(state, time, labels)) return done(alreadyReleased)
  const { keys, nodeTimeoutMillis, value } = state
  Engine.release(
    settings.nodes,
    settings.quorum,
    keys,
    value,
    nodeTimeoutMillis,
    settings.nodeError,
    time,
    (result) => {
      state.markLostQuietly("Released", result.outcomes)
      done(result)
    }
  )
}

/** `send` as one asynchronous step, with its span where spans are recorded. */
const released = (
  settings: Settings,
  state: HeldLock,
  time: Time,
  labels: ReadonlyArray<MetricLabel.MetricLabel>,
  traced: boolean
): Effect.Effect<ReleaseResult> => {
  const release = Effect.async<ReleaseResult>((resume) =>
    send(settings, state, time, labels, (result) => resume(Effect.succeed(result)))
  )
  if (!traced) return release
  return Effect.withSpan(
    Effect.tap(
      release,
      ({ outcomes, status }) =>
        Effect.annotateCurrentSpan({ "redlock.status": status, "redlock.outcomes": Outcome.describeAll(outcomes) })
    ),
    "Redlock.release",
    { attributes: { "redlock.resources": state.resources }, ...Tracing.spanOptions }
  )
}

export const release = (settings: Settings, lock: Lock.Lock): Effect.Effect<ReleaseResult> =>
  Effect.withFiberRuntime<ReleaseResult>((fiber) => {
    const state = held(settings, lock)
    const time = Monotonic.timeOfFiber(fiber)
    return released(settings, state, time, fiber.getFiberRef(FiberRef.currentMetricLabels), Tracing.isRecorded(fiber))
  }).pipe(Effect.uninterruptible)

/**
 * Runs when the lock's scope closes (a finalizer runs uninterruptibly
 * already), with what `release` would read from the closing fiber taken
 * from the acquisition. A release that does not reach a node is not fatal
 * (the key expires), so it is reported in the log, never as an error that
 * could hide the result of the work done under the lock. It is a warning
 * when a majority did not confirm: the resource may then stay blocked
 * until the keys expire.
 */
export const finalizer = (
  settings: Settings,
  lock: HeldLock,
  time: Time,
  labels: ReadonlyArray<MetricLabel.MetricLabel>,
  traced: boolean
): Effect.Effect<void> =>
  traced
    ? Effect.flatMap(released(settings, lock, time, labels, traced), (result) => reportUnanswered(lock, result))
    // One asynchronous step: every hold of the Effect API runs it.
    : Effect.async<void>((resume) =>
      send(settings, lock, time, labels, (result) => resume(reportUnanswered(lock, result)))
    )

const reportUnanswered = (lock: HeldLock, result: ReleaseResult): Effect.Effect<void> => {
  const unanswered = result.outcomes.filter((o) => o._tag === "TimedOut" || o._tag === "Failed")
  if (unanswered.length === 0) return Effect.void
  const log = result.status === "Incomplete" ? Effect.logWarning : Effect.logDebug
  return log(Messages.releaseUnanswered(lock.resources, unanswered.length, Duration.format(lock.ttl))).pipe(
    Effect.annotateLogs({ outcomes: unanswered.map((o) => `${Outcome.describe(o)} after ${Math.round(o.millis)} ms`) })
  )
}
