/**
 * Acquiring a lock, this shell's part: the options checked, the engine's
 * attempts (engine/attempt.ts) and waiting (engine/waiting.ts) each entered
 * once as an `Effect.callback`, the lock made from a grant with its release
 * registered in the caller's scope, and the refusal made a LockNotAcquired.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Attempt from "@effect-redlock/core/engine/attempt.js"
import * as FanOut from "@effect-redlock/core/engine/fanOut.js"
import * as Options from "@effect-redlock/core/engine/options.js"
import type { Time } from "@effect-redlock/core/engine/time.js"
import * as Waiting from "@effect-redlock/core/engine/waiting.js"
import * as EngineSlots from "@effect-redlock/core/engine/slots.js"
import type * as Lock from "../../Lock.js"
import type { AcquireOptions } from "../../Redlock.js"
import type { RedisNodeError } from "../nodes.js"
import { type InvalidOptions, LockNotAcquired, SettingConflict } from "../errors.js"
import * as Extension from "./extension.js"
import * as Fencing from "./fencing.js"
import { HeldLock, type LockFields } from "../lock.js"
import * as Metrics from "../metrics.js"
import * as Release from "./release.js"
import * as Retry from "../retry.js"
import type { Settings } from "./settings.js"
import * as TimeOf from "../monotonic.js"
import * as Tracing from "../tracing.js"
import * as Validate from "../validate.js"

/** One acquisition's options, checked (`parseOptions`). */
export interface RequestOptions {
  readonly ttlMillis: number
  readonly nodeTimeoutMillis: number
  readonly retry: Retry.RetrySchedule
  readonly waits: boolean
  /** With `autoExtend`: the longest hold (ms, Infinity when unbounded); none: not extended automatically. */
  readonly maxHoldMillis: number | undefined
}

/** One acquisition's request, checked. */
export interface Request extends RequestOptions {
  readonly resources: ReadonlyArray<string>
}

/** The options of one acquisition, checked, with the manager's defaults filled in. */
export const parseOptions = (settings: Settings, options: AcquireOptions): RequestOptions | InvalidOptions => {
  if (typeof options !== "object" || options === null) return Validate.invalid("options", "expected { ttl, ... }")
  const foreign = Options.nodeRedlockSetting(options)
  if (foreign !== undefined) return Validate.invalid(foreign.option, foreign.detail)
  const timing = Options.timing(
    options.ttl,
    options.nodeTimeout ?? settings.nodeTimeoutMillis,
    settings.driftFactor,
    settings.maxTtlMillis,
    Validate.readMillis
  )
  if (timing instanceof Options.Problem) return Validate.invalid(timing.option, timing.detail)
  const maxHoldMillis = Options.autoExtend(options.autoExtend, Validate.readMillis)
  if (maxHoldMillis instanceof Options.Problem) return Validate.invalid(maxHoldMillis.option, maxHoldMillis.detail)
  const retry = options.retry ?? settings.retry
  // Checked here, not when first stepped: an acquisition granted at once never steps it.
  if (!Schedule.isSchedule(retry)) return Validate.invalid("retry", Options.notASchedule(retry))
  return { ...timing, retry, waits: !Retry.isNoRetry(retry), maxHoldMillis }
}

const parse = (
  settings: Settings,
  resourcesInput: unknown,
  options: AcquireOptions,
  named: boolean
): Request | InvalidOptions => {
  // Names the manager makes (a read-write lock's slots) are built from a checked resource.
  const resources = named ? resourcesInput as ReadonlyArray<string> : Options.resources(resourcesInput)
  if (resources instanceof Options.Problem) return Validate.invalid(resources.option, resources.detail)
  const checked = parseOptions(settings, options)
  return "ttlMillis" in checked ? new CheckedRequest(resources, checked) : checked
}

// Not a literal (see engine/attempt.ts, AttemptFields).
class CheckedRequest implements Request {
  readonly ttlMillis: number
  readonly nodeTimeoutMillis: number
  readonly retry: Retry.RetrySchedule
  readonly waits: boolean
  readonly maxHoldMillis: number | undefined
  constructor(readonly resources: ReadonlyArray<string>, options: RequestOptions) {
    this.ttlMillis = options.ttlMillis
    this.nodeTimeoutMillis = options.nodeTimeoutMillis
    this.retry = options.retry
    this.waits = options.waits
    this.maxHoldMillis = options.maxHoldMillis
  }
}

