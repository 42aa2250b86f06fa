/**
 * Acquiring a lock, the Effect shell's part: the options checked, the
 * engine's attempts (engine/attempt.ts) and waiting (engine/waiting.ts)
 * entered once each as an asynchronous step, the lock made from a grant
 * with its release registered in the caller's scope, the refusal made a
 * LockNotAcquired, and the metrics, spans and debug logs.
 *
 * @internal
 */
import type { NonEmptyReadonlyArray } from "effect/Array"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as LogLevel from "effect/LogLevel"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Attempt from "@effect-redlock/core/engine/attempt.js"
import { withoutStack } from "@effect-redlock/core/manager/errors.js"
import type { FanOutResult } from "../fanOut.js"
import * as Options from "@effect-redlock/core/engine/options.js"
import * as Messages from "@effect-redlock/core/engine/messages.js"
import type { Time } from "@effect-redlock/core/engine/time.js"
import * as Waiting from "@effect-redlock/core/engine/waiting.js"
import * as EngineSlots from "@effect-redlock/core/engine/slots.js"
import type * as Lock from "../../Lock.js"
import type { AcquireOptions } from "../../Redlock.js"
import { type InvalidOptions, LockNotAcquired, SettingConflict } from "../errors.js"
import type { RedisNodeError } from "../nodes.js"
import * as FanOut from "../fanOut.js"
import { type CallerHold, HeldLock, type LockFields } from "../lock.js"
import * as RedlockMetrics from "../metrics.js"
import * as Monotonic from "../monotonic.js"
import * as Retry from "../retry.js"
import * as Tracing from "../tracing.js"
import * as Validate from "../validate.js"
import * as Extension from "./extension.js"
import * as Fencing from "./fencing.js"
import * as Release from "./release.js"
import * as Settings from "./settings.js"

// Every refused attempt of a waiter may make a LockNotAcquired: made without a stack trace (core's).
const withoutStackTrace = withoutStack

// Acquire is on every caller's hot path: validation, the attempts and the
// bookkeeping are plain code inside as few effects as possible. Spans and
// debug logs are hooks on the same code (internal/tracing.ts): turning them
// on changes what is recorded, not what runs.
export const acquire = (settings: Settings.Settings) => {
  const acquireUnder = acquireWithSetting(settings, userLocks)
  return (
    resourcesInput: string | NonEmptyReadonlyArray<string>,
    acquireOptions: AcquireOptions,
    hold?: CallerHold
  ): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired, Scope.Scope> =>
    // Without a setting there is nothing to conflict with.
    acquireUnder(resourcesInput, acquireOptions, undefined, undefined, hold) as Effect.Effect<
      Lock.Lock,
      InvalidOptions | LockNotAcquired,
      Scope.Scope
    >
}

/** The setting every holder of a resource's slots must share (core's engine/slots.ts). */
export type Setting = EngineSlots.Setting

/**
 * One of a resource's slots to take (engine `AttemptRequest.slots`): a
 * semaphore's permit or a read-write lock's reader; `ahead`: stand before
 * every waiter (a fiber that reads the resource already, reentrancy.ts).
 */
export interface SlotRequest {
  readonly ahead: boolean
}

/**
 * `acquire` of `variant`'s locks, each under a setting (or none); with
 * `slots`, one of the resources (slots). The lock's release goes to the
 * scope in context, or to `hold` (see `CallerHold`: then no scope is needed).
 */
