/**
 * Extending a held lock of the plain manager, by hand or automatically
 * while it is held.
 *
 * @internal
 */
import * as Options from "../engine/options.js"
import { readMillis } from "./durations.js"
import type { DurationInput } from "./durations.js"
import { ExtensionLimitReached, LockNotExtended, type Outcome } from "./errors.js"
import type { HeldLock } from "./heldLock.js"
import { orThrow, type Settings } from "./settings.js"

/**
 * Extend `lock` to `ttlInput` (default: its own ttl), resolved with what each
 * node answered; rejects with LockLost, LockNotExtended or ExtensionLimitReached.
 */
export const extend = (
  settings: Settings,
  lock: HeldLock,
  ttlInput?: DurationInput
): Promise<ReadonlyArray<Outcome>> => {
  let ttlMillis: number
  try {
    ttlMillis = orThrow(Options.timing(
      ttlInput ?? lock.ttlMillis,
      lock.nodeTimeoutMillis,
      settings.driftFactor,
      settings.maxTtlMillis,
      readMillis
    )).ttlMillis
  } catch (error) {
    return Promise.reject(error)
  }
  return lock.oneExtensionAtATime(() =>
    new Promise<ReadonlyArray<Outcome>>((resolve, reject) => {
      if (lock.released) return reject(lock.markLost("Released"))
      if (lock.lostBecause !== undefined) return reject(lock.lostBecause)
      if (lock.extensionCount >= settings.maxExtensions) {
        return reject(new ExtensionLimitReached(lock.resources, settings.maxExtensions))
      }
      lock.extendOn(settings, ttlMillis, lock.nodeTimeoutMillis, settings.time, (end) => {
        switch (end._tag) {
          case "Extended":
            return resolve(end.outcomes)
          case "Lost":
            return reject(lock.lostBecause!)
          case "NotExtended":
            return reject(new LockNotExtended(lock.resources, end.outcomes))
        }
      })
    })
  )
}

/**
 * Extend `lock` whenever half its ttl is left, for at most `maxHoldMillis`
 * after its grant. A failed extension is tried again after the per-node
 * timeout, while the lock is valid. A wake-up past the deadline (the process
 * was paused) is a loss: the lock may already belong to another. Returns the
 * way to stop.
 */
export const autoExtend = (settings: Settings, lock: HeldLock, maxHoldMillis: number): () => void => {
  const { time } = settings
  let stopped = false
  let cancelTimer = () => {}
  const sleep = (millis: number) => {
    cancelTimer = time.schedule(Math.max(0, Math.ceil(millis)), step)
  }
  const step = (): void => {
    if (stopped) return
    const now = time.now()
    const wakeAt = lock.deadline - lock.ttlMillis / 2
    if (wakeAt > now) return sleep(wakeAt - now)
    if (now >= lock.deadline) {
      lock.markLost("Expired")
      return
    }
    if (lock.lostBecause !== undefined || lock.released || now - lock.acquiredAtMillis >= maxHoldMillis) return
    extend(settings, lock).then(
      () => step(),
      (error: { readonly _tag?: string }) => {
        if (error._tag === "LockNotExtended") sleep(lock.nodeTimeoutMillis)
      }
    )
  }
  step()
  return () => {
    stopped = true
    cancelTimer()
  }
}