/** A refused attempt; its LockNotAcquired is made when first asked for (most refusals of a waiter are never read). */
export class Refused implements Attempt.Refused<RedisNodeError> {
  readonly granted = undefined
  private made: LockNotAcquired | undefined

  constructor(
    private readonly fields: Attempt.RefusalFields<RedisNodeError>,
    readonly result: FanOut.FanOutResult<unknown, RedisNodeError>
  ) {}

  get refusal(): LockNotAcquired {
    return this.made ??= new LockNotAcquired(this.fields)
  }
}

/**
 * One of a resource's slots to take (engine `AttemptRequest.slots`): a
 * semaphore's permit or a read-write lock's reader, given `random` to
 * choose the first slot tried; `ahead`: stand before every waiter (a fiber
 * that reads the resource already, reentrancy.ts).
 */
export interface SlotRequest {
  readonly ahead: boolean
  readonly random: () => number
}

// Not a literal: it points at a younger closure (see engine/attempt.ts, AttemptFields).
class Slot implements SlotRequest {
  constructor(readonly ahead: boolean, readonly random: () => number) {}
}

/**
 * One acquisition: the engine's attempts, with this shell's lock and
 * refusal. `probe: false` for a lock whose free key may have a line of
 * waiters (a read-write lock's writer): its first attempt then respects the
 * line.
 */
export class Acquisition extends Attempt.Attempts<HeldLock, Refused, RedisNodeError> {
  protected readonly attempted:
    | ((startMillis: number, end: Attempt.AttemptEnd<HeldLock, Refused, RedisNodeError>) => void)
    | undefined
  /** The resources, in the order of the keys (a permit's slots start at a random one). */
  private readonly resources: ReadonlyArray<string>

  constructor(
    private readonly settings: Settings,
    readonly request: Request,
    time: Time,
    private readonly issueTokens: LockFields["issueTokens"],
    probe = true,
    readonly setting: Setting | undefined = undefined,
    slots: SlotRequest | undefined = undefined,
    /** Told of each attempt, where spans are recorded or debug logs written. */
    observer: Tracing.AttemptObserver | undefined = undefined
  ) {
    const fields = Attempt.AttemptFields.of(
      request,
      settings.keyPrefix,
      probe,
      setting,
      slots,
      slots?.random ?? Math.random
    )
    super(settings, fields, time)
    this.resources = fields.resources
    this.attempted = observer &&
      ((startMillis, end) =>
        observer(
          this.attempts,
          end.granted !== undefined,
          end.result,
          startMillis,
          this.time.now(),
          this.resources,
          this.quorum
        ))
  }

  protected granted(
    result: FanOut.FanOutResult<unknown, RedisNodeError>,
    validityMillis: number,
    slot: number | undefined
  ): HeldLock {
    return new HeldLock({
      // Not literals (see engine/attempt.ts, AttemptFields).
      resources: slot === undefined ? this.resources : this.resources.slice(slot, slot + 1),
      keys: slot === undefined ? this.keys : this.keys.slice(slot, slot + 1),
      value: this.value,
      ttlMillis: this.request.ttlMillis,
      validityMillis,
      deadline: result.endMillis + validityMillis,
      attempts: this.attempts,
      outcomes: result.outcomes,
      nodeTimeoutMillis: this.nodeTimeoutMillis,
      acquiredAt: result.endMillis,
      manager: this.settings.identity,
      issueTokens: this.issueTokens,
      time: this.time
    })
  }

  protected refused(
    fields: Attempt.RefusalFields<RedisNodeError>,
    result: FanOut.FanOutResult<unknown, RedisNodeError>
  ): Refused {
    return new Refused(fields, result)
  }

