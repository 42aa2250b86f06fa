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
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import { identity } from "effect/Function"
import * as LogLevel from "effect/LogLevel"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import type * as Lock from "../../Lock.js"
import type { RedisNode, TurnAnswer } from "../../RedisNode.js"
import type { AcquireOptions } from "../../Redlock.js"
import * as Algorithm from "../algorithm.js"
import { type InvalidOptions, LockNotAcquired } from "../errors.js"
import * as FanOut from "../fanOut.js"
import { HeldLock, type LockFields } from "../lock.js"
import * as LockValue from "../lockValue.js"
import * as RedlockMetrics from "../metrics.js"
import * as Monotonic from "../monotonic.js"
import * as Outcome from "../outcome.js"
import * as Tracing from "../tracing.js"
import * as Validate from "../validate.js"
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
export const acquire = (settings: Settings) => {
  // One per manager: every lock it grants issues its tokens with it.
  const issueFencingTokens = Fencing.issueFencingTokens(settings)
  return (
    resourcesInput: string | NonEmptyReadonlyArray<string>,
    acquireOptions: AcquireOptions
  ): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired, Scope.Scope> =>
    Effect.withFiberRuntime((fiber) => {
      const traced = Tracing.isRecorded(fiber)
      const request = parseAcquire(settings, resourcesInput, acquireOptions)
      if (Either.isRight(request)) {
        return new Acquisition(settings, issueFencingTokens, fiber, traced, request.right).run()
      }
      return traced
        ? Effect.withSpan(Effect.fail(request.left), "Redlock.acquire", Tracing.spanOptions)
        : Effect.fail(request.left)
    })
}

type Request = Either.Either.Right<ReturnType<typeof parseAcquire>>

/**
 * One acquisition: its attempts and the state they share, read by the
 * waiting between attempts (waiting.ts) as it is after each attempt.
 */
class Acquisition implements Waiting.Waiter<Lock.Lock> {
  readonly nodes: ReadonlyArray<RedisNode>
  readonly quorum: number
  readonly watch: boolean
  readonly keys: NonEmptyReadonlyArray<string>
  readonly value = LockValue.unsafeMake()
  readonly nodeTimeout: Duration.Duration
  private readonly nodeTimeoutMillis: number
  private readonly scope: Scope.Scope
  private readonly clock: Clock.Clock
  private readonly firstStart: number
  // Waiting in line (fairHandoff): the place is the time of the first attempt; a
  // place is held for a lease that outlasts the wait until the next attempt.
  private readonly ticket: number
  private attempts = 0
  /** Whether an attempt took a place in line: an acquisition that ends without a lock leaves the lines. */
  private joined = false
  /** Whether the last attempt reached a quorum of nodes (see `refused`). */
  private reachedQuorum = true
  holderGoneAt: number | undefined = undefined
  leaseEndsAt: number | undefined = undefined

  constructor(
    private readonly settings: Settings,
    private readonly issueFencingTokens: LockFields["issueFencingTokens"],
    private readonly fiber: Fiber.RuntimeFiber<unknown, unknown>,
    private readonly traced: boolean,
    private readonly request: Request
  ) {
    this.nodes = settings.nodes
    this.quorum = settings.quorum
    this.watch = settings.announcesReleases
    this.keys = request.resources.map((resource) => settings.keyPrefix + resource) as unknown as NonEmptyReadonlyArray<
      string
    >
    this.nodeTimeout = request.nodeTimeout
    this.nodeTimeoutMillis = Duration.toMillis(request.nodeTimeout)
    this.scope = Context.get(fiber.currentContext as Context.Context<Scope.Scope>, Scope.Scope)
    this.clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
    this.firstStart = Monotonic.unsafeMonotonicMillis(this.clock)
    this.ticket = this.clock.unsafeCurrentTimeMillis()
  }

