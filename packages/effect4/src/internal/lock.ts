/**
 * The held lock of this shell: the engine's `Holding` (deadline, loss,
 * extension) with the Lock's fields and effects.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import { Holding, type LossReason } from "@effect-redlock/core/engine/holding.js"
import type { Time } from "@effect-redlock/core/engine/time.js"
import type * as Lock from "../Lock.js"
import * as Options from "@effect-redlock/core/engine/options.js"
import type { NodeOutcome, RedisNodeError } from "./nodes.js"
import { type FencingTokenUnavailable, type InvalidOptions, LockLost, ValidityTooShort } from "./errors.js"
import * as Validate from "./validate.js"
import * as Metrics from "./metrics.js"

export const TypeId = "~effect-redlock/Lock" as const

export interface LockFields {
  readonly resources: ReadonlyArray<string>
  readonly keys: ReadonlyArray<string>
  readonly value: string
  readonly ttlMillis: number
  readonly validityMillis: number
  /** When (monotonic ms) the validity ends. */
  readonly deadline: number
  readonly attempts: number
  readonly outcomes: ReadonlyArray<NodeOutcome>
  readonly nodeTimeoutMillis: number
  readonly acquiredAt: number
  /** The manager that granted it (a lock is released and extended by its own manager). */
  readonly manager: object
  /** The manager's issuing of fencing tokens (fencing.ts). */
  readonly issueTokens: (lock: HeldLock) => Effect.Effect<ReadonlyArray<bigint>, LockLost | FencingTokenUnavailable>
  readonly time: Time
}

export class HeldLock extends Holding<RedisNodeError> implements Lock.Lock {
  readonly [TypeId]: Lock.TypeId = TypeId
  readonly resources: ReadonlyArray<string>
  readonly ttl: Duration.Duration
  readonly validityMillis: number
  readonly attempts: number
  readonly outcomes: ReadonlyArray<NodeOutcome>
  readonly nodeTimeoutMillis: number
  readonly manager: object
  readonly time: Time
  /** When (monotonic ms) the lock was granted: automatic extension stops `maxHold` after it. */
  readonly acquiredAt: number
  private readonly issueTokens: LockFields["issueTokens"]
  /** The tokens, once issued: a lock has one set of tokens. */
  private tokens: ReadonlyArray<bigint> | undefined
  private lostError: LockLost | undefined
  private extensionPermit: Semaphore.Semaphore | undefined
  private fencingPermit: Semaphore.Semaphore | undefined
  // Made on first use: a fractional Duration holds a bigint in an object literal of Effect's, whose site
  // V8 pretenures under load (the engine's attempt.ts, AttemptFields).
  private validityDuration: Duration.Duration | undefined

  constructor(fields: LockFields) {
    super(fields.deadline, fields.keys, fields.value)
    this.resources = fields.resources
    this.ttl = Duration.millis(fields.ttlMillis)
    this.validityMillis = fields.validityMillis
    this.attempts = fields.attempts
    this.outcomes = fields.outcomes
    this.nodeTimeoutMillis = fields.nodeTimeoutMillis
    this.manager = fields.manager
    this.time = fields.time
    this.acquiredAt = fields.acquiredAt
    this.issueTokens = fields.issueTokens
  }

  get validity(): Duration.Duration {
    return this.validityDuration ??= Duration.millis(this.validityMillis)
  }

  /**
   * Issued once per lock; callers at the same time wait for the same tokens.
   * Only while the lock is held: a token is a claim to write, and a lock
   * released or lost (its deadline passed) no longer gives one.
   */
  get fencingTokens(): Effect.Effect<ReadonlyArray<bigint>, LockLost | FencingTokenUnavailable> {
    this.fencingPermit ??= Semaphore.makeUnsafe(1)
    return this.fencingPermit.withPermits(1)(Effect.suspend(() => {
      if (this.lossAt(this.time.now()) !== undefined) return Effect.fail(this.lostBecause!)
      return this.tokens !== undefined
        ? Effect.succeed(this.tokens)
        : Effect.tap(this.issueTokens(this), (tokens) => Effect.sync(() => void (this.tokens = tokens)))
    }))
  }

  get fencingToken(): Effect.Effect<bigint, LockLost | FencingTokenUnavailable> {
    return Effect.map(this.fencingTokens, (tokens) => tokens[0])
  }

  /** Extensions of one lock, by hand and automatic, run one after another: each moves the deadline from its own start. */
  oneExtensionAtATime<A, E, R>(extension: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    this.extensionPermit ??= Semaphore.makeUnsafe(1)
    return this.extensionPermit.withPermits(1)(extension)
  }

  protected lostFor(reason: LossReason): void {
    Metrics.lost(reason)
  }

  get validUntilMillis(): number {
    return this.deadline
  }

  readonly guard = (minRemaining: Duration.Input) => {
    const requiredMillis = Options.nonNegativeMillis("minRemaining", minRemaining, Validate.readMillis)
    return <A, E, R>(
      self: Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | LockLost | ValidityTooShort | InvalidOptions, R> =>
      Effect.suspend((): Effect.Effect<A, E | LockLost | ValidityTooShort | InvalidOptions, R> => {
        if (requiredMillis instanceof Options.Problem) {
          return Effect.fail(Validate.invalid(requiredMillis.option, requiredMillis.detail))
        }
        const now = this.time.now()
        if (this.lossAt(now) !== undefined) return Effect.fail(this.lostBecause!)
        const remainingMillis = this.deadline - now
        return remainingMillis < requiredMillis
          ? Effect.fail(new ValidityTooShort({ resources: this.resources, remainingMillis, requiredMillis }))
          : self
      })
  }

  get extensions(): number {
    return this.extensionCount
  }

  get remaining(): Effect.Effect<Duration.Duration> {
    return Effect.sync(() => Duration.millis(Math.max(0, this.deadline - this.time.now())))
  }

  /** Why the lock was lost, if it was. */
  get lostBecause(): LockLost | undefined {
    if (this.lostAs === undefined) return undefined
    this.lostError ??= new LockLost({
      resources: this.resources,
      reason: this.lostAs.reason,
      outcomes: this.lostAs.outcomes
    })
    return this.lostError
  }

  get lost(): Effect.Effect<LockLost> {
    return Effect.callback<LockLost>((resume) => {
      const stop = this.whenLost(this.time, () => resume(Effect.succeed(this.lostBecause!)))
      return Effect.sync(stop)
    })
  }
}

/**
 * Run `self` while holding the lock `acquire` takes, released when it ends;
 * interrupted with `LockLost` when the lock is lost (`withLock`, `withPermit`,
 * `withRead`, `withWrite`).
 */
export const whileHolding = <A, E, R, E2, R2>(
  acquire: Effect.Effect<Lock.Lock, E2, R2>,
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, E | E2 | LockLost, Exclude<R | R2, Scope.Scope>> =>
  Effect.scoped(Effect.flatMap(acquire, (lock) => Effect.raceFirst(self, Effect.flatMap(lock.lost, Effect.fail))))
