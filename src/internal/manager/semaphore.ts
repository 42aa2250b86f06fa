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
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type * as Lock from "../../Lock.js"
import type { AcquireOptions } from "../../Redlock.js"
import type { PermitOptions, PermitsInspection } from "../../Semaphore.js"
import { InvalidOptions, LockNotAcquired, type SettingConflict } from "../errors.js"
import type { HeldLock } from "../lock.js"
import * as Retry from "../retry.js"
import * as Options from "../../engine/options.js"
import * as Validate from "../validate.js"
import { SlotRounds } from "../../engine/slots.js"
import * as Waiting from "../../engine/waiting.js"
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
  /** The option that sets how many slots there are: every client of a resource must use the same (recorded on the nodes). */
  readonly setting: Acquisition.Setting["name"]
}

export const permitSlots: SlotKind = { name: "permit", probe: true, setting: "limit" }
export const readSlots: SlotKind = { name: "read", probe: false, setting: "maxReaders" }

/**
 * The lock resource of one slot. Users' resources never hold a NUL
 * character (Validate.resources), so no lock of theirs can take a slot.
 */
export const slotResource = (resource: string, slot: number, kind: SlotKind = permitSlots): string =>
  Options.slotResource(resource, slot, kind.name)

/** Slot names are made here, from a checked resource. */
export const slotNames: Acquisition.ResourceCheck = (input) =>
  Either.right((Array.isArray(input) ? input : [input]) as unknown as readonly [string, ...Array<string>])

export const acquirePermit = (settings: Settings) => acquireSlot(settings, permitSlots)

/** One slot of `limit`, as a semaphore's permit or a read-write lock's reader. */
export const acquireSlot = (settings: Settings, kind: SlotKind) => {
  const variant: Acquisition.Variant = { checkResources: slotNames, probe: kind.probe }
  const singleAttempt = Acquisition.singleAttempts(settings, variant)
  return (
    resourceInput: string,
    options: PermitOptions,
    ahead = false
  ): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope> =>
    Effect.withFiberRuntime((fiber): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope> => {
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
      const surroundings = Acquisition.surroundingsOf(fiber)
      const slotChecked = Either.getOrThrow(Acquisition.parseOptions(settings, slotOptions))
      const setting: Acquisition.Setting = { resource, name: kind.setting, value: limit }
      const slot = (index: number) => singleAttempt(surroundings, slotResource(resource, index, kind), slotChecked, setting, ahead)
      return permit(settings, setting, keys, slot, nodeTimeout, schedule, surroundings)
    })
}

/**
 * A permit's acquisition: the engine's rounds over the slots
 * (engine/slots.ts), each slot's attempt the lock's own attempt with no
 * error made for a refused one, and the lock's waiting on the semaphore's
 * schedule between rounds.
 *
 * The first round, then the waiting, run in one asynchronous step that
 * interruption cancels, in an uninterruptible region: a slot granted is
 * registered in the scope, and a slot that may hold keys when the
 * acquisition ends without a permit (its attempt was in flight) is left,
 * which releases its keys.
 */
const permit = (
  settings: Settings,
  setting: Acquisition.Setting,
  keys: ReadonlyArray<string>,
  slot: (index: number) => Acquisition.SingleAttempt,
  nodeTimeout: Duration.Duration,
  schedule: Schedule.Schedule<unknown, LockNotAcquired>,
  { random, time }: Acquisition.Surroundings
): Effect.Effect<Lock.Lock, LockNotAcquired | SettingConflict> => {
  const { resource } = setting
  const startedAt = time.now()
  const waiter = new SlotRounds<HeldLock, Acquisition.Refused, Acquisition.SingleAttempt>(
    settings.nodes,
    settings.quorum,
    settings.announcesReleases,
    keys,
    Duration.toMillis(nodeTimeout),
    slot,
    random
  )
  const rounds = Effect.flatMap(Effect.runtime<never>(), (runtime) =>
    Effect.async<HeldLock, LockNotAcquired>((resume) => {
      let stopWaiting: (() => unknown) | undefined
      waiter.attempt(0, (end) => {
        if (waiter.cancelled) return
        if (end.granted !== undefined) return resume(Effect.succeed(end.granted))
        const retry = Retry.forWait(schedule, random, Retry.runnerOf(runtime))
        stopWaiting = Waiting.untilGranted<HeldLock, Acquisition.Refused>(waiter, end, retry, time, (end) =>
          resume(Acquisition.exitOf(end)))
      })
      return Effect.sync(() => {
        waiter.cancelled = true
        stopWaiting?.()
      })
    }))
  return Effect.uninterruptibleMask((restore) =>
    Effect.matchCauseEffect(restore(rounds), {
      onSuccess: (lock) => {
        const granted = waiter.holding!
        waiter.holding = undefined
        granted.measure(undefined)
        return granted.register(lock)
      },
      onFailure: (cause) => {
        const ended = Effect.suspend((): Effect.Effect<never, LockNotAcquired | SettingConflict> => {
          const failure = Cause.failureOption(cause)
          if (Option.isSome(failure)) waiter.last?.measure(failure.value)
          const elapsedMillis = time.now() - startedAt
          const conflict = Acquisition.conflictError(setting, waiter.conflict)
          if (conflict !== undefined && Option.isSome(failure)) return Effect.fail(conflict)
          // The refusal counts every slot attempt.
          const counted = { attempts: waiter.attempts, elapsedMillis }
          return Effect.failCause(Cause.map(cause, (refusal) => namingResource(refusal, resource, counted)))
        })
        const left = waiter.holding
        waiter.holding = undefined
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