  /**
   * The first attempt and, when it is refused and the acquisition waits, the
   * waiting, as one step. It returns no canceler (Effect wraps a step that
   * has one in interruption handling, a cost on every lock): the caller
   * reports an interruption (`interrupted`) where the step fails.
   */
  acquire(random: () => number, context: Context.Context<never>): Effect.Effect<HeldLock, LockNotAcquired> {
    const { waits } = this.request
    return Effect.callback((resume) => {
      this.attempt(waits ? this.lease(0) : 0, (first) => {
        if (this.stopped) return
        if (first.granted !== undefined) return resume(Effect.succeed(first.granted))
        if (!waits) return resume(Effect.fail(first.refusal))
        const retry = Retry.forWait(this.request.retry, random, context)
        const cancel = Waiting.untilGranted<HeldLock, Refused>(this, first, retry, this.time, (end) => {
          if (end._tag === "Granted") {
            this.joined = true
            return resume(Effect.succeed(end.lock))
          }
          resume(
            end._tag === "Refused"
              ? Effect.fail(end.refused.refusal)
              : Effect.failCause(Cause.die(end.cause))
          )
        })
        this.stopWaiting = () => {
          if (cancel().inFlight) this.joined = true
        }
      })
    })
  }

  /** Stops the waiting, once it began; until then the first attempt is in flight. */
  private stopWaiting: (() => void) | undefined
  /** Interrupted: an attempt that ends afterwards starts nothing. */
  private stopped = false

  /**
   * The acquisition was interrupted: during the first attempt, which may
   * have taken keys, or while an attempt was in flight, it counts as joined
   * (ending leaves every line, which releases them).
   */
  interrupted(): void {
    this.stopped = true
    if (this.stopWaiting === undefined) this.joined = true
    else this.stopWaiting()
  }

  /**
   * Leave every line joined: every node is asked, and answers awaited (each
   * within the node timeout), so that no place of this acquisition stands
   * before anyone once acquire returns.
   */
  leave(): Effect.Effect<void> {
    const { nodes } = this.settings
    return Effect.callback((resume) =>
      FanOut.send(
        nodes,
        FanOut.call("release", this.keys, this.value, false),
        FanOut.everyNode(nodes, this.nodeTimeoutMillis, this.settings.nodeError),
        this.time,
        () => resume(Effect.void)
      )
    )
  }
}

/** The setting every holder of a resource's slots must share (core's engine/slots.ts). */
export type Setting = EngineSlots.Setting

/** The SettingConflict of an acquisition under `setting` that a quorum refused for `recorded`; none otherwise. */
export const conflictError = (
  setting: Setting | undefined,
  recorded: string | undefined
): SettingConflict | undefined => {
  const fields = EngineSlots.conflictFields(setting, recorded)
  return fields && new SettingConflict(fields)
}

export const randomOf = (fiber: Fiber.Fiber<unknown, unknown>): () => number => {
  const random = fiber.getRef(Random.Random)
  return () => random.nextDoubleUnsafe()
}

/**
 * A granted lock's release in the scope, then its automatic extension:
 * finalizers run last in, first out, so the extension stops before the
 * release runs. Spans where a tracer records them.
 */
export const register = (
  settings: Settings,
  scope: Scope.Scope,
  lock: HeldLock,
  maxHoldMillis: number | undefined,
  traced: boolean
): Effect.Effect<Lock.Lock> => {
  const released = Scope.addFinalizer(scope, Release.finalizer(settings, lock, traced))
  return maxHoldMillis === undefined
    ? Effect.as(released, lock)
    : Effect.as(
      Effect.andThen(
        released,
        // Started now: its first wait is registered with the clock before acquire returns.
        Effect.forkIn(Extension.autoExtend(settings, lock, maxHoldMillis), scope, { startImmediately: true })
      ),
      lock
    )
}

/** An acquisition that ended with a LockNotAcquired is measured; an interrupted one is not. */
export const measureFailure = (
  acquisition: { readonly time: Time; readonly firstStart: number; readonly attempts: number },
  cause: Cause.Cause<LockNotAcquired>,
  context: Context.Context<never>
): void => {
  const refusal = Cause.findErrorOption(cause)
  if (refusal._tag === "Some") {
    Metrics.notAcquired(
      refusal.value.reason,
      acquisition.time.now() - acquisition.firstStart,
      acquisition.attempts,
      context
    )
  }
}

/**
 * The locks `acquire` grants: users' locks (their resources checked, a
 * first attempt that probes), or slots (names the manager made; no probe,
 * see `Acquisition`): a read-write lock's writer over its read slots, a
 * permit or a reader one of them.
 */
export interface Variant {
  readonly named: boolean
  readonly probe: boolean
}

