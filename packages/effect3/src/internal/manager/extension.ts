/**
 * Extending a held lock, by hand or automatically while it is held.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type * as Lock from "../../Lock.js"
import type { Extension } from "@effect-redlock/core/engine/holding.js"
import { ExtensionLimitReached, type InvalidOptions, type LockLost, LockNotExtended } from "../errors.js"
import type { RedisNodeError } from "../nodes.js"
import type { HeldLock } from "../lock.js"
import * as RedlockMetrics from "../metrics.js"
import * as Monotonic from "../monotonic.js"
import * as Outcome from "@effect-redlock/core/engine/outcome.js"
import * as Validate from "../validate.js"
import * as Tracing from "../tracing.js"
import { held, type Settings } from "./settings.js"

export const extend = (
  settings: Settings,
  lock: Lock.Lock,
  ttlInput?: Duration.DurationInput
): Effect.Effect<Lock.Lock, InvalidOptions | LockLost | LockNotExtended | ExtensionLimitReached> =>
  Effect.suspend(() => {
    const state = held(settings, lock)
    return state.oneExtensionAtATime(extendHeld(settings, state, ttlInput))
  }).pipe(
    Effect.withSpan("Redlock.extend", { attributes: { "redlock.resources": lock.resources }, ...Tracing.spanOptions })
  )

const extendHeld = (
  settings: Settings,
  state: HeldLock,
  ttlInput: Duration.DurationInput | undefined
): Effect.Effect<Lock.Lock, InvalidOptions | LockLost | LockNotExtended | ExtensionLimitReached> =>
  Effect.gen(function*() {
    const { ttlMillis } = yield* Validate.timing(
      ttlInput ?? state.ttl,
      state.nodeTimeout,
      settings.driftFactor,
      settings.maxTtlMillis
    )
    if (state.released) return yield* state.markLost("Released")
    if (state.lostBecause !== undefined) return yield* state.lostBecause
    if (state.extensionCount >= settings.maxExtensions) {
      return yield* new ExtensionLimitReached(
        { resources: state.resources, maxExtensions: settings.maxExtensions },
        true
      )
    }
    const time = yield* Monotonic.currentTime
    const extension = yield* Effect.async<Extension<RedisNodeError>>((resume) =>
      state.extendOn(settings, ttlMillis, state.nodeTimeoutMillis, time, (end) => resume(Effect.succeed(end)))
    )
    const { outcomes } = extension
    if (outcomes.length > 0) yield* Effect.annotateCurrentSpan("redlock.outcomes", Outcome.describeAll(outcomes))
    switch (extension._tag) {
      case "Extended":
        yield* Effect.annotateCurrentSpan("redlock.validity_ms", extension.validityMillis)
        return state
      case "Lost":
        return yield* state.lostBecause!
      case "NotExtended":
        return yield* new LockNotExtended({ resources: state.resources, outcomes }, true)
    }
  })

// Extends when half the ttl is left. A failed extension is tried again after
// the per-node timeout, while the lock is valid. A wake-up past the deadline
// (the process was paused) is a loss: the lock may already belong to another.
export const autoExtend = (settings: Settings, lock: HeldLock, maxHoldMillis: number) => {
  const ttlMillis = Duration.toMillis(lock.ttl)
  const step: Effect.Effect<boolean> = Effect.gen(function*() {
    const now = yield* Monotonic.monotonicMillis
    const wakeAt = lock.deadline - ttlMillis / 2
    if (wakeAt > now) yield* Effect.sleep(Duration.millis(wakeAt - now))
    const woke = yield* Monotonic.monotonicMillis
    if (woke >= lock.deadline) {
      lock.markLost("Expired")
      return false
    }
    if (lock.lostBecause !== undefined || woke - lock.acquiredAtMillis >= maxHoldMillis) return false
    return yield* extend(settings, lock).pipe(
      Effect.zipRight(
        Effect.flatMap(
          Monotonic.monotonicMillis,
          (done) => Metric.update(RedlockMetrics.extensionLag, Math.max(0, done - wakeAt))
        )
      ),
      Effect.as(true),
      Effect.catchTags({
        LockNotExtended: () => Effect.as(Effect.sleep(lock.nodeTimeout), true),
        LockLost: () => Effect.succeed(false),
        ExtensionLimitReached: () => Effect.succeed(false),
        InvalidOptions: () => Effect.succeed(false)
      })
    )
  })
  const loop: Effect.Effect<void> = Effect.flatMap(step, (again) => again ? loop : Effect.void)
  return Effect.interruptible(loop)
}
