/**
 * Fencing tokens of a held lock (see docs/safety.md, "Fencing tokens").
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import { identity } from "effect/Function"
import type { NodeOutcome } from "../../RedisNode.js"
import * as Algorithm from "../../engine/algorithm.js"
import { FencingTokenUnavailable } from "../errors.js"
import * as FanOut from "../fanOut.js"
import type { HeldLock } from "../lock.js"
import * as Monotonic from "../monotonic.js"
import type { Settings } from "./settings.js"

// Fencing tokens (see docs/safety.md, "Fencing tokens"). Round 1: on every node that
// still holds our keys, increment each resource's counter; the token is the
// largest count of a majority. Round 2: raise the counter to the token on a
// majority, still only where our keys are. Any later holder increments on a
// majority that overlaps ours, on a node where our round 2 ran before its
// key could be set, so its token is larger.
export const issueFencingTokens = (settings: Settings) => (lock: HeldLock) =>
  Effect.gen(function*() {
    const fenceKeys = lock.resources.map((resource) => settings.fencePrefix + resource)
    const fail = (outcomes: ReadonlyArray<NodeOutcome>) =>
      Algorithm.majorityNotOurs(outcomes, settings.quorum)
        ? lock.markLost("NotHeld", outcomes)
        : new FencingTokenUnavailable({ resources: lock.resources, outcomes }, true)
    if (lock.lostBecause !== undefined) return yield* lock.lostBecause
    const counted = yield* FanOut.untilDecided(
      settings.nodes,
      FanOut.call("incrementFences", lock.keys, lock.value, fenceKeys),
      (counts) => counts !== undefined,
      lock.nodeTimeout,
      settings.quarantineMillis
    )
    if (counted.yes < settings.quorum) return yield* fail(counted.outcomes)
    const tokens = fenceKeys.map((_, index) =>
      counted.answers.reduce(
        (max, counts) => counts !== undefined && counts[index] > max ? counts[index] : max,
        0n
      )
    )
    const committed = yield* FanOut.untilDecided(
      settings.nodes,
      FanOut.call("commitFences", lock.keys, lock.value, fenceKeys, tokens),
      identity,
      lock.nodeTimeout,
      settings.quarantineMillis
    )
    if (committed.yes < settings.quorum) return yield* fail(committed.outcomes)
    if ((yield* Monotonic.monotonicMillis) >= lock.deadline) return yield* lock.markLost("Expired", committed.outcomes)
    return tokens
  })

