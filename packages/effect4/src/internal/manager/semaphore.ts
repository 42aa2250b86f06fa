/**
 * A counting semaphore over the lock manager: `limit` slots per resource,
 * each slot an ordinary Redlock lock, and a permit is one slot held (taken
 * in one call per node per round, engine/slots.ts). Two holders of one slot
 * never overlap within their validity (the lock's guarantee), and there are
 * `limit` slots: at most `limit` permits are held at once, under exactly the
 * lock's assumptions. The same slots, of another kind, are a read-write
 * lock's readers (readWrite.ts).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Options from "@effect-redlock/core/engine/options.js"
import * as EngineSlots from "@effect-redlock/core/engine/slots.js"
import type * as Lock from "../../Lock.js"
import type { AcquireOptions, InspectResult } from "../../Redlock.js"
import { type InvalidOptions, LockNotAcquired, type SettingConflict } from "../errors.js"
import * as Acquisition from "./acquisition.js"
import * as Inspection from "./inspection.js"
import type { Settings } from "./settings.js"
import * as Validate from "../validate.js"

/**
 * The slots of a semaphore (`permit`) or of a read-write lock's readers
 * (`read`): each kind names its own keys.
 */
export interface SlotKind {
  readonly name: "permit" | "read"
  /** The option that sets how many slots there are: every client of a resource must use the same (recorded on the nodes). */
  readonly setting: Acquisition.Setting["name"]
}

export const permitSlots: SlotKind = { name: "permit", setting: "limit" }
export const readSlots: SlotKind = { name: "read", setting: "maxReaders" }

/** A refusal of slots as the refusal of the resource whose slots they are (core's engine/slots.ts). */
export const namingResource = (refusal: LockNotAcquired, resource: string): LockNotAcquired =>
  new LockNotAcquired(EngineSlots.namingResource(refusal, resource))

/**
 * One slot of `limit` (a semaphore's permit or a read-write lock's reader),
 * as a scoped lock: one acquisition over every slot of the resource, each
 * attempt one call per node that takes a free slot in the resource's line
 * (engine `AttemptRequest.slots`), on the permit's own options and schedule.
 */
export const acquireSlot = (settings: Settings, kind: SlotKind) => {
  const acquireOne = Acquisition.acquireWithSetting(settings, { named: true, probe: false })
  // The last resource's slots kept: callers ask for the same ones again and again, and the engine
  // makes their keys once per array of names (engine/attempt.ts, AttemptFields).
  let last:
    | { readonly resourceInput: string; readonly limit: number; readonly slots: ReadonlyArray<string> }
    | undefined
  return (
    resourceInput: string,
    options: AcquireOptions & { readonly limit: number },
    ahead = false
  ): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope> => {
    if (typeof options !== "object" || options === null) {
      return Effect.fail(Validate.invalid("options", "expected { limit, ttl, ... }"))
    }
    const permits = Options.permits(resourceInput, options.limit)
    if (permits instanceof Options.Problem) return Effect.fail(Validate.invalid(permits.option, permits.detail))
    const { limit, resource } = permits
    if (last === undefined || last.resourceInput !== resourceInput || last.limit !== limit) {
      last = {
        resourceInput,
        limit,
        slots: Array.from({ length: limit }, (_, slot) => Options.slotResource(resource, slot, kind.name))
      }
    }
    const setting: Acquisition.Setting = { resource, name: kind.setting, value: limit }
    return acquireOne(last.slots, options, setting, { ahead }).pipe(
      Effect.catchTag("LockNotAcquired", (refusal) => Effect.fail(namingResource(refusal, resource)))
    )
  }
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
