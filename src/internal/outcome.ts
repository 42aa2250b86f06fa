/** @internal */
import type { NodeOutcome } from "../RedisNode.js"

/** One node's answer for messages and logs: `node=Tag`, `node=Failed(reason: detail)` or `node=Abstained(why)`. */
export const describe = (outcome: NodeOutcome): string =>
  outcome._tag === "Failed"
    ? `${outcome.node}=Failed(${outcome.error.reason}: ${outcome.error.detail})`
    : outcome._tag === "Abstained"
    ? `${outcome.node}=Abstained(${outcome.detail})`
    : `${outcome.node}=${outcome._tag}`

export const describeAll = (outcomes: ReadonlyArray<NodeOutcome>): string => outcomes.map(describe).join(", ")

/** A majority of nodes said our keys are not (or no longer) ours: however the rest answer, no quorum is left. */
export const majorityNotOurs = (outcomes: ReadonlyArray<NodeOutcome>, quorum: number): boolean =>
  outcomes.length - outcomes.filter((outcome) => outcome._tag === "Held").length < quorum
