/**
 * What only the ioredis family's nodes do (the rest is the driver suite,
 * driver-nodes.test.ts): EVALSHA's wire form built once per fan-out, what is
 * no ioredis client, a user's client's default name, a client's key prefix
 * and `stringNumbers`, and one write per turn.
 */
import { assert, beforeAll, describe, it } from "vitest"
import { Command, Redis } from "ioredis"
import { createClient } from "redis"
import type { LocalFleet } from "@effect-redlock/fleet/fleet.js"
import { InvalidOptions, makeNodeError } from "../src/manager/errors.js"
import type { IoredisClient, IoredisClientOptions } from "../src/nodes/ioredis/client.js"
import * as IoredisCommands from "../src/nodes/ioredis/commands.js"
import { fencedSet } from "../src/nodes/ioredis/fencedSet.js"
import * as IoredisNode from "../src/nodes/ioredis/node.js"
import * as Scripts from "../src/nodes/scripts.js"
import { Cleanup, drivers, localFleet, managerOver, openNodes, rejectionOf, sleep } from "./driverSuite.js"

describe("EVALSHA encoded once per fan-out", () => {
  it("is byte for byte what ioredis sends for the same command, multi-byte characters included", () => {
    const keys = ["redlock:ключ", "redlock:ключ\u0000queue", "redlock:ключ\u0000lease"]
    const args = ["värde-é", 10_000, 1_700_000_000_000, 250]
    const ours = IoredisCommands.encodedEvalsha.command(Command, Scripts.acquireInTurn, keys, args).toWritable(
      undefined as never
    )
    const theirs = new Command("evalsha", [Scripts.acquireInTurn.sha, keys.length, ...keys, ...args], {
      replyEncoding: "utf8"
    })
      .toWritable(undefined as never)
    assert.strictEqual(ours, theirs)
    // The next node of the same fan-out gets the same wire form; other arguments get their own.
    assert.strictEqual(
      IoredisCommands.encodedEvalsha.command(Command, Scripts.acquireInTurn, keys, [...args]).toWritable(
        undefined as never
      ),
      theirs
    )
    assert.notStrictEqual(
      IoredisCommands.encodedEvalsha.command(Command, Scripts.acquireInTurn, keys, ["other", 1, 2, 3]).toWritable(
        undefined as never
      ),
      theirs
    )
  })
})

describe("objects that are no ioredis client", () => {
  it("a node-redis client, a plain object, a string: InvalidOptions (client) before anything is sent", async () => {
    const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
      [
        createClient({ socket: { host: "127.0.0.1", port: 1 } }),
        /^must be an ioredis client \(new Redis\(\.\.\.\) or new Cluster\(\.\.\.\)\): it has no status$/
      ],
      [{ status: "ready" }, /: it has no sendCommand\(\)$/],
      ["redis://127.0.0.1", /^must be an ioredis client/]
    ]
    for (const [client, detail] of cases) {
      const error = await rejectionOf(openNodes(await drivers.ioredis(), [{ client }]))
      assert.instanceOf(error, InvalidOptions)
      assert.strictEqual((error as InvalidOptions).option, "client")
      assert.match((error as InvalidOptions).detail, detail)
    }
  })
})

describe("a user's client's default node name", () => {
  it("is its server's address: host and port, a Unix socket's path, a Sentinel's master (ioredis's default host and port are no server's there)", () => {
    const named = (options: IoredisClientOptions) => IoredisNode.clientName({ options } as IoredisClient)
    assert.strictEqual(named({ host: "cache.local", port: 6380 }), "cache.local:6380")
    assert.strictEqual(named({ host: "localhost", port: 6379, path: "/run/redis/redis.sock" }), "/run/redis/redis.sock")
    assert.strictEqual(
      named({ host: "localhost", port: 6379, sentinels: [{ host: "s", port: 26379 }], name: "orders" }),
      "orders (sentinel)"
    )
  })
})

