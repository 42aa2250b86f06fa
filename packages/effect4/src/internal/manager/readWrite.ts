/**
 * A read-write lock over the lock manager: `maxReaders` read slots per
 * resource; a reader holds one slot (as a semaphore's permit), a writer
 * holds every slot at once, as one lock. The slots share one line, where a
 * waiting writer stands marked as one, so readers that come after it wait
 * behind it: it is not starved.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Options from "@effect-redlock/core/engine/options.js"
import type * as Lock from "../../Lock.js"
import type { ReadWriteInspection, ReadWriteOptions } from "../../ReadWriteLock.js"
import type { InvalidOptions, LockNotAcquired, SettingConflict } from "../errors.js"
import * as Acquisition from "./acquisition.js"
import * as Semaphore from "./semaphore.js"
import type { Settings } from "./settings.js"
import * as Validate from "../validate.js"

export const defaultMaxReaders = 16

const checked = (
  resource: unknown,
  options: ReadWriteOptions
): { readonly resource: string; readonly limit: number } | InvalidOptions => {
  if (typeof options !== "object" || options === null) return Validate.invalid("options", "expected { ttl, ... }")
  const permits = Options.permits(resource, options.maxReaders ?? defaultMaxReaders)
  if (!(permits instanceof Options.Problem)) return permits
  return Validate.invalid(permits.option === "limit" ? "maxReaders" : permits.option, permits.detail)
}

export const acquireRead = (settings: Settings) => {
  const acquireSlot = Semaphore.acquireSlot(settings, Semaphore.readSlots)
  // `ahead`: the fiber reads the resource already (reentrancy.ts), and takes this slot ahead of the line.
  return (
    resource: string,
    options: ReadWriteOptions,
    ahead = false
  ): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope> => {
    const read = checked(resource, options)
    return "limit" in read ? acquireSlot(resource, { ...options, limit: read.limit }, ahead) : Effect.fail(read)
  }
}

export const acquireWrite = (settings: Settings) => {
  const acquireAll = Acquisition.acquireWithSetting(settings, { named: true, probe: false })
  return (
    resource: string,
    options: ReadWriteOptions
  ): Effect.Effect<Lock.Lock, InvalidOptions | LockNotAcquired | SettingConflict, Scope.Scope> => {
    const write = checked(resource, options)
    if (!("limit" in write)) return Effect.fail(write)
    const slots = Array.from(
      { length: write.limit },
      (_, slot) => Options.slotResource(resource, slot, Semaphore.readSlots.name)
    )
    const setting: Acquisition.Setting = { resource, name: Semaphore.readSlots.setting, value: write.limit }
    return acquireAll(slots, options, setting).pipe(
      Effect.catchTag("LockNotAcquired", (refusal) => Effect.fail(Semaphore.namingResource(refusal, resource)))
    )
  }
}

export const inspect = (
  settings: Settings,
  resource: string,
  maxReaders: number | undefined
): Effect.Effect<ReadWriteInspection, InvalidOptions> => {
  const read = checked(resource, { ttl: 1, maxReaders })
  if (!("limit" in read)) return Effect.fail(read)
  return Effect.map(
    Semaphore.inspectSlots(settings, resource, read.limit, Semaphore.readSlots),
    ({ held, limit, slots }) => {
      const holders = new Set(slots.flatMap((slot) => Option.toArray(slot.holder)))
      // One value on every slot: a writer (with a single read slot, a reader looks the same).
      const writer = limit > 1 && held === limit && holders.size === 1
        ? Option.some([...holders][0])
        : Option.none<string>()
      return { resource, maxReaders: limit, slots, readers: Option.isSome(writer) ? 0 : held, writer }
    }
  )
}
