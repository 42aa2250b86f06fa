/**
 * A counting semaphore over the lock manager: `limit` slots per resource,
 * each slot an ordinary Redlock lock, and a permit is one slot held. Two
 * holders of one slot never overlap within their validity (the lock's
 * guarantee), and there are `limit` slots: at most `limit` permits are held
 * at once, under exactly the lock's assumptions. Counting holders on each
 * node and taking a majority of the counts is not safe (test/semaphore.test.ts
 * shows three holders of a limit of two); this is why each slot is a lock.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Clock from "effect/Clock"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import type * as Lock from "../../Lock.js"
import type { AcquireOptions } from "../../Redlock.js"
import type { PermitOptions, PermitsInspection } from "../../Semaphore.js"
import { InvalidOptions, LockNotAcquired } from "../errors.js"
import type { HeldLock } from "../lock.js"
import * as Monotonic from "../monotonic.js"
import * as Retry from "../retry.js"
import * as Validate from "../validate.js"
import * as Waiting from "../waiting.js"
import * as Acquisition from "./acquisition.js"
import * as Inspection from "./inspection.js"
import type { Settings } from "./settings.js"

/**
 * The slots of a semaphore (`permit`) or of a read-write lock's readers
 * (`read`, readwrite.ts): each kind names its own keys, so a semaphore and
 * a read-write lock on the same resource are unrelated. Read slots are
 * taken without the probe: a writer waits in their lines while holding no
 * key of them (see `Acquisition.Variant`).
 */
export interface SlotKind {
  readonly name: "permit" | "read"
  readonly probe: boolean
}

export const permitSlots: SlotKind = { name: "permit", probe: true }
export const readSlots: SlotKind = { name: "read", probe: false }

/**
 * The lock resource of one slot. Users' resources never hold a NUL
 * character (Validate.resources), so no lock of theirs can take a slot.
 */
export const slotResource = (resource: string, slot: number, kind: SlotKind = permitSlots): string =>
  `${resource}\u0000${kind.name}${slot}`

/** Slot names are made here, from a checked resource. */
export const slotNames: Acquisition.ResourceCheck = (input) =>
  Either.right((Array.isArray(input) ? input : [input]) as unknown as readonly [string, ...Array<string>])

export const acquirePermit = (settings: Settings) => acquireSlot(settings, permitSlots)

