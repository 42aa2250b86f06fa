/**
 * The iovalkey nodes (RedisNode/Iovalkey): the ioredis driver over iovalkey's
 * client, tested rather than assumed: what every driver does (driverSuite.ts), and locks contending
 * over three servers with their releases heard.
 */
import { layer } from "@effect/vitest"
import { Effect } from "effect"
import { Redis } from "iovalkey"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Iovalkey from "../src/RedisNode/Iovalkey.js"
import { driverSuite, ioredisClientVariants, lockSuite, type UserClientOptions } from "./driverSuite.js"

/** A user's iovalkey client, connected, closed with the scope. */
const userClient = (port: number, password?: string, options: UserClientOptions = {}) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const { driverOptions, ...named } = options
      const client = new Redis({ host: "127.0.0.1", port, ...(password === undefined ? {} : { password }), ...named, ...driverOptions })
      // Connected, as a user's client is before use (without an offline queue a command would fail before).
      await new Promise((resolve) => client.once("ready", resolve))
      return client
    }),
    (client) => Effect.sync(() => client.disconnect())
  )

layer(RedisFleet.layerLocal(2, { password: "s3cret" }), { timeout: 30_000, excludeTestServices: true })(
  "iovalkey node options",
  (it) => {
    driverSuite(it, {
      layer: Iovalkey.layer,
      layerConfig: () => Iovalkey.layerConfig(),
      clientVariants: ioredisClientVariants,
      userClient: (port, password, options = {}) =>
        Effect.map(userClient(port, password, options), (client) => ({
          client,
          keyPrefix: options.keyPrefix ?? "",
          isReady: () => client.status === "ready",
          get: (key) => client.get(key),
          blockFor: (seconds) => client.blpop("nowhere", seconds)
        }))
    })
  }
)

layer(RedisFleet.layerLocal(3), { timeout: 60_000, excludeTestServices: true })("locks over iovalkey nodes (3 redis-servers)", (it) => {
  lockSuite(it, "our connections", Iovalkey, (fleet) => Effect.succeed(fleet.nodes))
  lockSuite(it, "a user's clients", Iovalkey, (fleet) =>
    Effect.forEach(fleet.servers, (server) => Effect.map(userClient(server.port), (client) => ({ client }))))
})
