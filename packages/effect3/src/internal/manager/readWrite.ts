/**
 * A read-write lock over the lock manager: `maxReaders` read slots per
 * resource, each an ordinary lock. A reader holds one read slot, taken as a
 * semaphore's permit (semaphore.ts); a writer holds every read slot at once,
 * as one lock of many keys (all or none on each node, on one quorum).
 *
 * Why it is safe: a writer and a reader within their validity would both
 * hold the reader's slot within its validity, and a lock has at most one
 * such holder; two writers would both hold every slot. At most `maxReaders`
 * readers hold at once, as a semaphore's permits.
 *
 * Why a writer is not starved by readers: the read slots share one line
 * (engine/slots.ts), in which a waiting writer stands marked as one (fair
 * handoff), and a node grants a reader a free slot only with no writer
 * before it in that line: a reader that asks after the writer does not get a
 * slot ahead of it, and the writer holds every slot once the readers ahead
 * of it have left.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as Lock from "../../Lock.js"
import type { CallerHold } from "../lock.js"
import type { ReadWriteInspection, ReadWriteOptions } from "../../ReadWriteLock.js"
import { InvalidOptions, LockNotAcquired, type SettingConflict } from "../errors.js"
import * as Validate from "../validate.js"
import * as Acquisition from "./acquisition.js"
import * as Semaphore from "./semaphore.js"
import type { Settings } from "./settings.js"

/** Readers at once when `maxReaders` is not given; every client of a resource must use the same. */
export const defaultMaxReaders = 16

const checked = (resource: unknown, options: ReadWriteOptions) => {
  if (typeof options !== "object" || options === null) {
    return Either.left(new InvalidOptions({ option: "options", detail: "expected { ttl, ... }" }, true))
  }
  return Either.mapLeft(
    Validate.permits(resource, options.maxReaders ?? defaultMaxReaders),
    (invalid) =>
      invalid.option === "limit" ? new InvalidOptions({ option: "maxReaders", detail: invalid.detail }, true) : invalid
  )
}

export const acquireRead = (settings: Settings) => {
  const acquireSlot = Semaphore.acquireSlot(settings, Semaphore.readSlots)
  // `ahead`: the fiber reads the resource already (reentrancy.ts), and takes this slot ahead of the line.
  return (
    resource: string,
    options: ReadWriteOptions,
    ahead = false,
    hold?: CallerHold
  ): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope> =>
    Effect.flatMap(checked(resource, options), ({ limit }) => acquireSlot(resource, { ...options, limit }, ahead, hold))
}

export const acquireWrite = (settings: Settings) => {
  const acquireAll = Acquisition.acquireWithSetting(settings, Semaphore.slotVariant)
  // A writer never stands ahead of the line (`_ahead`: reentrancy.ts asks readers only).
  return (
    resource: string,
    options: ReadWriteOptions,
    _ahead = false,
    hold?: CallerHold
  ): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope> =>
    Effect.flatMap(
      writeRequest(resource, options),
      ({ setting, slots }) => Semaphore.namingRefusals(acquireAll(slots, options, setting, undefined, hold), resource)
    )
}

/** A writer's keys: every read slot of the resource, taken at once under its `maxReaders`. */
const writeRequest = (resource: string, options: ReadWriteOptions) =>
  Either.map(checked(resource, options), ({ limit }) => ({
    slots: Array.from(
      { length: limit },
      (_, slot) => Semaphore.slotResource(resource, slot, Semaphore.readSlots)
    ) as unknown as readonly [
      string,
      ...Array<string>
    ],
    setting: { resource, name: Semaphore.readSlots.setting, value: limit } satisfies Acquisition.Setting
  }))

/** Who holds each read slot; a writer holds all of them with one value. */
export const inspect = (
  settings: Settings,
  resource: string,
  maxReaders: number | undefined
): Effect.Effect<ReadWriteInspection, InvalidOptions> =>
  Effect.flatMap(
    checked(resource, { ttl: 1, maxReaders }),
    ({ limit }) =>
      Effect.map(Semaphore.inspectPermits(settings, resource, limit, Semaphore.readSlots), ({ held, slots }) => {
        const holders = new Set(slots.flatMap((slot) => Option.toArray(slot.holder)))
        // One value on every slot: a writer (with a single read slot, a reader looks the same).
        const writer = limit > 1 && held === limit && holders.size === 1 ? Option.some([...holders][0]) : Option.none()
        return { resource, maxReaders: limit, slots, readers: Option.isSome(writer) ? 0 : held, writer }
      })
  )