/** One slot of `limit`, as a semaphore's permit or a read-write lock's reader. */
export const acquireSlot = (settings: Settings, kind: SlotKind) => {
  const variant: Acquisition.Variant = { checkResources: slotNames, probe: kind.probe }
  const acquireSlot = Acquisition.acquire(settings, variant)
  const singleAttempt = Acquisition.singleAttempts(settings, variant)
  return (
    resourceInput: string,
    options: PermitOptions
  ): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired, Scope.Scope> =>
    Effect.withFiberRuntime((fiber): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired, Scope.Scope> => {
      if (typeof options !== "object" || options === null) {
        return Effect.fail(new InvalidOptions({ option: "options", detail: "expected { limit, ttl, ... }" }, true))
      }
      const permits = Validate.permits(resourceInput, options.limit)
      if (Either.isLeft(permits)) return Effect.fail(permits.left)
      const { limit, resource } = permits.right
      // Checked up front, as each slot's acquisition checks them again: waiting needs the node timeout and the schedule.
      const checked = Acquisition.parseOptions(settings, options)
      if (Either.isLeft(checked)) return Effect.fail(checked.left)
      const { nodeTimeout, schedule } = checked.right
      // Each slot gets one attempt per round and no place in its line: a
      // waiter for any slot must not hold up one slot's line.
      const slotOptions: AcquireOptions = {
        ttl: options.ttl,
        nodeTimeout: options.nodeTimeout,
        autoExtend: options.autoExtend,
        retry: Schedule.stop
      }
      const keys = Array.from({ length: limit }, (_, slot) => settings.keyPrefix + slotResource(resource, slot, kind))
      const surroundings = Acquisition.surroundingsOf(settings, fiber)
      if (Acquisition.runsPlain(surroundings)) {
        const slotChecked = Either.getOrThrow(Acquisition.parseOptions(settings, slotOptions))
        const slot = (index: number) => singleAttempt(surroundings, slotResource(resource, index, kind), slotChecked)
        return plainPermit(settings, resource, keys, slot, nodeTimeout, schedule, surroundings.clock)
      }
      let attempts = 0
      // The slot whose release was announced last, if any since the last round.
      let released: number | undefined
      // One round: every slot once, from the slot whose release was
      // announced last if any (it is free, unless another waiter was
      // quicker), else from a random one, so that permits spread over the
      // slots rather than every caller trying slot 0 first. The options
      // were checked above, so a slot's acquisition cannot find them invalid.
      const round = Effect.suspend(() => {
        const first = released === undefined ? Random.nextIntBetween(0, limit) : Effect.succeed(released)
        released = undefined
        return Effect.flatMap(first, (first) => {
          const trySlot = (tried: number): Effect.Effect<Lock.Lock, LockNotAcquired, Scope.Scope> =>
            acquireSlot(slotResource(resource, (first + tried) % limit, kind), slotOptions).pipe(
              Effect.tap(() => void attempts++),
              Effect.catchTags({
                InvalidOptions: Effect.die,
                LockNotAcquired: (refusal) => {
                  attempts++
                  return tried + 1 < limit ? trySlot(tried + 1) : Effect.fail(refusal)
                }
              })
            )
          return trySlot(0)
        })
      })
      return Effect.flatMap(Effect.all([Monotonic.monotonicMillis, Effect.scope]), ([startedAt, scope]) => {
        const refused = (refusal: LockNotAcquired) =>
          Effect.map(Monotonic.monotonicMillis, (now) =>
            // The refusal counts every slot attempt.
            namingResource(refusal, resource, { attempts, elapsedMillis: now - startedAt }))
        // Between rounds, the lock's waiting (waiting.ts) on the semaphore's
        // schedule: it watches every slot, and a release of any slot that a
        // majority of nodes announces wakes the waiter for another round.
        const waiter: Waiting.Waiter<Lock.Lock> = {
          ...slotsWatched(settings, keys, nodeTimeout),
          attempt: () => Scope.extend(round, scope),
          heard: (key) => void (released = keys.indexOf(key))
        }
        return round.pipe(
          Effect.catchAll((refusal) => Waiting.untilGranted(waiter, refusal, schedule)),
          Effect.catchAll((refusal) => Effect.flatMap(refused(refusal), Effect.fail))
        )
      })
    })
}

/** What the waiting between rounds reads of a permit's acquisition: every slot is watched. */
const slotsWatched = (settings: Settings, keys: ReadonlyArray<string>, nodeTimeout: Duration.Duration) => ({
  nodes: settings.nodes,
  keys,
  // Slots have no line, so their releases name no waiter: none is ours.
  value: "",
  quorum: settings.quorum,
  watch: settings.announcesReleases,
  nodeTimeout,
  holderGoneAt: undefined,
  leaseEndsAt: undefined,
  lease: () => 0
})

/**
 * The rounds above and the waiting between them as plain code over the
 * nodes' promises, where a lock's acquisition runs so too
 * (`Acquisition.runsPlain`): each slot's attempt is the lock's own attempt
 * on the engine, with no fiber and no error made for a refused one (in the
 * rounds as effects, each slot attempt is a whole acquisition). The first
 * round, then the waiting (waiting.ts `untilGrantedPlain`), run in one
 * asynchronous step that interruption cancels, in an uninterruptible
 * region: a slot granted is registered in the scope, and a slot that may
 * hold keys when the acquisition ends without a permit (its attempt was in
 * flight) is left, which releases its keys.
 */