export const acquireWithSetting = (settings: Settings.Settings, variant: Variant) => {
  const { checkResources, probe } = variant
  const parse = optionsParser(settings)
  // One per manager: every lock it grants issues its tokens with it.
  const issueFencingTokens = Fencing.issueFencingTokens(settings)
  return (
    resourcesInput: string | NonEmptyReadonlyArray<string>,
    acquireOptions: AcquireOptions,
    setting: Setting | undefined,
    slots?: SlotRequest,
    hold?: CallerHold
  ): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope> =>
    Effect.withFiberRuntime((fiber) => {
      const request = parseAcquire(parse, resourcesInput, acquireOptions, checkResources)
      const traced = Tracing.isRecorded(fiber)
      if (Either.isLeft(request)) {
        return traced
          ? Effect.withSpan(Effect.fail(request.left), "Redlock.acquire", Tracing.spanOptions)
          : Effect.fail(request.left)
      }
      if (!traced) {
        return new Acquisition(
          settings,
          issueFencingTokens,
          surroundingsOf(fiber, hold),
          request.right,
          probe,
          setting,
          slots
        )
          .acquire(hold)
      }
      const { resources, ttlMillis } = request.right
      // Inside the acquisition's span, whose fiber the attempts' spans are made under.
      return Effect.withSpan(
        Effect.withFiberRuntime<Lock.Lock, LockNotAcquired | SettingConflict, Scope.Scope>((inSpan) => {
          const acquisition = new Acquisition(
            settings,
            issueFencingTokens,
            surroundingsOf(inSpan, hold),
            request.right,
            probe,
            setting,
            slots
          )
          return Effect.zipRight(
            Effect.annotateCurrentSpan({ "redlock.resources": resources, "redlock.ttl_ms": ttlMillis }),
            acquisition.acquire(hold).pipe(
              Effect.tapError(() => Effect.annotateCurrentSpan("redlock.attempts", acquisition.attempts)),
              Effect.tap((lock) =>
                Effect.annotateCurrentSpan({
                  "redlock.attempts": acquisition.attempts,
                  "redlock.validity_ms": Duration.toMillis(lock.validity)
                })
              )
            )
          )
        }),
        "Redlock.acquire",
        Tracing.spanOptions
      )
    })
}

/**
 * Where an acquisition runs, read from the fiber that runs it (whose scope
 * receives the lock's release, unless a caller's `hold` does).
 */
export const surroundingsOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>, hold?: CallerHold): Surroundings =>
  new Surroundings(
    Monotonic.timeOfFiber(fiber),
    randomOf(Context.get(fiber.currentDefaultServices, Random.Random)),
    hold === undefined ? Context.get(fiber.currentContext as Context.Context<Scope.Scope>, Scope.Scope) : undefined,
    fiber.getFiberRef(FiberRef.currentMetricLabels),
    Tracing.isRecorded(fiber) ? Tracing.attemptSpans(fiber) : undefined,
    fiber.getFiberRef(FiberRef.currentMinimumLogLevel).ordinal <= LogLevel.Debug.ordinal
      ? debugLogger(fiber)
      : undefined,
    effectRunnerOf(fiber)
  )

// The steps of a retry schedule that has no plain ones run on the fiber's runtime, made on first use.
const effectRunnerOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Retry.EffectRunner => {
  let runner: Retry.EffectRunner | undefined
  return (effect, done) => {
    runner ??= Retry.runnerOf(runtimeOf(fiber))
    runner(effect, done)
  }
}

const runtimeOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Runtime.Runtime<never> =>
  Runtime.make({
    context: fiber.currentContext as Context.Context<never>,
    fiberRefs: fiber.getFiberRefs(),
    runtimeFlags: Runtime.defaultRuntimeFlags
  })

const defaultRandom: Random.Random = Effect.runSync(Effect.random)

/**
 * The random source of jitter and slot choice: Math.random under Effect's
 * default Random, else draws from the fiber's own (a test's
 * `Random.fixed`, a seeded one), as Effect's schedules would.
 */
export const randomOf = (random: Random.Random): () => number =>
  random === defaultRandom ? mathRandom : () => Effect.runSync(random.next)

// Read on each draw, not kept: a test may replace Math.random.
const mathRandom = () => Math.random()

// Debug logs written at once, from plain code, with the fiber's loggers and annotations.
const debugLogger = (fiber: Fiber.RuntimeFiber<unknown, unknown>) => {
  const runtime = runtimeOf(fiber)
  return (message: string) => Runtime.runSync(runtime)(Effect.logDebug(message))
}

type Request = Either.Either.Right<ReturnType<typeof parseAcquire>>

/**
 * What an acquisition takes from where it runs: its fiber (`surroundingsOf`).
 * A class, not a literal: made
 * per acquisition of the Effect API, it points at younger closures (see
 * engine/attempt.ts, AttemptFields).
 */
export class Surroundings {
  constructor(
    readonly time: Time,
    /** Draws in [0, 1): jitter of the retry's plain steps, a semaphore's first slot. */
    readonly random: () => number,
    /** Where the lock's release is registered; none: the caller's `CallerHold` releases it. */
    readonly scope: Scope.Scope | undefined,
    readonly metricLabels: ReadonlyArray<MetricLabel.MetricLabel>,
    /** Told each attempt once decided, where spans are recorded (internal/tracing.ts). */
    readonly onAttempt: Tracing.OnAttempt | undefined,
    /** Where debug logs are on: each refused attempt is logged. */
    readonly logDebug: ((message: string) => void) | undefined,
    /** Runs a step of a retry schedule that has no plain steps. */
    readonly runEffect: Retry.EffectRunner
  ) {}
}

