/**
 * Acquiring a lock in plain code: the options checked, the engine's attempts
 * (engine/attempt.ts) and waiting (engine/waiting.ts), the lock made from a
 * grant, the refusal made a LockNotAcquired; stopped by the caller's
 * `AbortSignal` or by the manager's `close()`.
 *
 * @internal
 */
import * as Attempt from "../engine/attempt.js"
import * as FanOut from "../engine/fanOut.js"
import * as Options from "../engine/options.js"
import { Problem } from "../engine/options.js"
import * as EngineSlots from "../engine/slots.js"
import * as Waiting from "../engine/waiting.js"
import { readMillis } from "./durations.js"
import type { DurationInput } from "./durations.js"
import { InvalidOptions, LockNotAcquired, type RedisNodeError, SettingConflict, withoutStack } from "./errors.js"
import { HeldLock } from "./heldLock.js"
import type { RetrySteps } from "./retry.js"
import { orThrow, type RetryInput, retrySteps, type Settings } from "./settings.js"
import type * as FrontEnd from "./frontEndTypes.js"

/** The options of one acquisition. */
export interface AcquireOptions extends FrontEnd.AcquireOptionsOf<DurationInput, RetryInput> {
  /** Aborting it stops the waiting: the acquisition leaves every line and rejects with its reason. */
  readonly signal?: AbortSignal | undefined
}

/** A granted lock, and how long it may be extended automatically (none: no auto-extension). */
export class Grant {
  constructor(readonly lock: HeldLock, readonly maxHoldMillis: number | undefined) {}
}

/** The setting every holder of a resource's slots must share (core's engine/slots.ts). */
export type Setting = EngineSlots.Setting

/** Ends a waiting acquisition with `reason` (it leaves its lines first), then calls `left`. */
type StopWaiting = (reason: unknown, left: () => void) => void

/**
 * The acquisitions of one manager: those waiting now, and the attempts in
 * flight outside any wait (a first attempt, a stop's leaving). `close` ends
 * the waiting ones and waits for the rest, before the manager's connections
 * go: a first attempt granted meanwhile is released by the manager, one
 * refused leaves its lines.
 */
export class Acquisitions {
  /** Why every acquisition ends from now on, once closed. */
  closedWith: unknown = undefined
  private readonly waiting = new Set<StopWaiting>()
  private inFlight = 0
  private drained: (() => void) | undefined

  add(stop: StopWaiting): void {
    this.waiting.add(stop)
  }

  delete(stop: StopWaiting): void {
    this.waiting.delete(stop)
  }

  started(): void {
    this.inFlight++
  }

  ended(): void {
    if (--this.inFlight === 0) this.drained?.()
  }

  /** Every acquisition waiting, and each that would wait from now on, ends with `reason`; resolved once they left. */
  close(reason: unknown): Promise<void> {
    this.closedWith = reason
    const stops = [...this.waiting]
    this.waiting.clear()
    const settled = this.inFlight === 0 ? Promise.resolve() : new Promise<void>((drained) => this.drained = drained)
    return Promise.all([settled, ...stops.map((stop) => new Promise<void>((left) => stop(reason, left)))]).then(
      () => {}
    )
  }
}

/**
 * How an acquisition checks its resources: users' resources by the engine's
 * checks; names the manager makes itself (a semaphore's slots) are built
 * from checked resources. `probe: false` for slot keys, whose free key may
 * have a line of waiters.
 */
export interface Variant {
  readonly checkResources: (input: unknown) => ReadonlyArray<string> | Problem
  readonly probe: boolean
}

export const userLocks: Variant = { checkResources: Options.resources, probe: true }

// Not a literal (see engine/attempt.ts, AttemptFields).
class Request {
  constructor(
    readonly resources: ReadonlyArray<string>,
    readonly ttlMillis: number,
    readonly nodeTimeoutMillis: number,
    readonly maxHoldMillis: number | undefined,
    readonly retry: RetrySteps
  ) {}
}

type Parsed = Omit<Request, "resources">

/** An acquisition's options checked, with the manager's defaults; throws InvalidOptions. */
export const parseOptions = (settings: Settings, options: AcquireOptions): Parsed => {
  if (typeof options !== "object" || options === null) throw new InvalidOptions("options", "expected { ttl, ... }")
  const foreign = Options.nodeRedlockSetting(options)
  if (foreign !== undefined) throw new InvalidOptions(foreign.option, foreign.detail)
  const { ttlMillis, nodeTimeoutMillis } = orThrow(Options.timing(
    options.ttl,
    options.nodeTimeout ?? settings.defaultNodeTimeoutMillis,
    settings.driftFactor,
    settings.maxTtlMillis,
    readMillis
  ))
  const maxHoldMillis = orThrow(Options.autoExtend(options.autoExtend, readMillis))
  const retry = options.retry === undefined
    ? settings.defaultRetry
    : retrySteps("retry", options.retry, settings.customRetry)
  return { ttlMillis, nodeTimeoutMillis, maxHoldMillis, retry }
}

