/**
 * The driver suite and the lock suite (driverSuite.ts) for each of core's drivers: ioredis,
 * iovalkey and node-redis, over connections of ours and clients of the
 * user's made the usual ways. The vitest projects pick the clients' majors
 * (vitest.config.ts: ioredis 5 and node-redis 6, then ioredis 6 and
 * node-redis 5).
 */
import { Redis as Ioredis } from "ioredis"
import { Redis as Iovalkey } from "iovalkey"
import { createClient } from "redis"
import { Decoder, GlideClient, Logger, ProtocolVersion } from "@valkey/valkey-glide"
import {
  drivers,
  driverSuite,
  type DriverUnderTest,
  ioredisClientVariants,
  lockSuite,
  type UserClientOptions
} from "./driverSuite.js"

type IoredisFamily = typeof Ioredis | typeof Iovalkey

/** A user's client of the ioredis family, connected, as a user's client is before use (without an offline queue a command would fail before). */
const ioredisFamilyClient =
  (Client: IoredisFamily) => async (port: number, password: string | undefined, options: UserClientOptions = {}) => {
    const { driverOptions, ...named } = options
    const client = new Client({
      host: "127.0.0.1",
      port,
      ...(password === undefined ? {} : { password }),
      ...named,
      ...driverOptions
    })
    client.on("error", () => {})
    await new Promise((resolve) => client.once("ready", resolve))
    return {
      client,
      keyPrefix: options.keyPrefix ?? "",
      isReady: () => client.status === "ready",
      get: (key: string) => client.get(key),
      blockFor: (seconds: number) => client.blpop("nowhere", seconds),
      close: async () => client.disconnect()
    }
  }

const ioredis: DriverUnderTest = {
  name: "ioredis",
  driver: drivers.ioredis,
  userClient: ioredisFamilyClient(Ioredis),
  clientVariants: ioredisClientVariants
}

const iovalkey: DriverUnderTest = {
  name: "iovalkey",
  driver: drivers.iovalkey,
  userClient: ioredisFamilyClient(Iovalkey),
  clientVariants: ioredisClientVariants
}

const nodeRedis: DriverUnderTest = {
  name: "node-redis",
  driver: drivers.nodeRedis,
  userClient: async (port, password, options = {}) => {
    const client = createClient({
      socket: { host: "127.0.0.1", port },
      ...(password === undefined ? {} : { password }),
      ...(options.username === undefined ? {} : { username: options.username }),
      // node-redis 5 has no key prefix (and ignores the option).
      ...(options.keyPrefix === undefined ? {} : { keyPrefix: options.keyPrefix }),
      ...options.driverOptions
    })
    client.on("error", () => {})
    await client.connect()
    const keyPrefix = (client as { readonly _keyPrefix?: unknown })._keyPrefix
    return {
      client,
      keyPrefix: typeof keyPrefix === "string" ? keyPrefix : "",
      isReady: () => client.isReady,
      get: (key) => client.get(key),
      blockFor: (seconds) => client.blPop("nowhere", seconds),
      close: async () => client.isOpen ? client.destroy() : undefined
    }
  },
  clientVariants: [
    ["as made by default", {}],
    ["RESP3", { driverOptions: { RESP: 3 } }],
    ["another database (2)", { driverOptions: { database: 2 } }],
    ["a key prefix", { keyPrefix: "app:" }]
  ]
}

// GLIDE's core logs every server error to the console by default: its users set their own level.
Logger.setLoggerConfig("off")

const glide: DriverUnderTest = {
  name: "Valkey GLIDE",
  driver: drivers.glide,
  userClient: async (port, password, options = {}) => {
    const client = await GlideClient.createClient({
      addresses: [{ host: "127.0.0.1", port }],
      ...(password === undefined
        ? {}
        : { credentials: { password, ...(options.username === undefined ? {} : { username: options.username }) } }),
      ...options.driverOptions
    })
    let open = true
    return {
      client,
      // GLIDE has no key prefix.
      keyPrefix: "",
      isReady: () => open,
      get: (key) => client.get(key),
      blockFor: (seconds) => client.blpop(["nowhere"], seconds),
      close: async () => {
        open = false
        client.close()
      }
    }
  },
  clientVariants: [
    ["as made by default (RESP3, requestTimeout 250 ms)", {}],
    ["RESP2", { driverOptions: { protocol: ProtocolVersion.RESP2 } }],
    ["made with lazyConnect", { driverOptions: { lazyConnect: true } }],
    ["another database (2)", { driverOptions: { databaseId: 2 } }],
    ["replies as bytes (defaultDecoder Bytes)", { driverOptions: { defaultDecoder: Decoder.Bytes } }]
  ],
  reconnectsUnseen: true
}

for (const driver of [ioredis, iovalkey, nodeRedis, glide]) {
  driverSuite(driver)
  lockSuite(driver)
}
