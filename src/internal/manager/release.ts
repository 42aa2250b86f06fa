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
import type * as MetricLabel from "effect/MetricLabel"
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

const isDeleted = (deleted: number) => deleted > 0

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
    isDeleted,
    timeout,
    undefined,
    clock
  )

/**
 * `releaseOn` for a refused attempt's undo (no announcement, the place in
 * line kept), as plain code over the nodes' promises; `done` once decided.
 */
export const undoWithPromises = (
  targets: ReadonlyArray<RedisNode>,
  keys: ReadonlyArray<string>,
  value: string,
  timeout: Duration.Duration,
  engine: FanOut.PromiseEngine,
  done: () => void
): void =>
  FanOut.sendWithPromises(
    targets,
    FanOut.call("release", keys, value, false, true),
    FanOut.atQuorum(targets, isDeleted, timeout, undefined),
    engine,
    done
  )

/**
 * The release's bookkeeping before anything is sent: `false` when the lock
 * was released already (nothing is sent again).
 */
const begin = (state: HeldLock, clock: Clock.Clock, labels: ReadonlyArray<MetricLabel.MetricLabel>): boolean => {
  if (state.released) return false
  state.released = true
  const remainingMillis = state.deadline - Monotonic.unsafeMonotonicMillis(clock)
  // Released after its validity ran out: it was lost before, unnoticed.
  if (remainingMillis <= 0) state.markLostQuietly("Expired")
  RedlockMetrics.remainingAtRelease.unsafeUpdate(Math.max(0, remainingMillis), labels)
  return true
}

const alreadyReleased: ReleaseResult = { status: "AlreadyReleased", released: 0, outcomes: [] }

const ended = (settings: Settings, state: HeldLock, { outcomes, yes }: FanOut.FanOutResult): ReleaseResult => {
  state.markLostQuietly("Released", outcomes)
  const status: ReleaseStatus = yes >= settings.quorum
    ? "Released"
    : Algorithm.majorityNotOurs(outcomes, settings.quorum)
    ? "NotHeld"
    : "Incomplete"
  return { status, released: yes, outcomes }
}

/** The release as plain code over the nodes' promises (see `FanOut.sendWithPromises`). */
export const releaseWithPromises = (
  settings: Settings,
  state: HeldLock,
  engine: FanOut.PromiseEngine,
  labels: ReadonlyArray<MetricLabel.MetricLabel>,
  done: (result: ReleaseResult) => void
): void => {
  if (!begin(state, engine.clock, labels)) return done(alreadyReleased)
  FanOut.sendWithPromises(
    settings.nodes,
    FanOut.call("release", state.keys, state.value, true),
    FanOut.atQuorum(settings.nodes, isDeleted, state.nodeTimeout, undefined),
    engine,
    (result) => done(ended(settings, state, result))
  )
}

export const release = (settings: Settings, lock: Lock.Lock): Effect.Effect<ReleaseResult> =>
  Effect.withFiberRuntime<ReleaseResult>((fiber) => {
    const state = held(settings, lock)
    const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
    const labels = fiber.getFiberRef(FiberRef.currentMetricLabels)
    const engine = FanOut.promiseEngine(settings.nodes, clock)
    const released: Effect.Effect<ReleaseResult> = engine !== undefined
      ? Effect.async((resume) =>
        releaseWithPromises(settings, state, engine, labels, (result) => resume(Effect.succeed(result)))
      )
      : begin(state, clock, labels)
      ? Effect.map(
        releaseOn(settings.nodes, state.keys, state.value, state.nodeTimeout, true, clock),
        (result) => ended(settings, state, result)
      )
      : Effect.succeed(alreadyReleased)
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
  Effect.flatMap(release(settings, lock), (result) => reportUnanswered(lock, result))

/**
 * `releaseFinalizer` for a lock acquired on the promise engine, untraced,
 * with what `release` would read from the closing fiber taken from the
 * acquisition: the release in one asynchronous step (a finalizer runs
 * uninterruptibly already). Every Effect caller's lock ends here.
 */
export const releaseFinalizerWithPromises = (
  settings: Settings,
  lock: HeldLock,
  engine: FanOut.PromiseEngine,
  labels: ReadonlyArray<MetricLabel.MetricLabel>
): Effect.Effect<void> =>
  Effect.async((resume) => releaseWithPromises(settings, lock, engine, labels, (result) => resume(reportUnanswered(lock, result))))

const reportUnanswered = (lock: HeldLock, result: ReleaseResult): Effect.Effect<void> => {
  const unanswered = result.outcomes.filter((o) => o._tag === "TimedOut" || o._tag === "Failed")
  if (unanswered.length === 0) return Effect.void
  const log = result.status === "Incomplete" ? Effect.logWarning : Effect.logDebug
  return log(
    `effect-redlock: release of ${lock.resources.join(", ")} did not reach ${unanswered.length} node(s); ` +
      `their keys expire within ${Duration.format(lock.ttl)}`
  ).pipe(Effect.annotateLogs({ outcomes: unanswered.map((o) => `${Outcome.describe(o)} after ${Math.round(o.millis)} ms`) }))
}
