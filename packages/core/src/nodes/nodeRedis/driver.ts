/**
 * The node-redis driver (`redis` 5 or 6), as every front end opens its nodes
 * (nodeOptions.ts). Loaded only by those who use node-redis: `redis` is an
 * optional peer.
 *
 * @internal
 */
import type { Driver } from "../nodeOptions.js"
import { userClientProblem } from "./client.js"
import type { NodeRedisClient } from "./client.js"
import * as NodeRedisNode from "./node.js"

export const driver: Driver<NodeRedisClient> = {
  newClient: NodeRedisNode.newClient,
  closeClient: NodeRedisNode.closeClient,
  clientName: NodeRedisNode.clientName,
  connectUserClient: NodeRedisNode.connectIfNotOpen,
  userClientProblem,
  sentinels: false,
  open: NodeRedisNode.open
}
