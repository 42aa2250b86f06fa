/**
 * Acquiring a lock: attempts (one fan-out each, decided at quorum), the undo
 * of a refused attempt, waiting in line between attempts (waiting.ts), and
 * the held lock with its release registered in the caller's scope.
 *
 * @internal
 */
import type { NonEmptyReadonlyArray } from "effect/Array"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import { identity } from "effect/Function"
import * as LogLevel from "effect/LogLevel"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import type * as Lock from "../../Lock.js"
import type { TurnAnswer } from "../../RedisNode.js"
import type { AcquireOptions } from "../../Redlock.js"
import { type InvalidOptions, LockNotAcquired } from "../../RedlockError.js"
import * as RedlockMetrics from "../../RedlockMetrics.js"
import * as Algorithm from "../algorithm.js"
import * as Monotonic from "../monotonic.js"
import * as FanOut from "../fanOut.js"
import { HeldLock } from "../lock.js"
import * as LockValue from "../lockValue.js"
import * as Validate from "../validate.js"
import * as Outcome from "../outcome.js"
import * as Tracing from "../tracing.js"
import * as Waiting from "../waiting.js"
import * as Extension from "./extension.js"
import * as Fencing from "./fencing.js"
import * as Release from "./release.js"
import type { Settings } from "./settings.js"

const isGranted = (answer: TurnAnswer) => answer._tag === "Granted"

/**
 * An error made without a stack trace. Every refused attempt of a waiter makes
 * a LockNotAcquired (its retry schedule is fed with it); its stack would only
 * show the fiber runtime, and capturing it costs several times the rest of the
 * error (measured: 11 of 14 µs).
 */
const withoutStackTrace = <E>(make: () => E): E => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return make()
  } finally {
    Error.stackTraceLimit = limit
  }
}