  // Whole milliseconds: a jittered schedule's interval is fractional, and PEXPIRE refuses fractions.
  // No place for a waiter whose last attempt reached fewer than a quorum of nodes (see `refused`).
  lease(intervalMillis: number): number {
    if (!this.settings.fairHandoff || !this.reachedQuorum) return 0
    return Math.ceil(Math.min(this.request.ttlMillis, Math.max(250, 2 * intervalMillis) + 2 * this.nodeTimeoutMillis))
  }

  attempt(leaseMillis: number): Effect.Effect<Lock.Lock, LockNotAcquired> {
    return this.traced
      ? Effect.withSpan(this.oneAttempt(leaseMillis), "Redlock.attempt", Tracing.spanOptions)
      : this.oneAttempt(leaseMillis)
  }

  /** The whole acquisition: the first attempt, then the waiting and the retries; measured. */
  run(): Effect.Effect<Lock.Lock, LockNotAcquired> {
    const { resources, schedule, ttlMillis } = this.request
    const succeeded = (lock: Lock.Lock): Effect.Effect<Lock.Lock> => {
      this.measure(undefined)
      return Effect.succeed(lock)
    }
    const failed = (cause: Cause.Cause<LockNotAcquired>) => this.failed(cause)
    // Around the whole acquisition, uninterruptible between its steps, so
    // that no moment between attempts escapes the leave and the metrics.
    // Written with matchCauseEffect, not catchAll and onExit: what those
    // allocate on each call is kept alive by objects V8 places in the old
    // generation, which doubled what every scavenge promoted (sequential:
    // ~600 KB against ~310 KB; bench/README.md).
    const measured = Effect.uninterruptibleMask((restore) =>
      Effect.matchCauseEffect(restore(this.attempt(schedule === Schedule.stop ? 0 : this.lease(0))), {
        onSuccess: succeeded,
        onFailure: (cause) => {
          const refusal = Cause.failureOption(cause)
          if (Option.isNone(refusal)) return failed(cause)
          return Effect.matchCauseEffect(restore(Waiting.untilGranted(this, refusal.value, schedule)), {
            onSuccess: succeeded,
            onFailure: failed
          })
        }
      })
    )
    if (!this.traced) return measured
    return Effect.withSpan(
      Effect.tap(
        Effect.zipRight(
          Effect.annotateCurrentSpan({ "redlock.resources": resources, "redlock.ttl_ms": ttlMillis }),
          Effect.tapError(measured, () => Effect.annotateCurrentSpan("redlock.attempts", this.attempts))
        ),
        (lock) =>
          Effect.annotateCurrentSpan({ "redlock.attempts": this.attempts, "redlock.validity_ms": Duration.toMillis(lock.validity) })
      ),
      "Redlock.acquire",
      Tracing.spanOptions
    )
  }

