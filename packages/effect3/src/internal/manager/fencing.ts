/**
 * Fencing tokens of a held lock (docs/safety.md, "Fencing tokens"): the
 * engine's two rounds (engine/fencing.ts) as one asynchronous step.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Fencing from "@effect-redlock/core/engine/fencing.js"
import { FencingTokenUnavailable, type LockLost } from "../errors.js"
import type { HeldLock } from "../lock.js"
import * as Monotonic from "../monotonic.js"
import type { Settings } from "./settings.js"

export const issueFencingTokens =
  (settings: Settings) => (lock: HeldLock): Effect.Effect<ReadonlyArray<bigint>, LockLost | FencingTokenUnavailable> =>
    Effect.suspend(() => {
      if (lock.lostBecause !== undefined) return Effect.fail(lock.lostBecause)
      const fenceKeys = lock.resources.map((resource) => settings.fencePrefix + resource)
      return Effect.flatMap(
        Monotonic.currentTime,
        (time) =>
          Effect.async<ReadonlyArray<bigint>, LockLost | FencingTokenUnavailable>((resume) =>
            Fencing.issue(settings, lock, fenceKeys, lock.nodeTimeoutMillis, time, (end) =>
              resume(
                end._tag === "Issued"
                  ? Effect.succeed(end.tokens)
                  : end._tag === "Lost"
                  ? Effect.fail(lock.lostBecause!)
                  : Effect.fail(
                    new FencingTokenUnavailable({ resources: lock.resources, outcomes: end.outcomes }, true)
                  )
              ))
          )
      )
    })