// Acquire is on every caller's hot path: validation, the attempt and the
// bookkeeping are plain code inside as few effects as possible, and spans
// are made only where a tracer records them (internal/tracing.ts).
export const acquire = (settings: Settings) =>
(
  resourcesInput: string | NonEmptyReadonlyArray<string>,
  acquireOptions: AcquireOptions
): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired, Scope.Scope> =>
  Effect.withFiberRuntime((fiber) => {
    const { driftFactor, fairHandoff, keyPrefix, nodes, quarantineMillis, quorum } = settings
    const traced = Tracing.isRecorded(fiber)
    const request = parseAcquire(settings, resourcesInput, acquireOptions)
    if (Either.isLeft(request)) {
      return traced ? Effect.withSpan(Effect.fail(request.left), "Redlock.acquire", Tracing.spanOptions) : Effect.fail(request.left)
    }
    const { maxHoldMillis, nodeTimeout, resources, schedule, ttlMillis } = request.right
    const keys = resources.map((resource) => keyPrefix + resource) as unknown as NonEmptyReadonlyArray<string>
    const value = LockValue.unsafeMake()
    const scope = Context.get(fiber.currentContext as Context.Context<Scope.Scope>, Scope.Scope)
    const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
    const firstStart = Monotonic.unsafeMonotonicMillis(clock)
    let attempts = 0
    // Waiting in line (fairHandoff): the place is the time of the first attempt; a
    // place is held for a lease that outlasts the wait until the next attempt.
    const ticket = clock.unsafeCurrentTimeMillis()
    const nodeTimeoutMillis = Duration.toMillis(nodeTimeout)
    // Whole milliseconds: a jittered schedule's interval is fractional, and PEXPIRE refuses fractions.
    // No place for a waiter whose last attempt reached fewer than a quorum of nodes (see `refused`).
    const lease = (intervalMillis: number) =>
      fairHandoff && reachedQuorum
        ? Math.ceil(Math.min(ttlMillis, Math.max(250, 2 * intervalMillis) + 2 * nodeTimeoutMillis))
        : 0
    let reachedQuorum = true
    let joined = false
    let holderGoneAt: number | undefined
    let leaseEndsAt: number | undefined

    const granted = (result: FanOut.FanOutResult, validityMillis: number): Effect.Effect<Lock.Lock> => {
      const lock = new HeldLock({
        resources,
        keys,
        value,
        ttl: Duration.millis(ttlMillis),
        validity: Duration.millis(validityMillis),
        validUntilMillis: result.endMillis + validityMillis,
        attempts,
        outcomes: result.outcomes,
        nodeTimeout,
        acquiredAtMillis: result.endMillis
      })
      lock.issueFencingTokens = Fencing.issueFencingTokens(settings)
      lock.manager = settings.identity
      const registered = Scope.addFinalizer(scope, Release.releaseFinalizer(settings, lock))
      // Forked after the release is registered: finalizers run last in,
      // first out, so extension stops before the release runs.
      return maxHoldMillis === undefined
        ? Effect.as(registered, lock)
        : Effect.as(Effect.zipRight(registered, Effect.forkIn(Extension.autoExtend(settings, lock, maxHoldMillis), scope)), lock)
    }

    const refused = (result: FanOut.FanOutResult<boolean | TurnAnswer>): Effect.Effect<never, LockNotAcquired> => {
      const { late, outcomes, yes } = result
      holderGoneAt = holderGone(result)
      // A waiter that reached fewer than a quorum of nodes (the others
      // failed or timed out) cannot win now, so it holds no place in line
      // until it reaches a quorum again; its places run out with their
      // lease. Two such waiters over a majority of the lines would
      // otherwise keep a free resource from everyone for as long as they
      // retry.
      let reached = 0
      for (const outcome of outcomes) if (outcome._tag !== "Failed" && outcome._tag !== "TimedOut") reached++
      reachedQuorum = reached >= quorum
      // Undo what this attempt may have set, keeping its place in line. A
      // node that answered Held did not take the key, and earlier attempts
      // were undone in order on the same node: skip it. A node whose answer
      // is still to come is undone when it comes, only if it took the key:
      // most refused attempts of a waiter then send nothing more.
      const pending = (index: number) =>
        late !== undefined && (outcomes[index]._tag === "NotAwaited" || outcomes[index]._tag === "TimedOut")
      const maybeSet = nodes.filter((_, index) => outcomes[index]._tag !== "Held" && !pending(index))
      if (late !== undefined) undoLate(late, attempts)
      const undone = maybeSet.length === 0
        ? Effect.void
        : Release.releaseOn(maybeSet, keys, value, nodeTimeout, false, clock, true)
      return undone.pipe(
        // Every waiter's refused attempt passes here: the message is built only when debug logs are on.
        Effect.zipRight(
          fiber.getFiberRef(FiberRef.currentMinimumLogLevel).ordinal > LogLevel.Debug.ordinal
            ? Effect.void
            : Effect.logDebug(
              `effect-redlock: attempt ${attempts} on ${resources.join(", ")}: ${yes} of ${quorum} needed ` +
                `(${Outcome.describeAll(outcomes)})`
            )
        ),
        Effect.zipRight(Effect.fail(withoutStackTrace(() =>
          new LockNotAcquired({
            resources,
            reason: yes >= quorum ? "ValidityExpired" : "NoQuorum",
            attempts,
            elapsedMillis: Monotonic.unsafeMonotonicMillis(clock) - firstStart,
            quorum,
            outcomes
          }, true)
        )))
      )
    }

    // A late answer that took the key is undone on its node at once, but
    // only while no later attempt was sent: the undo then lands before that
    // attempt on the node, and can never delete a key a later attempt
    // counted. A late failure is left alone (it may not have run; if it
    // did, the key expires with its ttl), as is a late answer once a later
    // attempt was sent (that attempt saw the key as held).
    const undoLate = (late: FanOut.Late, attempt: number) =>
      late.forEach((index, tookKey) => {
        if (tookKey !== true || attempts !== attempt) return
        nodes[index].promises!.release(keys, value, false, true).then(undefined, () => undefined)
      })

    // One attempt and the registration of its release are one unit: the
    // fan-out alone is interruptible, and whatever happens to it, either the
    // lock's release is in the scope or every node was asked to release.
    const attempt = (leaseMillis: number) => Effect.uninterruptibleMask((restore) => {
      attempts++
      if (leaseMillis > 0) joined = true
      leaseEndsAt = leaseMillis > 0 ? Monotonic.unsafeMonotonicMillis(clock) + leaseMillis : undefined
      const fanOut: Effect.Effect<FanOut.FanOutResult<boolean | TurnAnswer>> = fairHandoff
        ? FanOut.untilDecided(
          nodes,
          FanOut.call("acquireInTurn", keys, value, ttlMillis, { ticket, leaseMillis }),
          isGranted,
          nodeTimeout,
          quarantineMillis,
          clock
        )
        : FanOut.untilDecided(
          nodes,
          FanOut.call("acquire", keys, value, ttlMillis),
          identity,
          nodeTimeout,
          quarantineMillis,
          clock
        )
      return Effect.matchCauseEffect(
        restore(fanOut),
        {
          onFailure: (cause) =>
            Effect.zipRight(leaveEverywhere(), Effect.suspend(() => (joined = false, Effect.failCause(cause)))),
          onSuccess: (result): Effect.Effect<Lock.Lock, LockNotAcquired> => {
            const validityMillis = Algorithm.validity(ttlMillis, result.endMillis - result.startMillis, driftFactor)
            const decided = result.yes >= quorum && validityMillis > 0
              ? granted(result, validityMillis)
              : refused(result)
            return traced
              ? Effect.zipRight(
                Effect.annotateCurrentSpan({
                  "redlock.attempt": attempts,
                  "redlock.granted": result.yes,
                  "redlock.outcomes": Outcome.describeAll(result.outcomes)
                }),
                decided
              )
              : decided
          }
        }
      )
    })

    const oneAttempt = (leaseMillis: number) =>
      traced ? Effect.withSpan(attempt(leaseMillis), "Redlock.attempt", Tracing.spanOptions) : attempt(leaseMillis)
    // When (monotonic) the keys of the holder seen by the last attempt have
    // run out on enough nodes for a quorum; none when the keys are free on a
    // majority already, or never expire.
    const holderGone = (result: FanOut.FanOutResult<boolean | TurnAnswer>): number | undefined => {
      const ttls: Array<number> = []
      let free = 0
      result.answers.forEach((answer) => {
        if (typeof answer !== "object") return
        if (answer._tag !== "Held") free++
        else if (answer.ttlMillis !== undefined) ttls.push(answer.ttlMillis)
      })
      const needed = quorum - free
      if (needed <= 0 || ttls.length < needed) return undefined
      return Monotonic.unsafeMonotonicMillis(clock) + ttls.sort((a, b) => a - b)[needed - 1] + 1
    }
    // A waiter that gives up (or is interrupted) leaves every line it joined:
    // every node is asked, and answers awaited (each within the node timeout),
    // so that it no longer stands before anyone once acquire returns. Built
    // only when needed: most acquisitions never leave a line.
    const leaveEverywhere = () => FanOut.all(nodes, FanOut.call("release", keys, value, false), nodeTimeout)
    // An acquisition that ended with a lock or a LockNotAcquired is measured; an interrupted one is not.
    const measure = (failure: LockNotAcquired | undefined): void => {
      const labels = fiber.getFiberRef(FiberRef.currentMetricLabels)
      if (failure === undefined) RedlockMetrics.acquisitions.unsafeUpdate(1, labels)
      else RedlockMetrics.acquireFailures.unsafeUpdate(1, [...labels, MetricLabel.make("reason", failure.reason)])
      RedlockMetrics.acquireDuration.unsafeUpdate(Monotonic.unsafeMonotonicMillis(clock) - firstStart, labels)
      RedlockMetrics.attemptsPerAcquire.unsafeUpdate(attempts, labels)
    }
    const succeeded = (lock: Lock.Lock): Effect.Effect<Lock.Lock> => {
      measure(undefined)
      return Effect.succeed(lock)
    }
    // Ended without a lock: leave the lines joined, if any, then fail as the acquisition did.
    const failed = (cause: Cause.Cause<LockNotAcquired>): Effect.Effect<never, LockNotAcquired> => {
      const ended = Effect.suspend(() => {
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure)) measure(failure.value)
        return Effect.failCause(cause)
      })
      return joined ? Effect.zipRight(leaveEverywhere(), ended) : ended
    }
    // Around the whole acquisition, uninterruptible between its steps, so
    // that no moment between attempts escapes the leave and the metrics.
    // Written with matchCauseEffect, not catchAll and onExit: what those
    // allocate on each call is kept alive by objects V8 places in the old
    // generation, which doubled what every scavenge promoted (sequential:
    // ~600 KB against ~310 KB; bench/README.md).
    const measured = Effect.uninterruptibleMask((restore) =>
      Effect.matchCauseEffect(restore(oneAttempt(schedule === Schedule.stop ? 0 : lease(0))), {
        onSuccess: succeeded,
        onFailure: (cause) => {
          const refusal = Cause.failureOption(cause)
          if (Option.isNone(refusal)) return failed(cause)
          return Effect.matchCauseEffect(
            restore(Waiting.retry({
              attempt: oneAttempt,
              error: refusal.value,
              schedule,
              nodes,
              keys,
              value,
              quorum,
              watch: settings.announcesReleases,
              lease,
              holderGoneAt: () => holderGoneAt,
              leaseEndsAt: () => leaseEndsAt,
              nodeTimeout
            })),
            { onSuccess: succeeded, onFailure: failed }
          )
        }
      })
    )
    if (!traced) return measured
    return Effect.withSpan(
      Effect.tap(
        Effect.zipRight(
          Effect.annotateCurrentSpan({ "redlock.resources": resources, "redlock.ttl_ms": ttlMillis }),
          Effect.tapError(measured, () => Effect.annotateCurrentSpan("redlock.attempts", attempts))
        ),
        (lock) =>
          Effect.annotateCurrentSpan({ "redlock.attempts": attempts, "redlock.validity_ms": Duration.toMillis(lock.validity) })
      ),
      "Redlock.acquire",
      Tracing.spanOptions
    )
  })

/** The options of one acquisition, checked, with the manager's defaults filled in. */
const parseAcquire = (settings: Settings, resourcesInput: unknown, acquireOptions: AcquireOptions) => {
  const { defaultNodeTimeout, defaultSchedule, driftFactor, maxTtlMillis } = settings
  const resources = Validate.resources(resourcesInput)
  if (Either.isLeft(resources)) return Either.left(resources.left)
  const timing = Validate.timing(acquireOptions.ttl, acquireOptions.nodeTimeout ?? defaultNodeTimeout, driftFactor, maxTtlMillis)
  if (Either.isLeft(timing)) return Either.left(timing.left)
  const maxHoldMillis = Validate.autoExtend(acquireOptions.autoExtend)
  if (Either.isLeft(maxHoldMillis)) return Either.left(maxHoldMillis.left)
  return Either.right({
    resources: resources.right,
    ttlMillis: timing.right.ttlMillis,
    nodeTimeout: Duration.millis(timing.right.nodeTimeoutMillis),
    maxHoldMillis: maxHoldMillis.right,
    schedule: acquireOptions.retry ?? defaultSchedule
  })
}

