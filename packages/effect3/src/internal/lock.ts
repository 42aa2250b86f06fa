/**
 * The held-lock value and the state the manager keeps on it.
 *
 * @internal
 */
import type { NonEmptyReadonlyArray } from "effect/Array"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as HashSet from "effect/HashSet"
import * as MetricLabel from "effect/MetricLabel"
import * as Scope from "effect/Scope"
import type * as Lock from "../Lock.js"
import type { NodeOutcome } from "../RedisNode.js"
import { type FencingTokenUnavailable, InvalidOptions, LockLost, ValidityTooShort } from "./errors.js"
import * as RedlockMetrics from "./metrics.js"
import * as Monotonic from "./monotonic.js"
import { Holding } from "@effect-redlock/core/engine/holding.js"
import type { RedisNodeError } from "./nodes.js"
import type { Time } from "@effect-redlock/core/engine/time.js"
import * as Options from "@effect-redlock/core/engine/options.js"
import * as Validate from "./validate.js"

/** The mark of a `Lock` (re-exported by the public `Lock` module). */
export const TypeId: Lock.TypeId = Symbol.for("effect-redlock/Lock") as Lock.TypeId

export interface LockFields
  extends Pick<Lock.Lock, "resources" | "keys" | "value" | "ttl" | "validUntilMillis" | "attempts" | "outcomes">
{
  /** How long it was valid when granted (ms, fractional). */
  readonly validityMillis: number
  /** Per-node timeout chosen at acquisition, used by extend and release too. */
  readonly nodeTimeout: Duration.Duration
  /** The same in ms (every release reads it: decoding the Duration showed in its profile). */
  readonly nodeTimeoutMillis: number
  /** When it was acquired, on the monotonic timeline. */
  readonly acquiredAtMillis: number
  /** The lock manager that acquired it (an identity only). */
  readonly manager: object
  /** Issues the tokens on the nodes (the manager's fencing). */
  readonly issueFencingTokens: (
    lock: HeldLock
  ) => Effect.Effect<ReadonlyArray<bigint>, LockLost | FencingTokenUnavailable>
}

export class HeldLock extends Holding<RedisNodeError> implements Lock.Lock {
  readonly [TypeId]: Lock.TypeId = TypeId
  readonly resources: NonEmptyReadonlyArray<string>
  declare readonly keys: NonEmptyReadonlyArray<string>
  readonly ttl: Duration.Duration
  readonly validityMillis: number
  readonly attempts: number
  readonly outcomes: ReadonlyArray<NodeOutcome>
  readonly nodeTimeout: Duration.Duration
  readonly nodeTimeoutMillis: number
  readonly acquiredAtMillis: number

  /** The lock manager that acquired it (an identity only). */
  readonly manager: object
  private lostError: LockLost | undefined
  private readonly issueFencingTokens: LockFields["issueFencingTokens"]
  private tokens: ReadonlyArray<bigint> | undefined
  /** Made on first use: most locks never ask for a token. */
  private fencingPermit: Effect.Semaphore | undefined
  /** Made on first extension. */
  private extensionPermit: Effect.Semaphore | undefined
  /**
   * Made on first use: a fractional Duration holds its nanoseconds as a
   * bigint in an object literal of Effect's, whose site V8 pretenured under
   * load, keeping every permit's bigint through scavenges (engine/attempt.ts,
   * AttemptFields).
   */
  private validityDuration: Duration.Duration | undefined

  constructor(fields: LockFields) {
    super(fields.validUntilMillis, fields.keys, fields.value)
    this.resources = fields.resources
    this.ttl = fields.ttl
    this.validityMillis = fields.validityMillis
    this.attempts = fields.attempts
    this.outcomes = fields.outcomes
    this.nodeTimeout = fields.nodeTimeout
    this.nodeTimeoutMillis = fields.nodeTimeoutMillis
    this.acquiredAtMillis = fields.acquiredAtMillis
    this.manager = fields.manager
    this.issueFencingTokens = fields.issueFencingTokens
  }

  get validity(): Duration.Duration {
    return this.validityDuration ??= Duration.millis(this.validityMillis)
  }

  get validUntilMillis(): number {
    return this.deadline
  }

  get extensions(): number {
    return this.extensionCount
  }

  get remaining(): Effect.Effect<Duration.Duration> {
    return Effect.map(Monotonic.monotonicMillis, (now) => Duration.millis(Math.max(0, this.deadline - now)))
  }

