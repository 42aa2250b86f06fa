/**
 * A counting semaphore over the lock manager: `limit` slots per resource,
 * each slot an ordinary Redlock lock, and a permit is one slot held (the
 * engine's rounds over the slots, engine/slots.ts). Two holders of one slot
 * never overlap within their validity (the lock's guarantee), and there are
 * `limit` slots: at most `limit` permits are held at once, under exactly the
 * lock's assumptions. The same slots, of another kind, are a read-write
 * lock's readers (readWrite.ts).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Options from "../engine/options.js"
import { SlotRounds } from "../engine/slots.js"
import * as Waiting from "../engine/waiting.js"
import type * as Lock from "../Lock.js"
import type { AcquireOptions, InspectResult } from "../Redlock.js"
import { type InvalidOptions, LockNotAcquired, type SettingConflict } from "../RedlockError.js"
import * as Acquisition from "./acquisition.js"
import * as Fencing from "./fencing.js"
import * as Inspection from "./inspection.js"
import type { HeldLock } from "./lock.js"
import * as Metrics from "./metrics.js"
import * as Retry from "./retry.js"
import type { Settings } from "./settings.js"
import * as TimeOf from "./time.js"
import * as Tracing from "./tracing.js"
import * as Validate from "./validate.js"

/**
 * The slots of a semaphore (`permit`) or of a read-write lock's readers
 * (`read`): each kind names its own keys. Read slots are taken without the
 * probe: a writer waits in their lines while holding no key of them.
 */
export interface SlotKind {
  readonly name: "permit" | "read"
  readonly probe: boolean
  /** The option that sets how many slots there are: every client of a resource must use the same (recorded on the nodes). */
  readonly setting: Acquisition.Setting["name"]
}

export const permitSlots: SlotKind = { name: "permit", probe: true, setting: "limit" }
export const readSlots: SlotKind = { name: "read", probe: false, setting: "maxReaders" }

/** A slot's refusal as the refusal of the resource whose slot it is (users asked for the resource). */
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
  })

/** One slot of `limit` (a semaphore's permit or a read-write lock's reader), as a scoped lock. */
export const acquireSlot = (settings: Settings, kind: SlotKind) => {
  const issueTokens = Fencing.issueTokens(settings)
  return (
    resourceInput: string,
    options: AcquireOptions & { readonly limit: number },
    ahead = false
  ): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope> =>
    Effect.withFiber<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope>((fiber) => {
      if (typeof options !== "object" || options === null) return Effect.fail(Validate.invalid("options", "expected { limit, ttl, ... }"))
      const permits = Options.permits(resourceInput, options.limit)
      if (permits instanceof Options.Problem) return Effect.fail(Validate.invalid(permits.option, permits.detail))
      const request = Acquisition.parseOptions(settings, options)
      if (!("ttlMillis" in request)) return Effect.fail(request)
      const { limit, resource } = permits
      const time = TimeOf.timeOfFiber(fiber)
      const random = Acquisition.randomOf(fiber)
      const scope = Context.get(fiber.context as Context.Context<Scope.Scope>, Scope.Scope)
      const slots = Array.from({ length: limit }, (_, slot) => Options.slotResource(resource, slot, kind.name))
      // Each slot gets one attempt per round and no place in its line: a waiter for any slot must not hold up one slot's line.
      const slotRequest = { ...request, retry: Retry.noRetry, waits: false }
      const setting: Acquisition.Setting = { resource, name: kind.setting, value: limit }
      const waiter = new SlotRounds<HeldLock, Acquisition.Refused, Acquisition.Acquisition>(
        settings.nodes,
        settings.quorum,
        settings.announcesReleases,
        slots.map((slot) => settings.keyPrefix + slot),
        request.nodeTimeoutMillis,
        (index) =>
          new Acquisition.Acquisition(settings, { ...slotRequest, resources: [slots[index]] }, time, issueTokens, kind.probe, setting, ahead),
        random
      )
      const startedAt = time.now()
      // The first round, then the waiting, as one step that interruption cancels.
      const rounds = Effect.callback<HeldLock, LockNotAcquired>((resume) => {
        let stopWaiting: (() => unknown) | undefined
        waiter.attempt(0, (end) => {
          if (waiter.cancelled) return
          if (end.granted !== undefined) return resume(Effect.succeed(end.granted))
          if (!request.waits) return resume(Effect.fail(end.refusal))
          const retry = Retry.forWait(request.retry, random, fiber.context)
          stopWaiting = Waiting.untilGranted<HeldLock, Acquisition.Refused>(waiter, end, retry, time, (ended) =>
            resume(
              ended._tag === "Granted"
                ? Effect.succeed(ended.lock)
                : ended._tag === "Refused"
                ? Effect.fail(ended.refused.refusal)
                : Effect.failCause(Cause.die(ended.cause))
            ))
        })
        return Effect.sync(() => {
          waiter.cancelled = true
          stopWaiting?.()
        })
      })
      // A slot granted is registered in the scope; a slot whose attempt was in flight when the
      // acquisition ended without a permit is left, which releases its keys.
      return Effect.uninterruptibleMask((restore) =>
        Effect.matchCauseEffect(restore(rounds), {
          onSuccess: (lock) => {
            waiter.holding = undefined
            Metrics.acquired(time.now() - startedAt, waiter.attempts, fiber.context)
            return Acquisition.register(settings, scope, lock, request.maxHoldMillis, Tracing.isRecorded(fiber))
          },
          onFailure: (cause) => {
            const counted = { attempts: waiter.attempts, elapsedMillis: time.now() - startedAt }
            Acquisition.measureFailure({ time, firstStart: startedAt, attempts: waiter.attempts }, cause, fiber.context)
            const conflict = Acquisition.conflictError(setting, waiter.conflict)
            const ended: Effect.Effect<never, LockNotAcquired | SettingConflict> = conflict !== undefined && Cause.hasFails(cause)
              ? Effect.fail(conflict)
              : Effect.failCause(Cause.map(cause, (refusal) => namingResource(refusal, resource, counted)))
            const left = waiter.holding
            waiter.holding = undefined
            if (left === undefined) return ended
            left.abandon()
            return Effect.andThen(left.leave(), ended)
          }
        })
      )
    })
}

/** What `inspectPermits` reads: each slot as `inspect` reads a lock, and how many are held. */
export interface SlotsInspection {
  readonly resource: string
  readonly limit: number
  readonly slots: ReadonlyArray<InspectResult>
  readonly held: number
}

/** Who holds each slot of a semaphore (or of a read-write lock's readers). */
export const inspectSlots = (
  settings: Settings,
  resourceInput: string,
  limitInput: number,
  kind: SlotKind
): Effect.Effect<SlotsInspection, InvalidOptions> => {
  const permits = Options.permits(resourceInput, limitInput)
  if (permits instanceof Options.Problem) return Effect.fail(Validate.invalid(permits.option, permits.detail))
  const { limit, resource } = permits
  return Effect.map(
    Effect.forEach(
      Array.from({ length: limit }, (_, slot) => Options.slotResource(resource, slot, kind.name)),
      (slot) => Inspection.inspectChecked(settings, slot),
      { concurrency: "unbounded" }
    ),
    (slots) => ({ resource, limit, slots, held: slots.filter((slot) => Option.isSome(slot.holder)).length })
  )
}