/** A wait's end as an Exit: the lock, the last refusal, or the failure of a user's schedule (a defect). */
export const exitOf = <G>(end: Waiting.WaitEnd<G, Refused>): Exit.Exit<G, LockNotAcquired> =>
  end._tag === "Granted"
    ? Exit.succeed(end.lock)
    : end._tag === "Refused"
    ? Exit.fail(end.refused.refusal)
    : Exit.failCause(end.cause as Cause.Cause<LockNotAcquired>)

/** How an attempt ended: the lock, or the refusal (its undo sent). */
type AttemptEnd = Attempt.AttemptEnd<HeldLock, Refused>

/**
 * A refused attempt. Its LockNotAcquired is made when first asked for: a
 * waiter's refusals are mostly never read (the default retry's plain steps
 * do not read them), and making one cost ~0.1 ms of a busy client's CPU.
 */
export class Refused implements Retry.Refusal, Attempt.Refused<RedisNodeError> {
  readonly granted = undefined
  private made: LockNotAcquired | undefined

  constructor(private readonly fields: Attempt.RefusalFields<RedisNodeError>, readonly result: FanOutResult) {}

  get refusal(): LockNotAcquired {
    return this.made ??= withoutStackTrace(() => new LockNotAcquired(this.fields, true))
  }
}

/**
 * One acquisition: the engine's attempts (engine/attempt.ts), with the lock
 * made from a grant, the release registered in the caller's scope, and the
 * waiting between attempts entered once as an asynchronous step.
 */
class Acquisition extends Attempt.Attempts<HeldLock, Refused, RedisNodeError> {
  readonly nodeTimeout: Duration.Duration
  /** The resources, in the order of the keys (a permit's slots start at a random one). */
  private readonly resources: NonEmptyReadonlyArray<string>
  protected readonly attempted: ((startMillis: number, end: AttemptEnd) => void) | undefined

  constructor(
    private readonly settings: Settings.Settings,
    private readonly issueFencingTokens: LockFields["issueFencingTokens"],
    private readonly surroundings: Surroundings,
    readonly request: Request,
    probe = true,
    private readonly setting: Setting | undefined = undefined,
    slots: SlotRequest | undefined = undefined
  ) {
    const fields = Attempt.AttemptFields.of(request, settings.keyPrefix, probe, setting, slots, surroundings.random)
    super(settings, fields, surroundings.time)
    this.resources = fields.resources as NonEmptyReadonlyArray<string>
    this.nodeTimeout = request.nodeTimeout
    const { logDebug, onAttempt } = surroundings
    this.attempted = onAttempt === undefined && logDebug === undefined ? undefined : (startMillis, end) => {
      if (onAttempt !== undefined) onAttempt(this.attempts, end.result, startMillis, this.time.now())
      if (logDebug !== undefined && end.granted === undefined) {
        logDebug(Messages.attemptRefused(this.attempts, this.resources, end.result, this.quorum))
      }
    }
  }

  protected granted(result: FanOutResult, validityMillis: number, slot: number | undefined): HeldLock {
    return new HeldLock({
      // Not literals (see engine/attempt.ts, AttemptFields).
      resources: (slot === undefined ? this.resources : this.resources.slice(slot, slot + 1)) as NonEmptyReadonlyArray<
        string
      >,
      keys: (slot === undefined ? this.keys : this.keys.slice(slot, slot + 1)) as NonEmptyReadonlyArray<string>,
      value: this.value,
      ttl: this.request.ttl,
      validityMillis,
      validUntilMillis: result.endMillis + validityMillis,
      attempts: this.attempts,
      outcomes: result.outcomes,
      nodeTimeout: this.nodeTimeout,
      nodeTimeoutMillis: this.nodeTimeoutMillis,
      acquiredAtMillis: result.endMillis,
      manager: this.settings.identity,
      issueFencingTokens: this.issueFencingTokens
    })
  }