  /** Why the lock was lost, if it was. Built on first use: every release marks a loss, few ask why. */
  get lostBecause(): LockLost | undefined {
    if (this.lostAs === undefined) return undefined
    this.lostError ??= new LockLost({
      resources: this.resources,
      reason: this.lostAs.reason,
      outcomes: this.lostAs.outcomes
    }, true)
    return this.lostError
  }

  /** Record the loss (the first reason wins) and wake everything waiting on `lost`. */
  markLost(reason: LockLost["reason"], outcomes: ReadonlyArray<NodeOutcome> = []): LockLost {
    this.markLostQuietly(reason, outcomes)
    return this.lostBecause!
  }

  protected lostFor(reason: LockLost["reason"]): void {
    RedlockMetrics.lostLocks.unsafeUpdate(1, [MetricLabel.make("reason", reason)])
  }

  /**
   * Run `self` while the lock is held: when it is lost (its deadline passes,
   * or a node says it is not ours), `self` is interrupted and the result is
   * the `LockLost` failure. One child fiber, one timer at the deadline (set
   * again when an extension moved it) and a listener.
   */
  runWhileHeld<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | LockLost, R> {
    return Effect.withFiberRuntime((parent) =>
      Effect.uninterruptibleMask((restore) => this.onChildUntilLoss(self, restore, Monotonic.timeOfFiber(parent)))
    )
  }

  /**
   * `runWhileHeld` inside the hold that acquired the lock (`whileHolding`):
   * in its uninterruptible region already, on its time, and ending with its
   * release, with fewer effects run per hold. The body runs on the caller's
   * own fiber (`runOnFiber`) unless that fiber has children already, which a
   * loss would interrupt with it: then on a child fiber, as `runWhileHeld`.
   */
  runInHold<A, E, R>(self: Effect.Effect<A, E, R>, hold: CallerHold): Effect.Effect<A, E | LockLost, R> {
    return Effect.withFiberRuntime((fiber) => {
      const children = childCount(fiber)
      if (children !== undefined) {
        return children === 0
          ? this.runOnFiber(fiber, self, hold)
          : this.runOnChild(self, hold)
      }
      return Effect.flatMap(
        fiber.children,
        (list) => list.length === 0 ? this.runOnFiber(fiber, self, hold) : this.runOnChild(self, hold)
      )
    })
  }

  /** The body on a child fiber, raced with the loss (`onChildUntilLoss`), then the release. */
  private runOnChild<A, E, R>(self: Effect.Effect<A, E, R>, hold: CallerHold): Effect.Effect<A, E | LockLost, R> {
    return Effect.flatMap(
      Effect.exit(this.onChildUntilLoss(self, hold.restore, hold.time)),
      (exit) => Effect.zipRight(hold.release, exit)
    )
  }

  /** `self` forked (interruptible by `restore`), and its end or the loss of the lock first (`endOrLoss`). */
  private onChildUntilLoss<A, E, R>(
    self: Effect.Effect<A, E, R>,
    restore: CallerHold["restore"],
    time: Time
  ): Effect.Effect<A, E | LockLost, R> {
    return Effect.flatMap(Effect.fork(restore(self)), (child) => restore(this.endOrLoss(child, time)))
  }

  /**
   * The body on `fiber`, the caller's, which has no children: a fork per
   * hold cost Effect 3 ~25 µs of CPU, as much as the rest of a permit
   * (bench/README.md). A loss interrupts the fiber itself, as
   * `lossInterruptor`; once the body ended, that interruption is taken back
   * (the fiber's interrupted cause is a FiberRef) and the result is the
   * `LockLost` failure, as a child's interruption made it. The fibers the
   * body forked are its children here: interrupted (and awaited) before the
   * release, as a child fiber's end interrupted them, so that none runs on
   * without the lock.
   */
  private runOnFiber<A, E, R>(
    fiber: Fiber.RuntimeFiber<unknown, unknown>,
    self: Effect.Effect<A, E, R>,
    hold: CallerHold
  ): Effect.Effect<A, E | LockLost, R> {
    if (this.lostBecause !== undefined) return Effect.zipRight(hold.release, Effect.fail(this.lostBecause))
    let lost = false
    const stopWatching = this.whenLost(hold.time, () => {
      lost = true
      fiber.unsafeInterruptAsFork(lossInterruptor)
    })
    return Effect.flatMap(Effect.exit(hold.restore(self)), (exit): Effect.Effect<A, E | LockLost> => {
      stopWatching()
      const released = Effect.zipRight(interruptChildren(fiber), hold.release)
      // Taken back first: the release runs as on a fiber nobody interrupted.
      return lost
        ? Effect.zipRight(takeBackLossInterruption, Effect.zipRight(released, Effect.fail(this.lostBecause!)))
        : Effect.zipRight(released, exit)
    })
  }

