/**
 * Releasing a held lock on the nodes: the compare-and-delete on every node,
 * announced to the waiters, decided at quorum, and what its answers mean.
 *
 * @internal
 */
import type { Node, NodeError, NodeOutcome } from "./node.js"
import * as Algorithm from "./algorithm.js"
import * as FanOut from "./fanOut.js"
import type { Time } from "./time.js"

/**
 * What a release found: a majority deleted our keys (`Released`), a
 * majority no longer held our value (`NotHeld`: the lock had been lost),
 * or neither (`Incomplete`: nodes failed or did not answer in time; their
 * keys expire with the ttl).
 */
export interface Released<E extends NodeError = NodeError> {
  readonly status: "Released" | "NotHeld" | "Incomplete"
  readonly released: number
  readonly outcomes: ReadonlyArray<NodeOutcome<E>>
}

/**
 * Delete `keys` where they still hold `value`, on every node, announced;
 * `done` once decided: once a majority of the nodes deleted our keys, or
 * once that can no longer happen. The other nodes were sent the release too;
 * it lands in order on each of them, so not waiting for their answer loses
 * nothing, and a down node does not slow every release down.
 */
export const release = <E extends NodeError>(
  nodes: ReadonlyArray<Node>,
  quorum: number,
  keys: ReadonlyArray<string>,
  value: string,
  timeoutMillis: number,
  nodeError: FanOut.Rules<unknown, E>["nodeError"],
  time: Time,
  done: (released: Released<E>) => void
): void =>
  FanOut.send(
    nodes,
    FanOut.call("release", keys, value, true),
    FanOut.deletions(nodes, timeoutMillis, nodeError),
    time,
    ({ outcomes, yes }) =>
      done({
        status: yes >= quorum ? "Released" : Algorithm.majorityNotOurs(outcomes, quorum) ? "NotHeld" : "Incomplete",
        released: yes,
        outcomes
      })
  )
