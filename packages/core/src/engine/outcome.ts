/**
 * How node outcomes read in error messages, spans and logs.
 *
 * @internal
 */
import type { NodeOutcome } from "./node.js"

/** One node's answer for messages and logs: `node=Tag`, `node=Failed(reason: detail)` or `node=Abstained(why)`. */
export const describe = (outcome: NodeOutcome): string =>
  outcome._tag === "Failed"
    ? `${outcome.node}=Failed(${outcome.error.reason}: ${outcome.error.detail})`
    : outcome._tag === "Abstained"
    ? `${outcome.node}=Abstained(${outcome.detail})`
    : `${outcome.node}=${outcome._tag}`

export const describeAll = (outcomes: ReadonlyArray<NodeOutcome>): string => outcomes.map(describe).join(", ")