  /** The end of `child` (its exit, its FiberRefs inherited), or the loss of the lock first (`child` interrupted). */
  private endOrLoss<A, E>(child: Fiber.RuntimeFiber<A, E>, time: Time): Effect.Effect<A, E | LockLost> {
    return Effect.async<A, E | LockLost>((resume) => {
      let settled = false
      let stopWatching = () => {}
      const settle = () => {
        settled = true
        stopWatching()
        child.removeObserver(ended)
      }
      const lose = () => {
        if (settled) return
        settle()
        resume(Effect.zipRight(Fiber.interrupt(child), Effect.fail(this.lostBecause!)))
      }
      const ended = (exit: Exit.Exit<A, E>) => {
        if (settled) return
        settle()
        resume(Effect.zipRight(Fiber.inheritAll(child), exit))
      }
      if (this.lostBecause !== undefined) return lose()
      child.addObserver(ended)
      stopWatching = this.whenLost(time, lose)
      return Effect.suspend(() => {
        if (settled) return Effect.void
        settle()
        return Fiber.interrupt(child)
      })
    })
  }

  /**
   * Issued once per lock; callers at the same time wait for the same tokens.
   * Only while the lock is held: a token is a claim to write, and a lock
   * released or lost (its deadline passed) no longer gives one.
   */
  get fencingTokens(): Effect.Effect<ReadonlyArray<bigint>, LockLost | FencingTokenUnavailable> {
    this.fencingPermit ??= Effect.unsafeMakeSemaphore(1)
    return this.fencingPermit.withPermits(1)(Effect.flatMap(Monotonic.monotonicMillis, (now) => {
      if (this.lossAt(now) !== undefined) return Effect.fail(this.lostBecause!)
      return this.tokens !== undefined
        ? Effect.succeed(this.tokens)
        : Effect.tap(this.issueFencingTokens(this), (tokens) => void (this.tokens = tokens))
    }))
  }

  /**
   * Run extensions of this lock one at a time: two at once could leave the
   * deadline of the one that finished last, not of the one the nodes applied
   * last.
   */
  oneExtensionAtATime<A, E, R>(extension: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    this.extensionPermit ??= Effect.unsafeMakeSemaphore(1)
    return this.extensionPermit.withPermits(1)(extension)
  }

  get fencingToken(): Effect.Effect<bigint, LockLost | FencingTokenUnavailable> {
    return Effect.map(this.fencingTokens, (tokens) => tokens[0])
  }

  get lost(): Effect.Effect<LockLost> {
    return Effect.flatMap(Monotonic.currentTime, (time) =>
      Effect.async<LockLost>((resume) => {
        const stop = this.whenLost(time, () => resume(Effect.succeed(this.lostBecause!)))
        return Effect.sync(stop)
      }))
  }

