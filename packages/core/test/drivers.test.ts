/**
 * The shared behaviours over every client library and the ways users make
 * their clients, once, here in core (the drivers are core's): the promise
 * API over users' own ioredis, iovalkey, node-redis and GLIDE clients. The vitest
 * projects pick the majors (vitest.config.ts: ioredis 5 and node-redis 6,
 * then ioredis 6 and node-redis 5). Node options that are not a plain
 * address (the bad-input behaviours, a password) go to the manager as they
 * are.
 */
import { afterAll, beforeAll, beforeEach, describe, it } from "vitest"
import { behaviours, type FrontEnd } from "@effect-redlock/fleet/behaviours.js"
import { Redis as Ioredis } from "ioredis"
import { Redis as Iovalkey } from "iovalkey"
import { createClient } from "redis"
import { GlideClient, Logger, ProtocolVersion } from "@valkey/valkey-glide"
import { promiseApi } from "./promiseFrontEnd.js"

/** A client of the user's, made one way, and how the user closes it. */
interface ClientSetup {
  readonly name: string
  readonly open: (
    host: string,
    port: number
  ) => Promise<{ readonly client: unknown; readonly close: () => Promise<unknown> }>
}

const isAddress = (node: unknown): node is { readonly host: string; readonly port: number } =>
  typeof node === "object" && node !== null && Object.keys(node).sort().join() === "host,port" &&
  typeof (node as { readonly host: unknown }).host === "string" &&
  typeof (node as { readonly port: unknown }).port === "number"

/** The promise API over clients of `setup`'s kind, one per server, closed by the user after the manager. */
const overClients = (setup: ClientSetup): FrontEnd => ({
  name: `promise API over ${setup.name}`,
  manager: async (nodes, settings) => {
    if ("memory" in nodes) return promiseApi.manager(nodes, settings)
    const opened = await Promise.all(
      nodes.options.map(async (node) => isAddress(node) ? setup.open(node.host, node.port) : undefined)
    )
    const closeClients = () => Promise.all(opened.map((client) => client?.close().catch(() => {})))
    const manager = await promiseApi.manager(
      {
        options: nodes.options.map((node, index) =>
          opened[index] === undefined ? node : { client: opened[index]!.client }
        )
      },
      settings
    ).catch(async (error: unknown) => {
      await closeClients()
      throw error
    })
    return {
      ...manager,
      close: async () => {
        await manager.close()
        await closeClients()
      }
    }
  }
})

// Closed at once (a server a behaviour killed would hold a polite quit up while the client reconnects).
const ioredis = (name: string, options: { readonly lazyConnect?: boolean }): ClientSetup => ({
  name,
  open: async (host, port) => {
    const client = new Ioredis({ host, port, ...options })
    client.on("error", () => {})
    return { client, close: async () => client.disconnect() }
  }
})

const iovalkey: ClientSetup = {
  name: "iovalkey clients, connected",
  open: async (host, port) => {
    const client = new Iovalkey({ host, port })
    client.on("error", () => {})
    return { client, close: async () => client.disconnect() }
  }
}

const nodeRedis = (name: string, options: { readonly RESP?: 2 | 3 }): ClientSetup => ({
  name,
  open: async (host, port) => {
    const client = createClient({ socket: { host, port }, ...options })
    client.on("error", () => {})
    await client.connect()
    return { client, close: async () => client.destroy() }
  }
})

// GLIDE's core logs every server error to the console by default: its users set their own level.
Logger.setLoggerConfig("off")

const glide = (
  name: string,
  options: { readonly lazyConnect?: boolean; readonly protocol?: ProtocolVersion }
): ClientSetup => ({
  name,
  open: async (host, port) => {
    const client = await GlideClient.createClient({ addresses: [{ host, port }], ...options })
    return { client, close: async () => client.close() }
  }
})

const setups: ReadonlyArray<ClientSetup> = [
  ioredis("ioredis clients made with lazyConnect", { lazyConnect: true }),
  ioredis("ioredis clients, connected", {}),
  iovalkey,
  nodeRedis("node-redis clients, connected (RESP2)", { RESP: 2 }),
  nodeRedis("node-redis clients, connected (RESP3)", { RESP: 3 }),
  glide("GLIDE clients, connected (RESP3)", {}),
  glide("GLIDE clients made with lazyConnect (RESP2)", { lazyConnect: true, protocol: ProtocolVersion.RESP2 })
]

for (const setup of setups) behaviours(overClients(setup), { afterAll, beforeAll, beforeEach, describe, it })