  // One attempt and the registration of its release are one unit: the
  // fan-out alone is interruptible, and whatever happens to it, either the
  // lock's release is in the scope or every node was asked to release.
  private oneAttempt(leaseMillis: number): Effect.Effect<Lock.Lock, LockNotAcquired> {
    return Effect.uninterruptibleMask((restore) => {
      const { driftFactor, fairHandoff, quarantineMillis } = this.settings
      const { ttlMillis } = this.request
      this.attempts++
      if (leaseMillis > 0) this.joined = true
      this.leaseEndsAt = leaseMillis > 0 ? Monotonic.unsafeMonotonicMillis(this.clock) + leaseMillis : undefined
      const fanOut: Effect.Effect<FanOut.FanOutResult<boolean | TurnAnswer>> = fairHandoff
        ? FanOut.untilDecided(
          this.nodes,
          FanOut.call("acquireInTurn", this.keys, this.value, ttlMillis, { ticket: this.ticket, leaseMillis }),
          isGranted,
          this.nodeTimeout,
          quarantineMillis,
          this.clock
        )
        : FanOut.untilDecided(
          this.nodes,
          FanOut.call("acquire", this.keys, this.value, ttlMillis),
          identity,
          this.nodeTimeout,
          quarantineMillis,
          this.clock
        )
      return Effect.matchCauseEffect(
        restore(fanOut),
        {
          onFailure: (cause) =>
            Effect.zipRight(this.leaveEverywhere(), Effect.suspend(() => (this.joined = false, Effect.failCause(cause)))),
          onSuccess: (result): Effect.Effect<Lock.Lock, LockNotAcquired> => {
            const validityMillis = Algorithm.validity(ttlMillis, result.endMillis - result.startMillis, driftFactor)
            const decided = result.yes >= this.quorum && validityMillis > 0
              ? this.granted(result, validityMillis)
              : this.refused(result)
            return this.traced
              ? Effect.zipRight(
                Effect.annotateCurrentSpan({
                  "redlock.attempt": this.attempts,
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
  }

  private granted(result: FanOut.FanOutResult, validityMillis: number): Effect.Effect<Lock.Lock> {
    const { maxHoldMillis, resources, ttlMillis } = this.request
    const lock = new HeldLock({
      resources,
      keys: this.keys,
      value: this.value,
      ttl: Duration.millis(ttlMillis),
      validity: Duration.millis(validityMillis),
      validUntilMillis: result.endMillis + validityMillis,
      attempts: this.attempts,
      outcomes: result.outcomes,
      nodeTimeout: this.nodeTimeout,
      acquiredAtMillis: result.endMillis,
      manager: this.settings.identity,
      issueFencingTokens: this.issueFencingTokens
    })
    const registered = Scope.addFinalizer(this.scope, Release.releaseFinalizer(this.settings, lock))
    // Forked after the release is registered: finalizers run last in,
    // first out, so extension stops before the release runs.
    return maxHoldMillis === undefined
      ? Effect.as(registered, lock)
      : Effect.as(
        Effect.zipRight(registered, Effect.forkIn(Extension.autoExtend(this.settings, lock, maxHoldMillis), this.scope)),
        lock
      )
  }

  private refused(result: FanOut.FanOutResult<boolean | TurnAnswer>): Effect.Effect<never, LockNotAcquired> {
    const { late, outcomes, yes } = result
    const { quorum } = this
    const { resources } = this.request
    this.holderGoneAt = this.holderGone(result)
    // A waiter that reached fewer than a quorum of nodes (the others
    // failed or timed out) cannot win now, so it holds no place in line
    // until it reaches a quorum again; its places run out with their
    // lease. Two such waiters over a majority of the lines would
    // otherwise keep a free resource from everyone for as long as they
    // retry.
    let reached = 0
    for (const outcome of outcomes) if (outcome._tag !== "Failed" && outcome._tag !== "TimedOut") reached++
    this.reachedQuorum = reached >= quorum
    // Undo what this attempt may have set, keeping its place in line. A
    // node that answered Held did not take the key, and earlier attempts
    // were undone in order on the same node: skip it. A node whose answer
    // is still to come is undone when it comes, only if it took the key:
    // most refused attempts of a waiter then send nothing more.
    const pending = (index: number) =>
      late !== undefined && (outcomes[index]._tag === "NotAwaited" || outcomes[index]._tag === "TimedOut")
    const maybeSet = this.nodes.filter((_, index) => outcomes[index]._tag !== "Held" && !pending(index))
    if (late !== undefined) this.undoLate(late, this.attempts)
    const undone = maybeSet.length === 0
      ? Effect.void
      : Release.releaseOn(maybeSet, this.keys, this.value, this.nodeTimeout, false, this.clock, true)
    return undone.pipe(
      // Every waiter's refused attempt passes here: the message is built only when debug logs are on.
      Effect.zipRight(
        this.fiber.getFiberRef(FiberRef.currentMinimumLogLevel).ordinal > LogLevel.Debug.ordinal
          ? Effect.void
          : Effect.logDebug(
            `effect-redlock: attempt ${this.attempts} on ${resources.join(", ")}: ${yes} of ${quorum} needed ` +
              `(${Outcome.describeAll(outcomes)})`
          )
      ),
      Effect.zipRight(Effect.fail(withoutStackTrace(() =>
        new LockNotAcquired({
          resources,
          reason: yes >= quorum ? "ValidityExpired" : "NoQuorum",
          attempts: this.attempts,
          elapsedMillis: Monotonic.unsafeMonotonicMillis(this.clock) - this.firstStart,
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
  private undoLate(late: FanOut.Late, attempt: number): void {
    late.forEach((index, tookKey) => {
      if (tookKey !== true || this.attempts !== attempt) return
      this.nodes[index].promises!.release(this.keys, this.value, false, true).then(undefined, () => undefined)
    })
  }

  // When (monotonic) the keys of the holder seen by the last attempt have
  // run out on enough nodes for a quorum; none when the keys are free on a
  // majority already, or never expire.
  private holderGone(result: FanOut.FanOutResult<boolean | TurnAnswer>): number | undefined {
    const ttls: Array<number> = []
    let free = 0
    result.answers.forEach((answer) => {
      if (typeof answer !== "object") return
      if (answer._tag !== "Held") free++
      else if (answer.ttlMillis !== undefined) ttls.push(answer.ttlMillis)
    })
    const needed = this.quorum - free
    if (needed <= 0 || ttls.length < needed) return undefined
    return Monotonic.unsafeMonotonicMillis(this.clock) + ttls.sort((a, b) => a - b)[needed - 1] + 1
  }

  // A waiter that gives up (or is interrupted) leaves every line it joined:
  // every node is asked, and answers awaited (each within the node timeout),
  // so that it no longer stands before anyone once acquire returns. Built
  // only when needed: most acquisitions never leave a line.
  private leaveEverywhere() {
    return FanOut.all(this.nodes, FanOut.call("release", this.keys, this.value, false), this.nodeTimeout)
  }

  // An acquisition that ended with a lock or a LockNotAcquired is measured; an interrupted one is not.
  private measure(failure: LockNotAcquired | undefined): void {
    const labels = this.fiber.getFiberRef(FiberRef.currentMetricLabels)
    if (failure === undefined) RedlockMetrics.acquisitions.unsafeUpdate(1, labels)
    else RedlockMetrics.acquireFailures.unsafeUpdate(1, [...labels, MetricLabel.make("reason", failure.reason)])
    RedlockMetrics.acquireDuration.unsafeUpdate(Monotonic.unsafeMonotonicMillis(this.clock) - this.firstStart, labels)
    RedlockMetrics.attemptsPerAcquire.unsafeUpdate(this.attempts, labels)
  }

  // Ended without a lock: leave the lines joined, if any, then fail as the acquisition did.
  private failed(cause: Cause.Cause<LockNotAcquired>): Effect.Effect<never, LockNotAcquired> {
    const ended = Effect.suspend(() => {
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure)) this.measure(failure.value)
      return Effect.failCause(cause)
    })
    return this.joined ? Effect.zipRight(this.leaveEverywhere(), ended) : ended
  }
}

/** The options of one acquisition, checked, with the manager's defaults filled in. */
const parseAcquire = (settings: Settings, resourcesInput: unknown, acquireOptions: AcquireOptions) => {
  const { defaultNodeTimeout, defaultSchedule, driftFactor, maxTtlMillis } = settings
  const resources = Validate.resources(resourcesInput)
  if (Either.isLeft(resources)) return Either.left(resources.left)
  const timing = Validate.timing(acquireOptions.ttl, acquireOptions.nodeTimeout ?? defaultNodeTimeout, driftFactor, maxTtlMillis)
  if (Either.isLeft(timing)) return Either.left(timing.left)
  const maxHoldMillis = Validate.autoExtend(acquireOptions.autoExtend)
  if (Either.isLeft(maxHoldMillis)) return Either.left(maxHoldMillis.left)
  const schedule = acquireOptions.retry === undefined
    ? Either.right(defaultSchedule)
    : Validate.schedule("retry", acquireOptions.retry)
  if (Either.isLeft(schedule)) return Either.left(schedule.left)
  return Either.right({
    resources: resources.right,
    ttlMillis: timing.right.ttlMillis,
    nodeTimeout: Duration.millis(timing.right.nodeTimeoutMillis),
    maxHoldMillis: maxHoldMillis.right,
    schedule: schedule.right
  })
}