  readonly guard = (minRemaining: Duration.DurationInput) => {
    const requiredMillis = Options.nonNegativeMillis("minRemaining", minRemaining, Validate.readMillis)
    return <A, E, R>(
      self: Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | LockLost | ValidityTooShort | InvalidOptions, R> =>
      Effect.flatMap(
        Monotonic.monotonicMillis,
        (now): Effect.Effect<A, E | LockLost | ValidityTooShort | InvalidOptions, R> => {
          if (requiredMillis instanceof Options.Problem) {
            return Effect.fail(
              new InvalidOptions({ option: requiredMillis.option, detail: requiredMillis.detail }, true)
            )
          }
          if (this.lossAt(now) !== undefined) return Effect.fail(this.lostBecause!)
          const remainingMillis = this.deadline - now
          return remainingMillis < requiredMillis
            ? Effect.fail(new ValidityTooShort({ resources: this.resources, remainingMillis, requiredMillis }, true))
            : self
        }
      )
  }
}

/**
 * Who interrupts a hold's body on its caller's fiber when the lock is lost
 * (`HeldLock.runOnFiber`): no fiber's id (those count up from 0), so that
 * its interruption is told apart from any other.
 */
const lossInterruptor = FiberId.make(-1, 0)

const onlyByLoss = (cause: Cause.Cause<never>): boolean => {
  const interruptors = Cause.interruptors(cause)
  return HashSet.size(interruptors) === 1 && HashSet.has(interruptors, lossInterruptor)
}

/** The fiber is no longer interrupted where only a loss interrupted it; another's interruption stands. */
const takeBackLossInterruption = FiberRef.update(
  FiberRef.interruptedCause,
  (cause) => onlyByLoss(cause) ? Cause.empty : cause
)

/**
 * How many children `fiber` has now, where Effect 3's fiber tells it at once
 * (`getChildren`, a method of its fibers outside the `RuntimeFiber`
 * interface); `undefined` where it does not. `fiber.children` asks the
 * fiber by a message: ~4 µs of CPU, twice per hold.
 */
const childCount = (fiber: Fiber.RuntimeFiber<unknown, unknown>): number | undefined => {
  const { getChildren } = fiber as { readonly getChildren?: () => ReadonlySet<unknown> }
  return typeof getChildren === "function" ? getChildren.call(fiber).size : undefined
}

/** `fiber`'s children interrupted, each awaited (none: nothing is run). */
const interruptChildren = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Effect.Effect<void> =>
  childCount(fiber) === 0
    ? Effect.void
    : Effect.flatMap(fiber.children, (children) => children.length === 0 ? Effect.void : Fiber.interruptAll(children))

/**
 * Where `whileHolding` takes a lock it acquires from a manager made by
 * `Redlock.make`, instead of a scope: the acquisition runs inside
 * whileHolding's uninterruptible region, waits where `restore` lets it be
 * interrupted, and leaves the granted lock's release here. A scope made,
 * extended and closed per hold cost ~20 µs of CPU (bench/README.md).
 */
export class CallerHold {
  /** The granted lock's release, run as its scope's finalizer would run it. */
  release: Effect.Effect<void> = Effect.void
  /** The acquisition's time (its fiber's clock: a test's TestClock), set with the release. */
  time!: Time
  constructor(readonly restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) {}

  /** Told by the acquisition once it holds the lock. */
  granted(release: Effect.Effect<void>, time: Time): void {
    this.release = release
    this.time = time
  }
}

/** Lock managers made by `Redlock.make`: each of their acquisitions takes a `CallerHold` after its options. */
const takingHolds = new WeakSet<object>()

export const takesCallerHolds = (manager: object): void => {
  takingHolds.add(manager)
}

/**
 * Run `self` while holding what `acquire`, one of `manager`'s acquisitions,
 * grants on `resource` (a lock, a permit), and release it when `self` ends;
 * `self` is interrupted and fails with `LockLost` if it is lost first.
 * `withLock`, `withPermit`, `withRead` and `withWrite`. Where `manager` takes
 * holds, `acquire` is given one after its options; otherwise (a manager of
 * the user's own making) it runs in a scope of its own.
 */
export const whileHolding = <Resource, Options, A, E, R, E2>(
  manager: object,
  acquire: (resource: Resource, options: Options) => Effect.Effect<Lock.Lock, E2, Scope.Scope>,
  resource: Resource,
  options: Options,
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, E | E2 | LockLost, R> => {
  if (!takingHolds.has(manager)) {
    return Effect.acquireUseRelease(
      Scope.make(),
      (scope) =>
        Effect.flatMap(Scope.extend(acquire.call(manager, resource, options), scope), (lock) => heldWhile(lock, self)),
      (scope, exit) => Scope.close(scope, exit)
    )
  }
  const acquireInHold = acquire as (
    resource: Resource,
    options: Options,
    hold: CallerHold
  ) => Effect.Effect<Lock.Lock, E2, Scope.Scope>
  return Effect.uninterruptibleMask((restore) => {
    const hold = new CallerHold(restore)
    // The lock is a HeldLock (the manager's own).
    return Effect.flatMap(
      acquireInHold.call(manager, resource, options, hold),
      (lock) => (lock as HeldLock).runInHold(self, hold)
    )
  }) as Effect.Effect<A, E | E2 | LockLost, R> // No scope is asked for: an acquisition given a hold reads none.
}

/** `self` while `lock` is held: a lock of ours watches its own loss; another's is raced with its `lost`. */
const heldWhile = <A, E, R>(lock: Lock.Lock, self: Effect.Effect<A, E, R>): Effect.Effect<A, E | LockLost, R> =>
  lock instanceof HeldLock ? lock.runWhileHeld(self) : Effect.raceFirst(self, Effect.flatMap(lock.lost, Effect.fail))
