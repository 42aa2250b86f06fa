/**
 * Nodes that answer their operations by callback, beside their promises.
 *
 * @internal
 */
import type { NodeOperation } from "./node.js"

/**
 * A node's operation answered by callback, called at once when the answer
 * is there: the in-memory nodes offer it beside their promises, so that a
 * simulation that runs no microtasks (faults/simulation.ts) runs the engine
 * all the same.
 */
export type NodeCall = (
  method: NodeOperation,
  args: ReadonlyArray<unknown>,
  answered: (answer: unknown) => void,
  failed: (error: unknown) => void
) => void

const calls = new WeakMap<object, NodeCall>()

/** `node`, whose operations `call` also answers by callback. */
export const withCalls = <N extends object>(node: N, call: NodeCall): N => {
  calls.set(node, call)
  return node
}

/** The node's operations by callback, where it offers them. */
export const callOf = (node: object): NodeCall | undefined => calls.get(node)
