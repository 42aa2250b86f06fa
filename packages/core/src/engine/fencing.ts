/**
 * Fencing tokens of a held lock (docs/safety.md, "Fencing tokens"). Round 1:
 * on every node that still holds our keys, increment each resource's
 * counter; the token is the largest count of a majority. Round 2: raise the
 * counter to the token on a majority, still only where our keys are. Any
 * later holder increments on a majority that overlaps ours, on a node where
 * our round 2 ran before its key could be set, so its token is larger.
 *
 * @internal
 */
import * as Algorithm from "./algorithm.js"
import * as FanOut from "./fanOut.js"
import type { Holding } from "./holding.js"
import type { Node, NodeError, NodeOutcome } from "./node.js"
import type { Time } from "./time.js"

/** How issuing ended: the tokens (one per resource), the lock found lost (marked so), or too few nodes answered. */
export type Issued<E extends NodeError = NodeError> =
  | { readonly _tag: "Issued"; readonly tokens: ReadonlyArray<bigint> }
  | { readonly _tag: "Lost"; readonly outcomes: ReadonlyArray<NodeOutcome<E>> }
  | { readonly _tag: "Unavailable"; readonly outcomes: ReadonlyArray<NodeOutcome<E>> }

/** What issuing reads of the manager. */
export interface FencingSettings<E extends NodeError = NodeError> {
  readonly nodes: ReadonlyArray<Node>
  readonly quorum: number
  readonly quarantineMillis: number | undefined
  readonly nodeError: FanOut.Rules<unknown, E>["nodeError"]
}

/** Issue the lock's tokens, from the counters `fenceKeys` (one per resource); `done` once decided. */
export const issue = <E extends NodeError>(
  settings: FencingSettings<E>,
  lock: Holding<E>,
  fenceKeys: ReadonlyArray<string>,
  timeoutMillis: number,
  time: Time,
  done: (end: Issued<E>) => void
): void => {
  const { nodeError, nodes, quarantineMillis, quorum } = settings
  const failed = (outcomes: ReadonlyArray<NodeOutcome<E>>) => {
    if (!Algorithm.majorityNotOurs(outcomes, quorum)) return done({ _tag: "Unavailable", outcomes })
    lock.markLostQuietly("NotHeld", outcomes)
    done({ _tag: "Lost", outcomes })
  }
  const counting = FanOut.atQuorum(
    nodes,
    (counts: ReadonlyArray<bigint> | undefined) => counts !== undefined,
    timeoutMillis,
    quarantineMillis,
    nodeError
  )
  FanOut.send(nodes, FanOut.call("incrementFences", lock.keys, lock.value, fenceKeys), counting, time, (counted) => {
    if (counted.yes < quorum) return failed(counted.outcomes)
    const tokens = fenceKeys.map((_, index) =>
      counted.answers.reduce(
        (max: bigint, counts) => counts !== undefined && counts[index] > max ? counts[index] : max,
        0n
      )
    )
    const committing = FanOut.atQuorum(nodes, (raised: boolean) => raised, timeoutMillis, quarantineMillis, nodeError)
    FanOut.send(
      nodes,
      FanOut.call("commitFences", lock.keys, lock.value, fenceKeys, tokens),
      committing,
      time,
      (committed) => {
        if (committed.yes < quorum) return failed(committed.outcomes)
        if (time.now() >= lock.deadline) {
          lock.markLostQuietly("Expired", committed.outcomes)
          return done({ _tag: "Lost", outcomes: committed.outcomes })
        }
        done({ _tag: "Issued", tokens })
      }
    )
  })
}