/**
 * `parseOptions` on one manager's settings, the last options checked kept:
 * callers pass the same options again and again. Kept by the values of the
 * fields it reads, not by the object, so that a field changed since is
 * checked again.
 */
const optionsParser = (settings: Settings) => {
  let last: {
    readonly ttl: unknown
    readonly nodeTimeout: unknown
    readonly autoExtend: unknown
    readonly retry: unknown
    readonly parsed: Parsed
  } | undefined
  return (options: AcquireOptions): Parsed => {
    if (typeof options !== "object" || options === null || Options.nodeRedlockSetting(options) !== undefined) {
      return parseOptions(settings, options)
    }
    const { autoExtend, nodeTimeout, retry, ttl } = options
    if (
      last !== undefined && last.ttl === ttl && last.nodeTimeout === nodeTimeout && last.autoExtend === autoExtend &&
      last.retry === retry
    ) return last.parsed
    const parsed = parseOptions(settings, options)
    last = { ttl, nodeTimeout, autoExtend, retry, parsed }
    return parsed
  }
}

/** The SettingConflict of an acquisition under `setting` that a quorum refused for `recorded`; none otherwise. */
const conflictError = (setting: Setting | undefined, recorded: string | undefined): SettingConflict | undefined => {
  const fields = EngineSlots.conflictFields(setting, recorded)
  return fields && new SettingConflict(fields.resource, fields.setting, fields.requested, fields.recorded)
}

/** A refused attempt; its LockNotAcquired is made when first asked for (most are never read). */
export class Refused implements Attempt.Refused<RedisNodeError> {
  readonly granted = undefined
  private made: LockNotAcquired | undefined

  constructor(
    private readonly fields: Attempt.RefusalFields<RedisNodeError>,
    readonly result: FanOut.FanOutResult<unknown, RedisNodeError>
  ) {}

  get refusal(): LockNotAcquired {
    return this.made ??= withoutStack(() => new LockNotAcquired(this.fields))
  }
}

const ignore = () => {}

/** Told each attempt of one acquisition once it ended (node-redlock's entry keeps every attempt's votes). */
export type AttemptObserver = (end: Attempt.AttemptEnd<HeldLock, Refused, RedisNodeError>) => void

/** One acquisition: the engine's attempts, the lock made from a grant, and the waiting between attempts. */
class Acquisition extends Attempt.Attempts<HeldLock, Refused, RedisNodeError> {
  /** The resources, in the order of the keys (a permit's slots start at a random one). */
  private readonly resources: ReadonlyArray<string>
  protected readonly attempted:
    | ((startMillis: number, end: Attempt.AttemptEnd<HeldLock, Refused, RedisNodeError>) => void)
    | undefined

  constructor(
    private readonly settings: Settings,
    private readonly request: Request,
    probe: boolean,
    private readonly setting: Setting | undefined,
    slots: { readonly ahead: boolean } | undefined,
    observer: AttemptObserver | undefined
  ) {
    const fields = Attempt.AttemptFields.of(request, settings.keyPrefix, probe, setting, slots, Math.random)
    super(settings, fields, settings.time)
    this.resources = fields.resources
    this.attempted = observer && ((_, end) => observer(end))
  }

  protected granted(
    result: FanOut.FanOutResult<unknown, RedisNodeError>,
    validityMillis: number,
    slot: number | undefined
  ): HeldLock {
    return new HeldLock({
      resources: slot === undefined ? this.resources : this.resources.slice(slot, slot + 1),
      keys: slot === undefined ? this.keys : this.keys.slice(slot, slot + 1),
      value: this.value,
      ttlMillis: this.request.ttlMillis,
      validityMillis,
      validUntilMillis: result.endMillis + validityMillis,
      attempts: this.attempts,
      outcomes: result.outcomes,
      nodeTimeoutMillis: this.nodeTimeoutMillis,
      acquiredAtMillis: result.endMillis
    }, this.settings)
  }

  protected refused(
    fields: Attempt.RefusalFields<RedisNodeError>,
    result: FanOut.FanOutResult<unknown, RedisNodeError>
  ): Refused {
    return new Refused(fields, result)
  }