describe("ioredis nodes on a redis-server", () => {
  const fleetOf = localFleet(1)
  let fleet: LocalFleet
  beforeAll(() => void (fleet = fleetOf()))

  const userClient = (options: Record<string, unknown>) => {
    const client = new Redis({ host: "127.0.0.1", port: fleet.servers[0].port, ...options })
    client.on("error", () => {})
    return Cleanup.add(async () => client.disconnect(), client)
  }

  it("a user's client with a key prefix keeps it: scripts go through ioredis, which prefixes their keys", async () => {
    const [node] = await openNodes(await drivers.ioredis(), [{ client: userClient({ keyPrefix: "app:" }) }])
    assert.strictEqual(
      (await node.promises.acquireInTurn(["prefixed"], "v", 10_000, { ticket: 1, leaseMillis: 0 }))._tag,
      "Granted"
    )
    assert.strictEqual(await fleet.servers[0].call("GET", "app:prefixed"), "v")
    assert.strictEqual(await node.promises.release(["prefixed"], "v", true), 1)
    assert.strictEqual(await fleet.servers[0].call("EXISTS", "app:prefixed"), 0)
  })

  it("a user's client with stringNumbers (integers read as strings): extensions, waiting, permits, inspect and fencing read them", async () => {
    const client = userClient({ stringNumbers: true })
    const redlock = await managerOver([{ client }])
    const lock = await redlock.acquire("string-numbers", { ttl: 10_000 })
    // An extension answered "1" is an extension, not a lost lock.
    const extended = await redlock.extend(lock, 20_000)
    assert.isAbove(extended.remaining(), 10_000)
    const seen = await redlock.inspect("string-numbers")
    assert.strictEqual(seen.holder, lock.value)
    assert.isAbove(seen.ttlMillis!, 10_000)
    const read = seen.nodes[0]!
    assert.isAbove("ttlMillis" in read ? read.ttlMillis! : 0, 10_000)
    // A waiter's attempts answered ["3"] and ["1"]: it waits its turn and is granted, not refused as held.
    const waiting = redlock.acquire("string-numbers", { ttl: 10_000 })
    await sleep(50)
    await redlock.release(extended)
    const next = await waiting
    const token = await next.fencingToken()
    await redlock.release(next)
    const permit = await redlock.acquirePermit("string-numbers-permit", { limit: 2, ttl: 10_000 })
    // Its grant ["1", "<slot>"] names the slot that holds it.
    const slots = await Promise.all(
      [0, 1].map((slot) => fleet.servers[0].call("GET", `redlock:string-numbers-permit\u0000permit${slot}`))
    )
    assert.include(slots, permit.value)
    await redlock.release(permit)
    // A fenced write refused: the highest token seen, from a reply that is no "1".
    assert.isUndefined(await fencedSet(client, makeNodeError, { key: "string-numbers:data", value: "new", token }))
    const stale = await fencedSet(client, makeNodeError, {
      key: "string-numbers:data",
      value: "old",
      token: token - 1n
    })
    assert.strictEqual(stale?.highestSeen, token)
  })

  it("commands sent in the same turn reach the server in one write", async () => {
    const server = fleet.servers[0]
    const [node] = await openNodes(await drivers.ioredis(), [fleet.nodes[0]])
    const readsProcessed = async () =>
      Number(/total_reads_processed:(\d+)/.exec(String(await server.call("INFO", "stats")))![1])
    const promises = node.promises
    // Warm the scripts up, so that no NOSCRIPT fallback adds a round.
    await promises.release(["warm"], "v", false)
    const before = await readsProcessed()
    const granted = await Promise.all(
      Array.from({ length: 50 }, (_, i) => promises.acquire([`batch:${i}`], "v", 10_000))
    )
    const reads = (await readsProcessed()) - before
    assert.deepStrictEqual(granted, granted.map(() => true))
    // One read for the 50 commands, one for the INFO above (counted when it is read).
    assert.isAtMost(reads, 3, `${reads} reads for 50 commands`)
  })
})
