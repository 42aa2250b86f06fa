/**
 * A resource's slots, each an ordinary lock: a semaphore's `limit` permits
 * (one slot held per permit), and a read-write lock's `maxReaders` read
 * slots (a reader holds one, a writer all of them at once). Why this is
 * safe, and why a writer is not starved, is told in the Effect packages'
 * internal/manager/semaphore.ts and readWrite.ts; the acquisitions here are
 * the same, in plain code.
 *
 * @internal
 */
import * as Options from "../engine/options.js"
import { Problem } from "../engine/options.js"
import * as EngineSlots from "../engine/slots.js"
import * as Acquisition from "./acquisition.js"
import { InvalidOptions, LockNotAcquired } from "./errors.js"
import type { RetryInput, Settings } from "./settings.js"
import type { DurationInput } from "./durations.js"
import type * as FrontEnd from "./frontEndTypes.js"

/** The slots of a semaphore (`permit`) or of a read-write lock's readers (`read`): each names its own keys. */
export interface SlotKind {
  readonly name: "permit" | "read"
  /** The option that sets how many slots there are (recorded on the nodes). */
  readonly setting: Acquisition.Setting["name"]
}

export const permitSlots: SlotKind = { name: "permit", setting: "limit" }
export const readSlots: SlotKind = { name: "read", setting: "maxReaders" }

/** Readers at once when `maxReaders` is not given; every client of a resource must use the same. */
export const defaultMaxReaders = 16

/** The options of a semaphore's permit: how many permits the resource has, and the acquisition's. */
export interface PermitOptions
  extends Acquisition.AcquireOptions, FrontEnd.PermitOptionsOf<DurationInput, RetryInput>
{}

/** The options of a read or a write hold: how many readers at once, and the acquisition's. */
export interface ReadWriteOptions
  extends Acquisition.AcquireOptions, FrontEnd.ReadWriteOptionsOf<DurationInput, RetryInput>
{}

/** Slot names are made here, from a checked resource. */
const slotNames = (input: unknown): ReadonlyArray<string> => input as ReadonlyArray<string>

/** Slot keys are made by the library (no user check), and tried with the line-keeping script (no probe). */
const slotVariant: Acquisition.Variant = { checkResources: slotNames, probe: false }

/** The slots of a resource and the setting they are taken under. */
class SlotRequest {
  constructor(
    readonly resource: string,
    readonly slots: ReadonlyArray<string>,
    readonly setting: Acquisition.Setting
  ) {}
}

const slotRequest = (resourceInput: unknown, limitInput: unknown, kind: SlotKind): SlotRequest => {
  const checked = Options.permits(resourceInput, limitInput)
  if (checked instanceof Problem) {
    throw kind.setting === "maxReaders" && checked.option === "limit"
      ? new InvalidOptions("maxReaders", checked.detail)
      : new InvalidOptions(checked.option, checked.detail)
  }
  const { limit, resource } = checked
  const slots = Array.from({ length: limit }, (_, slot) => Options.slotResource(resource, slot, kind.name))
  return new SlotRequest(resource, slots, { resource, name: kind.setting, value: limit })
}

/**
 * `slotRequest` of one kind, the last one kept: callers ask for the same
 * resource's slots again and again, and the engine keeps a resource's keys
 * by its array of slot names (engine/attempt.ts, slotKeysOf).
 */
const slotRequests = (kind: SlotKind) => {
  let last: { readonly resource: unknown; readonly limit: unknown; readonly request: SlotRequest } | undefined
  return (resource: unknown, limit: unknown): SlotRequest => {
    if (last !== undefined && last.resource === resource && last.limit === limit) return last.request
    const request = slotRequest(resource, limit, kind)
    last = { resource, limit, request }
    return request
  }
}

/** A refusal of slots as the refusal of the resource whose slots they are (engine/slots.ts). */
const namingResource = (resource: string) => (error: unknown): unknown =>
  error instanceof LockNotAcquired ? new LockNotAcquired(EngineSlots.namingResource(error, resource)) : error

const optionsObject = (options: unknown, expected: string): void => {
  if (typeof options !== "object" || options === null) throw new InvalidOptions("options", `expected ${expected}`)
}

/** A permit of a semaphore: one slot of `limit`, one call per node per attempt. */
export const permitAcquirer = (settings: Settings, acquisitions: Acquisition.Acquisitions) => {
  const acquireOne = Acquisition.acquirer(settings, acquisitions, slotVariant)
  const requestOf = slotRequests(permitSlots)
  return (resource: string, options: PermitOptions): Promise<Acquisition.Grant> => {
    try {
      optionsObject(options, "{ limit, ttl, ... }")
      const request = requestOf(resource, options.limit)
      return acquireOne(request.slots, options, request.setting, { ahead: false }, namingResource(request.resource))
    } catch (error) {
      return Promise.reject(error)
    }
  }
}

/** A read hold: one read slot, taken as a permit is. */
export const readAcquirer = (settings: Settings, acquisitions: Acquisition.Acquisitions) => {
  const acquireOne = Acquisition.acquirer(settings, acquisitions, slotVariant)
  const requestOf = slotRequests(readSlots)
  return (resource: string, options: ReadWriteOptions): Promise<Acquisition.Grant> => {
    try {
      optionsObject(options, "{ ttl, ... }")
      const request = requestOf(resource, options.maxReaders ?? defaultMaxReaders)
      return acquireOne(request.slots, options, request.setting, { ahead: false }, namingResource(request.resource))
    } catch (error) {
      return Promise.reject(error)
    }
  }
}

/** A write hold: every read slot at once, as one lock of many keys. */
export const writeAcquirer = (settings: Settings, acquisitions: Acquisition.Acquisitions) => {
  const acquireAll = Acquisition.acquirer(settings, acquisitions, slotVariant)
  const requestOf = slotRequests(readSlots)
  return (resource: string, options: ReadWriteOptions): Promise<Acquisition.Grant> => {
    try {
      optionsObject(options, "{ ttl, ... }")
      const request = requestOf(resource, options.maxReaders ?? defaultMaxReaders)
      return acquireAll(request.slots, options, request.setting, undefined, namingResource(request.resource))
    } catch (error) {
      return Promise.reject(error)
    }
  }
}
