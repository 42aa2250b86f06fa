/**
 * Extending a held lock, by hand or automatically while it is held: the
 * engine's extension (engine/holding.ts), one `Effect.callback` each, one at
 * a time per lock.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Options from "@effect-redlock/core/engine/options.js"
import * as Outcome from "@effect-redlock/core/engine/outcome.js"
import type { Lock } from "../../Lock.js"
import { ExtensionLimitReached, type InvalidOptions, type LockLost, LockNotExtended } from "../errors.js"
import type { HeldLock } from "../lock.js"
import * as Metrics from "../metrics.js"
import { own } from "./release.js"
import type { Settings } from "./settings.js"
import * as Tracing from "../tracing.js"
import * as Validate from "../validate.js"

export type ExtendError = InvalidOptions | LockLost | LockNotExtended | ExtensionLimitReached

/**
 * A new ttl on every node (the lock's own when none is given), counted only
 * if a quorum confirmed within the current validity; the lock's deadline
 * then moves.
 */
export const extend = (settings: Settings, lock: Lock, ttl?: Duration.Input): Effect.Effect<Lock, ExtendError> =>
  Effect.withFiber((fiber) => {
    const held = own(settings, lock)
    const traced = Tracing.isRecorded(fiber)
    const extending = held.oneExtensionAtATime(extendHeld(settings, held, ttl, traced))
    return traced
      ? Effect.withSpan(extending, "Redlock.extend", { attributes: { "redlock.resources": lock.resources } })
      : extending
  })

const extendHeld = (
  settings: Settings,
  held: HeldLock,
  ttl: Duration.Input | undefined,
  traced: boolean
): Effect.Effect<Lock, ExtendError> =>
  Effect.suspend((): Effect.Effect<Lock, ExtendError> => {
    const timing = Options.timing(
      ttl ?? held.ttl,
      held.nodeTimeoutMillis,
      settings.driftFactor,
      settings.maxTtlMillis,
      Validate.readMillis
    )
    if (timing instanceof Options.Problem) return Effect.fail(Validate.invalid(timing.option, timing.detail))
    if (held.released) held.markLostQuietly("Released")
    if (held.lostBecause !== undefined) return Effect.fail(held.lostBecause)
    if (held.extensionCount >= settings.maxExtensions) {
      return Effect.fail(
        new ExtensionLimitReached({ resources: held.resources, maxExtensions: settings.maxExtensions })
      )
    }
    return Effect.callback<Lock, LockLost | LockNotExtended>((resume) =>
      held.extendOn(settings, timing.ttlMillis, held.nodeTimeoutMillis, held.time, (end) => {
        const ended: Effect.Effect<Lock, LockLost | LockNotExtended> = end._tag === "Extended"
          ? Effect.succeed(held)
          : end._tag === "Lost"
          ? Effect.fail(held.lostBecause!)
          : Effect.fail(new LockNotExtended({ resources: held.resources, outcomes: end.outcomes }))
        if (!traced || end.outcomes.length === 0) return resume(ended)
        const annotations = end._tag === "Extended"
          ? { "redlock.outcomes": Outcome.describeAll(end.outcomes), "redlock.validity_ms": end.validityMillis }
          : { "redlock.outcomes": Outcome.describeAll(end.outcomes) }
        resume(Effect.andThen(Effect.annotateCurrentSpan(annotations), ended))
      })
    )
  })

/**
 * Extends when half the ttl is left, until the lock was held `maxHoldMillis`.
 * A failed extension is tried again after the per-node timeout, while the
 * lock is valid. A wake-up past the deadline (the process was paused) is a
 * loss: the lock may already belong to another.
 */
export const autoExtend = (settings: Settings, lock: HeldLock, maxHoldMillis: number): Effect.Effect<void> => {
  const ttlMillis = Duration.toMillis(lock.ttl)
  const step: Effect.Effect<boolean> = Effect.suspend(() => {
    const wakeAt = lock.deadline - ttlMillis / 2
    return Effect.andThen(Effect.sleep(Duration.millis(Math.max(0, wakeAt - lock.time.now()))), () => {
      const woke = lock.time.now()
      if (woke >= lock.deadline) {
        lock.markLostQuietly("Expired")
        return Effect.succeed(false)
      }
      if (lock.lostBecause !== undefined || lock.released || woke - lock.acquiredAt >= maxHoldMillis) {
        return Effect.succeed(false)
      }
      return extend(settings, lock).pipe(
        Effect.tap(() => Effect.sync(() => Metrics.extended(Math.max(0, lock.time.now() - wakeAt)))),
        Effect.as(true),
        Effect.catchTags({
          LockNotExtended: () => Effect.as(Effect.sleep(Duration.millis(lock.nodeTimeoutMillis)), true),
          LockLost: () => Effect.succeed(false),
          ExtensionLimitReached: () => Effect.succeed(false),
          InvalidOptions: () => Effect.succeed(false)
        })
      )
    })
  })
  const loop: Effect.Effect<void> = Effect.flatMap(step, (again) => again ? loop : Effect.void)
  return Effect.interruptible(loop)
}