  /** The refusal to reject with: a SettingConflict where a quorum refused the setting. */
  rejection(refused: Refused): LockNotAcquired | SettingConflict {
    return conflictError(this.setting, this.conflict) ?? refused.refusal
  }

  /**
   * The rest of an acquisition whose first attempt was refused: the
   * waiting. The signal's abort or the manager's close stops it, leaves every
   * line joined and rejects with the signal's reason or the close's. Told
   * through callbacks, once: the caller's promise is settled by them.
   */
  waitFor(
    refused: Refused,
    signal: AbortSignal | undefined,
    acquisitions: Acquisitions,
    resolve: (lock: HeldLock) => void,
    reject: (error: unknown) => void
  ): void {
    let settled = false
    const settle = () => {
      settled = true
      signal?.removeEventListener("abort", onAbort)
      acquisitions.delete(stop)
    }
    // Stopped from outside: the lines are left before the rejection (and before `left`).
    const stop: StopWaiting = (reason, left) => {
      if (settled) return left()
      settle()
      if (cancel().inFlight) this.joined = true
      this.endWithout(() => {
        reject(reason)
        left()
      })
    }
    const onAbort = () => stop(signal?.reason, ignore)
    const retry = this.request.retry.start(Math.random)
    const cancel = Waiting.untilGranted<HeldLock, Refused>(this, refused, retry, this.time, (end) => {
      if (settled) return
      settle()
      if (end._tag === "Granted") return resolve(end.lock)
      // A policy that broke: its failure, as the Effect API's defect.
      const error = end._tag === "Refused" ? this.rejection(end.refused) : end.cause
      this.endWithout(() => reject(error))
    })
    if (settled) return
    // Closed while its first attempt was out: it leaves at once, in flight until it left.
    if (acquisitions.closedWith !== undefined) {
      acquisitions.started()
      return stop(acquisitions.closedWith, () => acquisitions.ended())
    }
    if (signal?.aborted) return onAbort()
    acquisitions.add(stop)
    signal?.addEventListener("abort", onAbort, { once: true })
  }

  /**
   * Ended without a lock: every line it joined is left (every node asked,
   * answers awaited within the node timeout, so that it no longer stands
   * before anyone), then `done`.
   */
  private endWithout(done: () => void): void {
    this.abandon()
    if (!this.joined) return done()
    const rules = FanOut.everyNode(this.nodes, this.nodeTimeoutMillis, this.settings.nodeError)
    FanOut.send(this.nodes, FanOut.call("release", this.keys, this.value, false), rules, this.time, () => done())
  }
}

/**
 * Acquire on one manager: the first attempt, then the waiting. The lock's
 * release is the caller's. `rejection` maps the refusal (a slot's names its
 * resource), with no promise step between.
 */
export const acquirer = (settings: Settings, acquisitions: Acquisitions, variant: Variant = userLocks) => {
  const { checkResources, probe } = variant
  const parse = optionsParser(settings)
  return (
    resourcesInput: unknown,
    options: AcquireOptions,
    setting?: Setting,
    slots?: { readonly ahead: boolean },
    rejection?: (error: unknown) => unknown,
    observer?: AttemptObserver
  ): Promise<Grant> => {
    let request: Request
    let signal: AbortSignal | undefined
    try {
      const resources = orThrow(checkResources(resourcesInput))
      const { maxHoldMillis, nodeTimeoutMillis, retry, ttlMillis } = parse(options)
      request = new Request(resources, ttlMillis, nodeTimeoutMillis, maxHoldMillis, retry)
      // A signal that is none would throw later, in a callback, where no caller could catch it.
      signal = orThrow(Options.abortSignal(options.signal))
    } catch (error) {
      return Promise.reject(error)
    }
    if (signal?.aborted) return Promise.reject(signal.reason)
    const acquisition = new Acquisition(settings, request, probe, setting, slots, observer)
    const { maxHoldMillis } = request
    const waits = request.retry.waits
    return new Promise((resolve, rejected) => {
      const reject = rejection === undefined ? rejected : (error: unknown) => rejected(rejection(error))
      const granted = (lock: HeldLock) => resolve(new Grant(lock, maxHoldMillis))
      // In flight until it is settled or waits (see Acquisitions.close).
      acquisitions.started()
      acquisition.attempt(waits ? acquisition.lease(0) : 0, (end) => {
        try {
          if (end.granted !== undefined) granted(end.granted)
          else if (!waits) reject(acquisition.rejection(end))
          else acquisition.waitFor(end, signal, acquisitions, granted, reject)
        } finally {
          acquisitions.ended()
        }
      })
    })
  }
}
