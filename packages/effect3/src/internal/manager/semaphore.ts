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
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as Lock from "../../Lock.js"
import type { CallerHold } from "../lock.js"
import type { PermitOptions, PermitsInspection } from "../../Semaphore.js"
import { InvalidOptions, LockNotAcquired, type SettingConflict } from "../errors.js"
import * as Options from "@effect-redlock/core/engine/options.js"
import * as EngineSlots from "@effect-redlock/core/engine/slots.js"
import * as Validate from "../validate.js"
import * as Acquisition from "./acquisition.js"
import * as Inspection from "./inspection.js"
import type { Settings } from "./settings.js"

/**
 * The slots of a semaphore (`permit`) or of a read-write lock's readers
 * (`read`, readwrite.ts): each kind names its own keys, so a semaphore and
 * a read-write lock on the same resource are unrelated.
 */
export interface SlotKind {
  readonly name: "permit" | "read"
  /** The option that sets how many slots there are: every client of a resource must use the same (recorded on the nodes). */
  readonly setting: Acquisition.Setting["name"]
}

export const permitSlots: SlotKind = { name: "permit", setting: "limit" }
export const readSlots: SlotKind = { name: "read", setting: "maxReaders" }

/**
 * The lock resource of one slot. Users' resources never hold a NUL
 * character (Validate.resources), so no lock of theirs can take a slot.
 */
export const slotResource = (resource: string, slot: number, kind: SlotKind = permitSlots): string =>
  Options.slotResource(resource, slot, kind.name)

/** Slot names are made here, from a checked resource. */
export const slotNames: Acquisition.ResourceCheck = (input) =>
  Either.right((Array.isArray(input) ? input : [input]) as unknown as readonly [string, ...Array<string>])

export const acquirePermit = (settings: Settings) => {
  const acquirePermitSlot = acquireSlot(settings, permitSlots)
  return (resource: string, options: PermitOptions, hold?: CallerHold) =>
    acquirePermitSlot(resource, options, false, hold)
}

/**
 * One slot of `limit`, as a semaphore's permit or a read-write lock's
 * reader: one acquisition over every slot of the resource, each attempt one
 * call per node that takes a free slot in the resource's line (engine
 * `AttemptRequest.slots`), on the permit's own options and schedule.
 */
export const acquireSlot = (settings: Settings, kind: SlotKind) => {
  const acquireOne = Acquisition.acquireWithSetting(settings, slotVariant)
  const requestOf = slotRequests(kind)
  return (
    resourceInput: string,
    options: PermitOptions,
    ahead = false,
    hold?: CallerHold
  ): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope> => {
    const request = requestOf(resourceInput, options)
    if (Either.isLeft(request)) return Effect.fail(request.left)
    const { resource, setting, slots } = request.right
    return namingRefusals(acquireOne(slots, options, setting, { ahead }, hold), resource)
  }
}

/** Slot keys are made by the library (no user check), and tried with the line-keeping script (no probe). */
export const slotVariant: Acquisition.Variant = { checkResources: slotNames, probe: false }

/**
 * `slotRequest` of one kind, the last one kept: callers ask for the same
 * resource's slots again and again, and making its slot names cost ~3 µs of
 * a permit's client CPU (N = 1). It depends on the resource and the limit
 * only, and is never changed.
 */
const slotRequests = (kind: SlotKind) => {
  let last: {
    readonly resourceInput: string
    readonly limit: unknown
    readonly request: ReturnType<typeof slotRequest>
  } | undefined
  return (resourceInput: string, options: PermitOptions): ReturnType<typeof slotRequest> => {
    if (typeof options !== "object" || options === null) return slotRequest(resourceInput, options, kind)
    if (last !== undefined && last.resourceInput === resourceInput && last.limit === options.limit) return last.request
    const request = slotRequest(resourceInput, options, kind)
    if (Either.isRight(request)) last = { resourceInput, limit: options.limit, request }
    return request
  }
}

/** The slots of a resource and the setting they are taken under, from a caller's resource and options. */
const slotRequest = (resourceInput: string, options: PermitOptions, kind: SlotKind) => {
  if (typeof options !== "object" || options === null) {
    return Either.left(new InvalidOptions({ option: "options", detail: "expected { limit, ttl, ... }" }, true))
  }
  return Either.map(Validate.permits(resourceInput, options.limit), ({ limit, resource }) => ({
    resource,
    slots: Array.from({ length: limit }, (_, slot) => slotResource(resource, slot, kind)) as unknown as readonly [
      string,
      ...Array<string>
    ],
    setting: { resource, name: kind.setting, value: limit } satisfies Acquisition.Setting
  }))
}

/**
 * An acquisition of slots whose refusal is the refusal of the resource
 * (`namingResource`). Not `catchTag`, made on every call: its variadic
 * arguments cost ~0.27 µs a call, mapError's ~0.02 (hot, measured alone).
 */
export const namingRefusals = <A, E>(acquisition: Effect.Effect<A, E, Scope.Scope>, resource: string) =>
  Effect.mapError(acquisition, (error) => error instanceof LockNotAcquired ? namingResource(error, resource) : error)

/** A refusal of slots as the refusal of the resource whose slots they are (core's engine/slots.ts). */
const namingResource = (refusal: LockNotAcquired, resource: string): LockNotAcquired =>
  new LockNotAcquired(EngineSlots.namingResource(refusal, resource), true)

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
