/**
 * Nodes that are one Redis server vote once. Redlock's majority is of
 * independent servers: a server listed twice (by two names, `localhost` and
 * `127.0.0.1`, two `db`s, two clients of the user's) would be counted twice,
 * so that its keys alone could make a majority, and its crash or restart
 * lose two votes at once. Nodes are told apart by the run their server
 * reports (`NodeRun.id`, Redis `run_id`): of nodes identified as the same
 * run, the first in the list votes and the others abstain, for as long as
 * both are identified as it. Votes are grants, extensions, fences and
 * hand-overs (`FanOut.Rules.votes`); a deletion is none: of one server's
 * nodes, whichever runs it first deletes the key.
 *
 * @internal
 */
import * as Algorithm from "./algorithm.js"
import type { Node } from "./node.js"

/** Why node `index`'s yes must not count (an earlier node is the same server), or `undefined`. */
export const abstention = (nodes: ReadonlyArray<Pick<Node, "name" | "run">>, index: number): string | undefined => {
  if (index === 0) return undefined
  const run = nodes[index].run()
  if (run._tag !== "Known") return undefined
  for (let earlier = 0; earlier < index; earlier++) {
    const other = nodes[earlier].run()
    if (other._tag === "Known" && other.id === run.id) return sameAs(nodes[earlier].name, run.id)
  }
  return undefined
}

/**
 * The value that a majority holds, each server read once (`values` in node
 * order, `undefined` where none or unread), or `undefined`: what `inspect`
 * reports as the holder.
 */
export const majorityValue = (
  nodes: ReadonlyArray<Pick<Node, "name" | "run">>,
  values: ReadonlyArray<string | undefined>,
  quorum: number
): string | undefined => {
  const counted = values.map((value, index) => abstention(nodes, index) === undefined ? value : undefined)
  return counted.find((value) => value !== undefined && counted.filter((other) => other === value).length >= quorum)
}

const sameAs = (name: string, id: string) => `the same server as ${name} (run_id ${id}): one server votes once`

/**
 * One line for a manager that starts with nodes that are one server: which,
 * and how many servers vote; `undefined` when every node is its own server
 * (as far as they are identified).
 */
export const startupNotice = (nodes: ReadonlyArray<Pick<Node, "name" | "run">>): string | undefined => {
  const repeated = nodes.flatMap((node, index) => {
    const why = abstention(nodes, index)
    return why === undefined ? [] : [`${node.name}: ${why}`]
  })
  if (repeated.length === 0) return undefined
  const voting = nodes.length - repeated.length
  const quorum = Algorithm.quorum(nodes.length)
  return `effect-redlock: ${repeated.length} of ${nodes.length} nodes do not vote (${repeated.join("; ")}); ` +
    `${voting} vote, ${quorum} needed${voting < quorum ? ": every acquisition fails" : ""}. List each Redis server once`
}
