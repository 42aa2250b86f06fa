/**
 * This line's node errors for the shared drivers and the engine.
 *
 * @internal
 */
import type * as Node from "@effect-redlock/core/engine/node.js"
import { RedisNodeError } from "../RedlockError.js"

/** `MakeNodeError` for the drivers and the memory nodes: this line's `RedisNodeError`. */
export const makeNodeError = (fields: Parameters<Node.MakeNodeError>[0]): RedisNodeError => new RedisNodeError(fields)

/** A failure that is not a RedisNodeError already (a driver that broke its contract) as one (the engine's `nodeError` rule). */
export const nodeError = (node: Node.Node, error: unknown): RedisNodeError =>
  error instanceof RedisNodeError
    ? error
    : new RedisNodeError({ node: node.name, reason: "Unknown", detail: String(error), cause: error })
