/**
 * The ioredis driver (ioredis 5 or 6), as every front end opens its nodes
 * (nodeOptions.ts). Loaded only by those who use ioredis: `ioredis` is an
 * optional peer.
 *
 * @internal
 */
import { Cluster, Command, Redis } from "ioredis"
import type { Driver } from "../nodeOptions.js"
import { driverOf } from "./node.js"

export const driver: Driver<Redis | Cluster> = driverOf<Redis, Cluster>({
  name: "ioredis",
  newClient: (options) => new Redis(options),
  Command,
  newCluster: (nodes, options) => new Cluster([...nodes], options)
})
