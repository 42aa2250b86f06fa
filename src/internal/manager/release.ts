/**
 * Releasing a held lock: the compare-and-delete on every node, and the
 * finalizer that runs it when the lock's scope closes.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import type * as Lock from "../../Lock.js"
import type { RedisNode } from "../../RedisNode.js"
import type { ReleaseResult, ReleaseStatus } from "../../Redlock.js"
import * as Algorithm from "../algorithm.js"
import * as FanOut from "../fanOut.js"
import type { HeldLock } from "../lock.js"
import * as RedlockMetrics from "../metrics.js"
import * as Monotonic from "../monotonic.js"
import * as Outcome from "../outcome.js"
import * as Tracing from "../tracing.js"
import { held, type Settings } from "./settings.js"

// Release returns once a majority of the nodes asked deleted our keys, or
// once that can no longer happen. The other nodes were sent the release too;
// it lands in order on each of them, so not waiting for their answer loses
// nothing, and a down node does not slow every release down.
export const releaseOn = (
  targets: ReadonlyArray<RedisNode>,
  keys: ReadonlyArray<string>,
  value: string,
  timeout: Duration.Duration,
  announce: boolean,
  clock?: Clock.Clock,
  keepPlace?: boolean
) =>
  FanOut.untilDecided(
    targets,
    FanOut.call("release", keys, value, announce, keepPlace),
    (deleted) => deleted > 0,
    timeout,
    undefined,
    clock
  )

export const release = (settings: Settings, lock: Lock.Lock): Effect.Effect<ReleaseResult> =>
  Effect.withFiberRuntime<ReleaseResult>((fiber) => {
    const state = held(settings, lock)
    if (state.released) return Effect.succeed({ status: "AlreadyReleased", released: 0, outcomes: [] })
    state.released = true
    const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
    const sent = Monotonic.unsafeMonotonicMillis(clock)
    const remainingMillis = state.deadline - sent
    // Released after its validity ran out: it was lost before, unnoticed.
    if (remainingMillis <= 0) state.markLostQuietly("Expired")
    RedlockMetrics.remainingAtRelease.unsafeUpdate(
      Math.max(0, remainingMillis),
      fiber.getFiberRef(FiberRef.currentMetricLabels)
    )
    const released = Effect.map(
      releaseOn(settings.nodes, state.keys, state.value, state.nodeTimeout, true, clock),
      ({ outcomes, yes }): ReleaseResult => {
        state.markLostQuietly("Released", outcomes)
        const status: ReleaseStatus = yes >= settings.quorum
          ? "Released"
          : Algorithm.majorityNotOurs(outcomes, settings.quorum)
          ? "NotHeld"
          : "Incomplete"
        return { status, released: yes, outcomes }
      }
    )
    if (!Tracing.isRecorded(fiber)) return released
    return Effect.withSpan(
      Effect.tap(released, ({ outcomes, status }) =>
        Effect.annotateCurrentSpan({ "redlock.status": status, "redlock.outcomes": Outcome.describeAll(outcomes) })),
      "Redlock.release",
      { attributes: { "redlock.resources": state.resources }, ...Tracing.spanOptions }
    )
  }).pipe(Effect.uninterruptible)

// Runs when the lock's scope closes. A release that does not reach a node is
// not fatal (the key expires), so it is reported in the log, never as an
// error that could hide the result of the work done under the lock. It is a
// warning when a majority did not confirm: the resource may then stay
// blocked until the keys expire.
export const releaseFinalizer = (settings: Settings, lock: HeldLock) =>
  Effect.flatMap(release(settings, lock), (result) => {
    const unanswered = result.outcomes.filter((o) => o._tag === "TimedOut" || o._tag === "Failed")
    if (unanswered.length === 0) return Effect.void
    const log = result.status === "Incomplete" ? Effect.logWarning : Effect.logDebug
    return log(
      `effect-redlock: release of ${lock.resources.join(", ")} did not reach ${unanswered.length} node(s); ` +
        `their keys expire within ${Duration.format(lock.ttl)}`
    ).pipe(Effect.annotateLogs({ outcomes: unanswered.map((o) => `${Outcome.describe(o)} after ${Math.round(o.millis)} ms`) }))
  })