const userLocks: Variant = { named: false, probe: true }

/**
 * `Redlock.acquire`: the first attempt, then the waiting; each one step, in
 * an uninterruptible region that either registers the lock's release in the
 * scope or leaves every line (which releases any key the acquisition may
 * hold), whatever happens to it.
 */
export const acquire = (settings: Settings) => {
  const acquireUnder = acquireWithSetting(settings, userLocks)
  return (
    resources: string | ReadonlyArray<string>,
    options: AcquireOptions
  ): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired, Scope.Scope> =>
    // Without a setting there is nothing to conflict with.
    acquireUnder(resources, options, undefined) as Effect.Effect<
      Lock.Lock,
      InvalidOptions | LockNotAcquired,
      Scope.Scope
    >
}

/** `acquire` of `variant`'s locks, each under a setting (or none); with `slots` (`{ ahead }`), one of the resources (slots). */
export const acquireWithSetting = (settings: Settings, variant: Variant) => {
  // One per manager: every lock it grants issues its tokens with it.
  const issueTokens = Fencing.issueTokens(settings)
  return (
    resources: string | ReadonlyArray<string>,
    options: AcquireOptions,
    setting: Setting | undefined,
    slots?: { readonly ahead: boolean }
  ): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope> =>
    Effect.withFiber<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope>((fiber) => {
      const request = parse(settings, resources, options, variant.named)
      if (!("ttlMillis" in request)) return Effect.fail(request)
      const traced = Tracing.isRecorded(fiber)
      const debug = Tracing.logsDebug(fiber)
      /** The acquisition, on `fiber` (inside the acquisition's span where traced). */
      const acquireOn = (fiber: Fiber.Fiber<unknown, unknown>) => {
        const scope = Context.get(fiber.context as Context.Context<Scope.Scope>, Scope.Scope)
        const slotRequest = slots === undefined ? undefined : new Slot(slots.ahead, randomOf(fiber))
        const observer = traced || debug ? Tracing.attemptObserver(fiber, traced, debug) : undefined
        const acquisition = new Acquisition(
          settings,
          request,
          TimeOf.timeOfFiber(fiber),
          issueTokens,
          variant.probe,
          setting,
          slotRequest,
          observer
        )
        const granted = (lock: HeldLock): Effect.Effect<Lock.Lock> => {
          Metrics.acquired(acquisition.time.now() - acquisition.firstStart, acquisition.attempts, fiber.context)
          return register(settings, scope, lock, request.maxHoldMillis, traced)
        }
        // Ended without a lock: nothing more is sent for it, and the lines it joined are left. A quorum
        // that refused the setting fails it with SettingConflict.
        const failed = (
          cause: Cause.Cause<LockNotAcquired>
        ): Effect.Effect<never, LockNotAcquired | SettingConflict> => {
          acquisition.abandon()
          measureFailure(acquisition, cause, fiber.context)
          const conflict = conflictError(setting, acquisition.conflict)
          const ended: Effect.Effect<never, LockNotAcquired | SettingConflict> =
            conflict !== undefined && Cause.hasFails(cause)
              ? Effect.fail(conflict)
              : Effect.failCause(cause)
          return acquisition.joined ? Effect.andThen(acquisition.leave(), ended) : ended
        }
        const acquiring = Effect.uninterruptibleMask((restore) =>
          Effect.matchCauseEffect(restore(acquisition.acquire(randomOf(fiber), fiber.context)), {
            onSuccess: granted,
            onFailure: (cause) => {
              if (Cause.hasInterrupts(cause)) acquisition.interrupted()
              return failed(cause)
            }
          })
        )
        if (!traced) return acquiring
        return acquiring.pipe(
          Effect.tapError(() => Effect.annotateCurrentSpan("redlock.attempts", acquisition.attempts)),
          Effect.tap((lock) =>
            Effect.annotateCurrentSpan({
              "redlock.attempts": acquisition.attempts,
              "redlock.validity_ms": Duration.toMillis(lock.validity)
            })
          )
        )
      }
      if (!traced) return acquireOn(fiber)
      return Effect.withSpan(
        Effect.withFiber(acquireOn),
        "Redlock.acquire",
        { attributes: { "redlock.resources": request.resources, "redlock.ttl_ms": request.ttlMillis } }
      )
    })
}