  protected refused(fields: Attempt.RefusalFields<RedisNodeError>, result: FanOutResult): Refused {
    return new Refused(fields, result)
  }

  /**
   * The whole acquisition: the first attempt, then the waiting and the
   * retries, as one asynchronous step; measured. It runs in an
   * uninterruptible region (its own, or that of the caller's `hold`):
   * whatever happens to it, either the lock's release is in the scope (or
   * the hold) or every line was left (which releases any key
   * the acquisition may hold). The step returns no canceler (as a fan-out's,
   * internal/fanOut.ts: Effect wraps a step that has one in interruption
   * handling, which cost sequential locks 30-40% of their rate, measured in
   * `npm run bench` (a)): an interruption is handled where the step fails
   * (`interrupted`). Written with matchCauseEffect, not catchAll and onExit:
   * what those allocate on each call is kept alive by objects V8 places in
   * the old generation, which doubled what every scavenge promoted
   * (sequential: ~600 KB against ~310 KB; bench/README.md).
   */
  acquire(hold?: CallerHold): Effect.Effect<Lock.Lock, LockNotAcquired | SettingConflict> {
    const waits = this.request.schedule !== Schedule.stop
    const acquired = Effect.async<HeldLock, LockNotAcquired>((resume) => {
      this.attempt(waits ? this.lease(0) : 0, (end) => {
        if (this.stopped) return
        if (end.granted !== undefined) return resume(Effect.succeed(end.granted))
        if (!waits) return resume(Effect.fail(end.refusal))
        this.stopWaiting = this.untilGranted(end, this.surroundings.runEffect, (exit) => resume(exit))
      })
    })
    const settled = (restore: CallerHold["restore"], handOver: (lock: HeldLock) => Effect.Effect<Lock.Lock>) =>
      Effect.matchCauseEffect(restore(acquired), {
        onSuccess: (lock) => {
          this.measure(undefined)
          return handOver(lock)
        },
        onFailure: (cause) => {
          if (Cause.isInterrupted(cause)) this.interrupted()
          return this.failed(cause)
        }
      })
    // A caller's hold runs this in its own uninterruptible region already.
    if (hold !== undefined) return settled(hold.restore, (lock) => this.handTo(hold, lock))
    // Without a hold, surroundingsOf read the scope in context: it receives the release.
    const scope = this.surroundings.scope!
    return Effect.uninterruptibleMask((restore) => settled(restore, (lock) => this.register(lock, scope)))
  }

  /** Stops the waiting, once it began; until then the first attempt is in flight. */
  private stopWaiting: (() => void) | undefined
  /** Interrupted: an attempt that ends afterwards starts nothing. */
  private stopped = false

  // Interrupted during the first attempt, which may have taken keys, or while an attempt was in
  // flight: the acquisition leaves every line.
  private interrupted(): void {
    this.stopped = true
    if (this.stopWaiting === undefined) this.joined = true
    else this.stopWaiting()
  }

  /**
   * The waiting (waiting.ts `untilGranted`). An acquisition that may hold
   * keys when it ends without handing a lock over (an attempt in flight
   * when it was cancelled, or a lock granted but not registered) counts as
   * joined, so that ending it leaves every line, which releases them.
   */
  private untilGranted(
    refused: Refused,
    runEffect: Retry.EffectRunner,
    done: (exit: Exit.Exit<HeldLock, LockNotAcquired>) => void
  ): () => void {
    const retry = Retry.forWait(this.request.schedule, this.surroundings.random, runEffect)
    const cancel = Waiting.untilGranted<HeldLock, Refused>(this, refused, retry, this.time, (end) => {
      if (end._tag === "Granted") this.joined = true
      done(exitOf(end))
    })
    return () => {
      if (cancel().inFlight) this.joined = true
    }
  }

  /** The lock's release, as its scope or its hold runs it. */
  private releaseOf(lock: HeldLock): Effect.Effect<void> {
    const { metricLabels, onAttempt, time } = this.surroundings
    return Release.finalizer(this.settings, lock, time, metricLabels, onAttempt !== undefined)
  }

  /**
   * The lock's release in the scope, then its extension. Extension is forked
   * after the release is registered: finalizers run last in, first out, so
   * extension stops before the release runs.
   */
  private register(lock: HeldLock, scope: Scope.Scope): Effect.Effect<Lock.Lock> {
    const { maxHoldMillis } = this.request
    const registered = Scope.addFinalizer(scope, this.releaseOf(lock))
    return maxHoldMillis === undefined
      ? Effect.as(registered, lock)
      : Effect.as(
        Effect.zipRight(registered, Effect.forkIn(Extension.autoExtend(this.settings, lock, maxHoldMillis), scope)),
        lock
      )
  }

