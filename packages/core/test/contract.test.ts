/**
 * The node contract (nodeContract.ts), once, over every kind of node core
 * makes: the in-memory node; ioredis, iovalkey, node-redis and Valkey GLIDE
 * nodes on a real redis-server, over connections of ours and over users' own
 * clients (RESP2 and RESP3 for node-redis); a Redis Cluster of three masters as one node;
 * a Sentinel's master as one node. The vitest projects pick the clients'
 * majors (vitest.config.ts).
 */
import * as assert from "node:assert/strict"
import { afterAll, beforeAll, describe, it } from "vitest"
import { Cluster, Redis as Ioredis } from "ioredis"
import { Redis as Iovalkey } from "iovalkey"
import { createClient } from "redis"
import { GlideClient, Logger } from "@valkey/valkey-glide"
import { type LocalFleet, masterName, startLocalFleet } from "@effect-redlock/fleet/fleet.js"
import { eventually } from "@effect-redlock/fleet/servers.js"
import * as LiveTime from "../src/engine/liveTime.js"
import type { Node } from "../src/engine/node.js"
import { Problem } from "../src/engine/options.js"
import { readMillis } from "../src/manager/durations.js"
import { makeNodeError } from "../src/manager/errors.js"
import * as NodeOptions from "../src/nodes/nodeOptions.js"
import { MemoryFleet } from "../src/nodes/memory.js"
import { drivers } from "./driverSuite.js"
import { contract, type Harness } from "./nodeContract.js"

const time = LiveTime.make(0)

/** A node of core's over `driver`, opened from node options as every front end opens its nodes. */
const openNode = async (driver: NodeOptions.Driver<unknown>, options: object): Promise<NodeOptions.Opened> => {
  const checked = NodeOptions.check(driver, options, { millis: readMillis, password: () => undefined })
  if (checked instanceof Problem) throw new Error(`${checked.option}: ${checked.detail}`)
  return NodeOptions.open(driver, checked, makeNodeError, time.now)
}

const isImportantList = (items: unknown) => JSON.stringify(items) === "[\"important\",\"data\"]"

describe("contract: in-memory node", () => {
  contract({ it }, async () => {
    const fleet = new MemoryFleet(1, time, makeNodeError)
    const node = fleet.nodes[0].toNode()
    return {
      node,
      putForeign: async (key) => fleet.putForeign(0, key),
      // The memory node keeps no list items; the list is intact if it is still there, of its type.
      foreignIntact: (key) =>
        node.promises.inspect(key).then(
          () => false,
          (error: { readonly reason?: unknown }) => error.reason === "WrongType"
        ),
      keys: async () => fleet.keys(0),
      close: async () => {}
    }
  })
})

/** A client of the user's, and how the user closes it. */
interface UserClient {
  readonly client: unknown
  readonly close: () => Promise<unknown>
}

/** The ways a node reaches one redis-server: options of ours, or a user's client made one way. */
interface Reach {
  readonly name: string
  readonly driver: () => Promise<NodeOptions.Driver<unknown>>
  readonly userClient?: (port: number) => Promise<UserClient>
}

const ioredisUser = async (port: number): Promise<UserClient> => {
  const client = new Ioredis({ host: "127.0.0.1", port })
  await new Promise((resolve) => client.once("ready", resolve))
  return { client, close: async () => client.disconnect() }
}

const iovalkeyUser = async (port: number): Promise<UserClient> => {
  const client = new Iovalkey({ host: "127.0.0.1", port })
  await new Promise((resolve) => client.once("ready", resolve))
  return { client, close: async () => client.disconnect() }
}

const nodeRedisUser = (RESP: 2 | 3) => async (port: number): Promise<UserClient> => {
  const client = createClient({ socket: { host: "127.0.0.1", port }, RESP })
  client.on("error", () => {})
  await client.connect()
  return { client, close: async () => client.destroy() }
}

// GLIDE's core logs every server error to the console by default: its users set their own level.
Logger.setLoggerConfig("off")

