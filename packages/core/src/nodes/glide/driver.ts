/**
 * The Valkey GLIDE driver (`@valkey/valkey-glide` 2, standalone clients), as
 * every front end opens its nodes (nodeOptions.ts). Loaded only by those who
 * use GLIDE: `@valkey/valkey-glide` is an optional peer.
 *
 * @internal
 */
import type { Driver } from "../nodeOptions.js"
import { type GlideClient, userClientProblem } from "./client.js"
import * as GlideNode from "./node.js"

export const driver: Driver<GlideClient> = {
  newClient: GlideNode.newClient,
  closeClient: GlideNode.closeClient,
  clientName: GlideNode.clientName,
  // A user's client made with lazyConnect connects on the node's first command, which the node sends now.
  connectUserClient: () => {},
  userClientProblem,
  sentinels: false,
  open: GlideNode.open
}