  /**
   * The lock's release given to the caller's hold, as `register` puts it in a
   * scope: the extension, if any, is forked here and stopped before the
   * release.
   */
  private handTo(hold: CallerHold, lock: HeldLock): Effect.Effect<Lock.Lock> {
    const { time } = this.surroundings
    const release = this.releaseOf(lock)
    const { maxHoldMillis } = this.request
    if (maxHoldMillis === undefined) {
      hold.granted(release, time)
      return Effect.succeed(lock)
    }
    return Effect.map(Effect.fork(Extension.autoExtend(this.settings, lock, maxHoldMillis)), (extension) => {
      hold.granted(Effect.zipRight(Fiber.interrupt(extension), release), time)
      return lock
    })
  }

  // A waiter that gives up (or is interrupted) leaves every line it joined:
  // every node is asked, and answers awaited (each within the node timeout),
  // so that it no longer stands before anyone once acquire returns. Built
  // only when needed: most acquisitions never leave a line.
  private leave(): Effect.Effect<void> {
    return Effect.asVoid(
      FanOut.all(this.nodes, FanOut.call("release", this.keys, this.value, false), this.nodeTimeout, this.time)
    )
  }

  // An acquisition that ended with a lock or a LockNotAcquired is measured; an interrupted one is not.
  measure(failure: LockNotAcquired | undefined): void {
    const labels = this.surroundings.metricLabels
    if (failure === undefined) RedlockMetrics.acquisitions.unsafeUpdate(1, labels)
    else RedlockMetrics.acquireFailures.unsafeUpdate(1, [...labels, MetricLabel.make("reason", failure.reason)])
    RedlockMetrics.acquireDuration.unsafeUpdate(this.time.now() - this.firstStart, labels)
    RedlockMetrics.attemptsPerAcquire.unsafeUpdate(this.attempts, labels)
  }

  // Ended without a lock: leave the lines joined, if any, then fail as the acquisition did
  // (with SettingConflict when a quorum refused its setting).
  private failed(cause: Cause.Cause<LockNotAcquired>): Effect.Effect<never, LockNotAcquired | SettingConflict> {
    this.abandon()
    const ended = Effect.suspend((): Effect.Effect<never, LockNotAcquired | SettingConflict> => {
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure)) this.measure(failure.value)
      const conflict = conflictError(this.setting, this.conflict)
      return conflict !== undefined && Option.isSome(failure) ? Effect.fail(conflict) : Effect.failCause(cause)
    })
    return this.joined ? Effect.zipRight(this.leave(), ended) : ended
  }
}

/** The SettingConflict of an acquisition under `setting` that a quorum refused for `recorded`; none otherwise. */
export const conflictError = (
  setting: Setting | undefined,
  recorded: string | undefined
): SettingConflict | undefined => {
  const fields = EngineSlots.conflictFields(setting, recorded)
  return fields && new SettingConflict(fields, true)
}

/**
 * How an acquisition checks its resources: users' resources by
 * `Validate.resources`; names the manager makes itself (a semaphore's
 * slots, semaphore.ts) are built from checked resources.
 */
export type ResourceCheck = (input: unknown) => Either.Either<NonEmptyReadonlyArray<string>, InvalidOptions>

/**
 * The locks the manager grants through `acquire`: users' locks, or the slot
 * locks of semaphores and read-write locks. `probe: false` for a lock whose
 * free key may have a line of waiters (a read-write lock's slot, which a
 * waiting writer holds no key of): the first attempt then respects the line
 * instead of taking the free key at once.
 */
export interface Variant {
  readonly checkResources: ResourceCheck
  readonly probe: boolean
}

const userLocks: Variant = { checkResources: Validate.resources, probe: true }

/** The options of one acquisition, checked (`parse`: see `optionsParser`), with the manager's defaults filled in. */
const parseAcquire = (
  parse: (acquireOptions: AcquireOptions) => ReturnType<typeof parseOptions>,
  resourcesInput: unknown,
  acquireOptions: AcquireOptions,
  checkResources: ResourceCheck
) => {
  const resources = checkResources(resourcesInput)
  if (Either.isLeft(resources)) return Either.left(resources.left)
  return Either.map(parse(acquireOptions), (options) => new AcquireRequest(resources.right, options))
}