const glideUser = async (port: number): Promise<UserClient> => {
  const client = await GlideClient.createClient({ addresses: [{ host: "127.0.0.1", port }] })
  return { client, close: async () => client.close() }
}

const reaches: ReadonlyArray<Reach> = [
  { name: "ioredis, connections of ours", driver: drivers.ioredis },
  { name: "ioredis, a user's client", driver: drivers.ioredis, userClient: ioredisUser },
  { name: "iovalkey, connections of ours", driver: drivers.iovalkey },
  { name: "iovalkey, a user's client", driver: drivers.iovalkey, userClient: iovalkeyUser },
  { name: "node-redis, connections of ours", driver: drivers.nodeRedis },
  { name: "node-redis, a user's RESP2 client", driver: drivers.nodeRedis, userClient: nodeRedisUser(2) },
  { name: "node-redis, a user's RESP3 client", driver: drivers.nodeRedis, userClient: nodeRedisUser(3) },
  { name: "Valkey GLIDE, connections of ours", driver: drivers.glide },
  { name: "Valkey GLIDE, a user's client", driver: drivers.glide, userClient: glideUser }
]

describe("contract: one redis-server", () => {
  let fleet: LocalFleet
  beforeAll(async () => {
    fleet = await startLocalFleet(1)
  })
  afterAll(() => fleet?.stop())

  /** The harness over a node of the fleet's server, reached as `reach` says. */
  const harnessOf = (reach: Reach) => async (): Promise<Harness> => {
    await fleet.reset()
    const server = fleet.servers[0]
    const user = await reach.userClient?.(server.port)
    const opened = await openNode(
      await reach.driver(),
      user === undefined ? { host: "127.0.0.1", port: server.port } : { client: user.client }
    )
    return {
      node: opened.node,
      putForeign: async (key) => void await server.call("RPUSH", key, "important", "data"),
      foreignIntact: async (key) => isImportantList(await server.call("LRANGE", key, 0, -1)),
      keys: async () => await server.call("KEYS", "*") as ReadonlyArray<string>,
      close: async () => {
        await opened.close()
        await user?.close()
      }
    }
  }

  for (const reach of reaches) {
    describe(reach.name, () => {
      contract({ it }, harnessOf(reach))

      // What the restart quarantine reads (engine/quarantine.ts): only a real server restarts.
      it("a restarted server is a new run: another id, started no sooner than the restart", async () => {
        const harness = await harnessOf(reach)()
        try {
          const known = async (other?: string) =>
            eventually(
              async () => {
                const run = harness.node.run()
                assert.equal(run._tag, "Known", JSON.stringify(run))
                if (run._tag === "Known") assert.notEqual(run.id, other)
                return run as Extract<typeof run, { readonly _tag: "Known" }>
              },
              10_000,
              50
            )
          const before = await known()
          // A command per poll: a user's client and ours reconnect on their own, the node reads the run once connected.
          const killedAt = time.now()
          await fleet.servers[0].kill()
          await fleet.servers[0].start()
          const after = await eventually(
            async () => {
              await harness.node.promises.inspect("k").catch(() => undefined)
              return known(before.id)
            },
            10_000,
            50
          )
          // Uptime comes in whole seconds; the start taken from it is never before the real one.
          assert.ok(after.startedAtMillis >= killedAt, `${after.startedAtMillis} < ${killedAt}`)
        } finally {
          await harness.close()
        }
      })
    })
  }

  // Only a real server can hold this state: its lease set evicted under maxmemory, or a script cut short.
  it("a waiter in line without a lease is dropped when it reaches the head, not kept there for ever", async () => {
    const harness = await harnessOf(reaches[0])()
    try {
      const server = fleet.servers[0]
      await server.call("ZADD", "q\u0000queue", Date.now() - 500, "ghost")
      const answer = await harness.node.promises.acquireInTurn(["q"], "w", 10_000, {
        ticket: Date.now(),
        leaseMillis: 1_000
      })
      assert.equal(answer._tag, "Granted")
      assert.deepEqual(await server.call("ZRANGE", "q\u0000queue", 0, -1), [])
    } finally {
      await harness.close()
    }
  })
})

