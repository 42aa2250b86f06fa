/**
 * The iovalkey driver (ioredis's fork for Valkey), as every front end opens
 * its nodes (nodeOptions.ts), over the ioredis family's node (ioredis/node.ts).
 * Loaded only by those who use iovalkey: `iovalkey` is an optional peer.
 *
 * @internal
 */
import { Cluster, Command, Redis } from "iovalkey"
import { driverOf } from "../ioredis/node.js"
import type { Driver } from "../nodeOptions.js"

export const driver: Driver<Redis | Cluster> = driverOf<Redis, Cluster>({
  name: "iovalkey",
  newClient: (options) => new Redis(options),
  Command,
  newCluster: (nodes, options) => new Cluster([...nodes], options)
})