/**
 * `parseOptions` on one manager's settings, the last options checked kept:
 * callers pass the same options again and again, and checking them took
 * ~2 µs of a contended permit's client CPU (N = 1). Kept by the values of
 * the fields it reads, not by the object, so that a field changed since is
 * checked again.
 */
const optionsParser = (settings: Settings.Settings) => {
  let last: {
    readonly ttl: unknown
    readonly nodeTimeout: unknown
    readonly autoExtend: unknown
    readonly retry: unknown
    readonly parsed: ReturnType<typeof parseOptions>
  } | undefined
  return (acquireOptions: AcquireOptions): ReturnType<typeof parseOptions> => {
    if (typeof acquireOptions !== "object" || acquireOptions === null) return parseOptions(settings, acquireOptions)
    // Before the kept options: node-redlock's settings are no field of theirs.
    if (Options.nodeRedlockSetting(acquireOptions) !== undefined) return parseOptions(settings, acquireOptions)
    const { autoExtend, nodeTimeout, retry, ttl } = acquireOptions
    if (
      last !== undefined && last.ttl === ttl && last.nodeTimeout === nodeTimeout && last.autoExtend === autoExtend &&
      last.retry === retry
    ) return last.parsed
    const parsed = parseOptions(settings, acquireOptions)
    if (Either.isRight(parsed)) last = { ttl, nodeTimeout, autoExtend, retry, parsed }
    return parsed
  }
}

// Not a literal (see engine/attempt.ts, AttemptFields).
class AcquireRequest {
  readonly ttlMillis: number
  /** The same as a Duration, made once per options checked (every grant's lock carries it). */
  readonly ttl: Duration.Duration
  readonly nodeTimeout: Duration.Duration
  readonly nodeTimeoutMillis: number
  readonly maxHoldMillis: number | undefined
  readonly schedule: Schedule.Schedule<unknown, LockNotAcquired>
  constructor(
    readonly resources: NonEmptyReadonlyArray<string>,
    options: Either.Either.Right<ReturnType<typeof parseOptions>>
  ) {
    this.ttlMillis = options.ttlMillis
    this.ttl = options.ttl
    this.nodeTimeout = options.nodeTimeout
    this.nodeTimeoutMillis = options.nodeTimeoutMillis
    this.maxHoldMillis = options.maxHoldMillis
    this.schedule = options.schedule
  }
}

/**
 * An acquisition's options (ttl, node timeout, autoExtend, retry), checked,
 * with the manager's defaults filled in; semaphores check theirs up front
 * with it (semaphore.ts).
 */
export const parseOptions = (settings: Settings.Settings, acquireOptions: AcquireOptions) => {
  if (typeof acquireOptions !== "object" || acquireOptions === null) {
    return Validate.invalid("options", "expected { ttl, ... }")
  }
  const foreign = Options.nodeRedlockSetting(acquireOptions)
  if (foreign !== undefined) return Validate.invalid(foreign.option, foreign.detail)
  const { defaultNodeTimeout, defaultSchedule, driftFactor, maxTtlMillis } = settings
  const timing = Validate.timing(
    acquireOptions.ttl,
    acquireOptions.nodeTimeout ?? defaultNodeTimeout,
    driftFactor,
    maxTtlMillis
  )
  if (Either.isLeft(timing)) return Either.left(timing.left)
  const maxHoldMillis = Validate.autoExtend(acquireOptions.autoExtend)
  if (Either.isLeft(maxHoldMillis)) return Either.left(maxHoldMillis.left)
  const schedule = acquireOptions.retry === undefined
    ? Either.right(defaultSchedule)
    : Validate.schedule("retry", acquireOptions.retry)
  if (Either.isLeft(schedule)) return Either.left(schedule.left)
  return Either.right({
    ttlMillis: timing.right.ttlMillis,
    ttl: Duration.millis(timing.right.ttlMillis),
    nodeTimeout: Duration.millis(timing.right.nodeTimeoutMillis),
    nodeTimeoutMillis: timing.right.nodeTimeoutMillis,
    maxHoldMillis: maxHoldMillis.right,
    schedule: schedule.right
  })
}