/**
 * The node with every key the contract names put under one tag: the
 * contract's operations of several keys then run in one slot, through the
 * cluster node's own key mapping (a key with a tag is kept as it is).
 */
const underTag = (node: Node, tag: string): Node => {
  const promises = node.promises
  const keys = (list: ReadonlyArray<string>) => list.map((key) => tag + key)
  const watch = node.watchReleasesNow!
  return {
    name: node.name,
    run: node.run,
    promises: {
      acquire: (list, ...rest) => promises.acquire(keys(list), ...rest),
      acquireInTurn: (list, ...rest) => promises.acquireInTurn(keys(list), ...rest),
      acquireSlot: (list, ...rest) => promises.acquireSlot(keys(list), ...rest),
      release: (list, ...rest) => promises.release(keys(list), ...rest),
      extend: (list, ...rest) => promises.extend(keys(list), ...rest),
      inspect: (key) => promises.inspect(tag + key),
      incrementFences: (list, value, fences) => promises.incrementFences(keys(list), value, keys(fences)),
      commitFences: (list, value, fences, tokens) => promises.commitFences(keys(list), value, keys(fences), tokens)
    },
    watchReleasesNow: (key, onRelease) => watch(tag + key, onRelease),
    ...(node.hearsReleases === undefined ? {} : { hearsReleases: node.hearsReleases })
  }
}

describe("contract: a Redis Cluster of three masters as one node (ioredis)", () => {
  let fleet: LocalFleet
  beforeAll(async () => {
    fleet = await startLocalFleet(3, { cluster: true })
  })
  afterAll(() => fleet?.stop())
  let harnesses = 0

  contract({ it }, async () => {
    await fleet.reset()
    await fleet.clusterOk()
    // A tag of each test's own: a release of an earlier test can reach this test's subscriber, which
    // subscribed after it ran (the message crosses the cluster bus when the subscriber's master is another).
    const tag = `{contract${++harnesses}}`
    const opened = await openNode(await drivers.ioredis(), { cluster: { nodes: fleet.cluster } })
    const user = new Cluster([...fleet.cluster])
    const allKeys = async () =>
      (await Promise.all(fleet.servers.map((server) => server.call("KEYS", "*") as Promise<ReadonlyArray<string>>)))
        .flat().sort()
    return {
      node: underTag(opened.node, tag),
      putForeign: async (key) => void await user.rpush(tag + key, "important", "data"),
      foreignIntact: async (key) => isImportantList(await user.lrange(tag + key, 0, -1)),
      keys: async () => (await allKeys()).map((key) => key.startsWith(tag) ? key.slice(tag.length) : key),
      storedKey: (key) => tag + key,
      close: async () => {
        await opened.close()
        user.disconnect()
      }
    }
  })
})

describe("contract: a Sentinel's master as one node (ioredis)", () => {
  let fleet: LocalFleet
  beforeAll(async () => {
    fleet = await startLocalFleet(1, { replicas: true, sentinels: true })
  })
  afterAll(() => fleet?.stop())

  contract({ it }, async () => {
    await fleet.reset()
    const server = fleet.servers[0]
    const opened = await openNode(await drivers.ioredis(), {
      sentinel: { master: masterName(0), sentinels: fleet.sentinels.map(({ port }) => ({ host: "127.0.0.1", port })) }
    })
    return {
      node: opened.node,
      putForeign: async (key) => void await server.call("RPUSH", key, "important", "data"),
      foreignIntact: async (key) => isImportantList(await server.call("LRANGE", key, 0, -1)),
      keys: async () => await server.call("KEYS", "*") as ReadonlyArray<string>,
      close: () => opened.close()
    }
  })
})