const plainPermit = (
  settings: Settings,
  resource: string,
  keys: ReadonlyArray<string>,
  slot: (index: number) => Acquisition.SingleAttempt,
  nodeTimeout: Duration.Duration,
  schedule: Schedule.Schedule<unknown, LockNotAcquired>,
  clock: Clock.Clock
): Effect.Effect<Lock.Lock, LockNotAcquired> => {
  const limit = keys.length
  const startedAt = Monotonic.unsafeMonotonicMillis(clock)
  let attempts = 0
  let released: number | undefined
  let cancelled = false
  // The slot acquisition that may hold keys: its attempt is in flight, or it was granted and not registered yet.
  let holding: Acquisition.SingleAttempt | undefined
  // The slot acquisition of the last refused attempt.
  let last: Acquisition.SingleAttempt | undefined
  const waiter: Waiting.PlainWaiter<HeldLock> = {
    ...slotsWatched(settings, keys, nodeTimeout),
    heard: (key) => void (released = keys.indexOf(key)),
    // A round, as the reference's.
    attemptPlain: (_, done) => {
      const first = released ?? Math.floor(Math.random() * limit)
      released = undefined
      const trySlot = (tried: number) => {
        const attempt = slot((first + tried) % limit)
        holding = attempt
        attempts++
        attempt.attemptPlain(0, (end) => {
          if (end.granted !== undefined) return done(end)
          // Refused: the engine sent the undo of whatever the attempt set.
          holding = undefined
          last = attempt
          // A cancelled round tries no further slot.
          if (tried + 1 < limit && !cancelled) return trySlot(tried + 1)
          done(end)
        })
      }
      trySlot(0)
    }
  }
  const rounds = Effect.flatMap(Effect.runtime<never>(), (runtime) =>
    Effect.async<HeldLock, LockNotAcquired>((resume) => {
      let stopWaiting: (() => unknown) | undefined
      waiter.attemptPlain(0, (end) => {
        if (cancelled) return
        if (end.granted !== undefined) return resume(Effect.succeed(end.granted))
        stopWaiting = Waiting.untilGrantedPlain(
          waiter,
          end,
          schedule,
          Retry.plainSteps(schedule),
          clock,
          Monotonic.liveScheduler(clock)!,
          Waiting.runnerOf(runtime),
          resume
        )
      })
      return Effect.sync(() => {
        cancelled = true
        stopWaiting?.()
      })
    }))
  return Effect.uninterruptibleMask((restore) =>
    Effect.matchCauseEffect(restore(rounds), {
      onSuccess: (lock) => {
        const granted = holding!
        holding = undefined
        granted.measure(undefined)
        return granted.register(lock)
      },
      onFailure: (cause) => {
        const ended = Effect.suspend(() => {
          const failure = Cause.failureOption(cause)
          if (Option.isSome(failure)) last?.measure(failure.value)
          const elapsedMillis = Monotonic.unsafeMonotonicMillis(clock) - startedAt
          // The refusal counts every slot attempt.
          return Effect.failCause(Cause.map(cause, (refusal) => namingResource(refusal, resource, { attempts, elapsedMillis })))
        })
        const left = holding
        holding = undefined
        return left === undefined ? ended : Effect.zipRight(left.leave(), ended)
      }
    })
  )
}

/**
 * A slot's refusal as the refusal of the resource whose slot it is (users
 * asked for the resource, not for a slot); `counted`: the attempts and time
 * of a whole acquisition of several slot attempts.
 */
export const namingResource = (
  refusal: LockNotAcquired,
  resource: string,
  counted?: { readonly attempts: number; readonly elapsedMillis: number }
): LockNotAcquired =>
  new LockNotAcquired({
    resources: [resource],
    reason: refusal.reason,
    attempts: counted?.attempts ?? refusal.attempts,
    elapsedMillis: counted?.elapsedMillis ?? refusal.elapsedMillis,
    quorum: refusal.quorum,
    outcomes: refusal.outcomes
  }, true)

/** Who holds each slot of a semaphore (or of a read-write lock's readers), read as `inspect` reads a lock. */
export const inspectPermits = (
  settings: Settings,
  resourceInput: string,
  limitInput: number,
  kind: SlotKind = permitSlots
): Effect.Effect<PermitsInspection, InvalidOptions> =>
  Effect.flatMap(Validate.permits(resourceInput, limitInput), ({ limit, resource }) =>
    Effect.map(
      Effect.forEach(
        Array.from({ length: limit }, (_, slot) => slotResource(resource, slot, kind)),
        (slot) => Inspection.inspectChecked(settings, slot),
        { concurrency: "unbounded" }
      ),
      (slots) => ({ resource, limit, slots, held: slots.filter((slot) => Option.isSome(slot.holder)).length })
    ))
