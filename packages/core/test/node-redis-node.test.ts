/**
 * What only node-redis nodes do (the rest is the driver suite,
 * driver-nodes.test.ts): node-redis objects that are no client, a wrong
 * password, an ACL user without pub/sub, and ioredis and node-redis nodes of
 * one process hearing each other's releases.
 */
import { assert, beforeAll, describe, it } from "vitest"
import { createClientPool, createCluster, createSentinel } from "redis"
import type { LocalFleet } from "@effect-redlock/fleet/fleet.js"
import { InvalidOptions, type RedisNodeError } from "../src/manager/errors.js"
import { makeRedlock, type PromiseRedlock, retry } from "../src/Promise.js"
import {
  aclUser,
  drivers,
  expectEmpty,
  localFleet,
  managerOver,
  openNodes,
  rejectionOf,
  sleep,
  slowRetry
} from "./driverSuite.js"

describe("node-redis objects that are no client", () => {
  // A pool passed for a client took locks, then threw in the first waiter (it has no duplicate() for the
  // release subscriber) and ended the process.
  it("a client pool, a cluster or Sentinel client, anything else: InvalidOptions (client) before anything is sent", async () => {
    const socket = { host: "127.0.0.1", port: 1 }
    const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
      [createClientPool({ socket }), /^a node-redis client pool \(createClientPool\) cannot subscribe/],
      [createCluster({ rootNodes: [{ socket }] }), /^a node-redis cluster client \(createCluster\) is not served/],
      [
        createSentinel({ name: "mymaster", sentinelRootNodes: [socket] }),
        /^a node-redis Sentinel client \(createSentinel\) is not served/
      ],
      [{ isOpen: false }, /^must be a node-redis client \(createClient\): it has no sendCommand\(\)$/],
      ["redis://127.0.0.1", /^must be a node-redis client \(createClient\)$/]
    ]
    for (const [client, detail] of cases) {
      const error = await rejectionOf(openNodes(await drivers.nodeRedis(), [{ client }]))
      assert.instanceOf(error, InvalidOptions)
      assert.strictEqual((error as InvalidOptions).option, "client")
      assert.match((error as InvalidOptions).detail, detail)
    }
    // Promise code, which picks node-redis for a client without ioredis's status: the same refusal.
    const promised = await rejectionOf(makeRedlock([{ client: createClientPool({ socket }) } as never]))
    assert.instanceOf(promised, InvalidOptions)
    assert.strictEqual((promised as InvalidOptions).option, "client")
  })
})

describe("node-redis nodes on 3 redis-servers", () => {
  const fleetOf = localFleet(3)
  let fleet: LocalFleet
  beforeAll(() => void (fleet = fleetOf()))

  it("a wrong password is an Auth failure at once, not a hang", async () => {
    await aclUser(fleet, "nr-auth", "right")
    const [node] = await openNodes(await drivers.nodeRedis(), [{
      ...fleet.nodes[0],
      username: "nr-auth",
      password: "wrong"
    }])
    const started = performance.now()
    const error = await rejectionOf(node.promises.acquire(["k"], "v", 1_000)) as RedisNodeError
    assert.isBelow(performance.now() - started, 200)
    assert.strictEqual(error.reason, "Auth", error.detail)
  })

  it("an ACL user without pub/sub: its nodes say they do not hear releases, and locks still go round", async () => {
    await fleet.reset()
    await aclUser(fleet, "no-pubsub-nr", "secret", "-@pubsub")
    const options = fleet.nodes.map((node) => ({ ...node, username: "no-pubsub-nr", password: "secret" }))
    const driver = await drivers.nodeRedis()
    const holder = await managerOver(await openNodes(driver, options))
    const waiterNodes = await openNodes(driver, options)
    const waiter = await managerOver(waiterNodes)
    const held = await holder.acquire("deaf", { ttl: 10_000 })
    const waiting = waiter.acquire("deaf", { ttl: 10_000, retry: retry({ delay: 20, times: 200 }) })
    await sleep(300)
    assert.deepStrictEqual(
      waiterNodes.map((node) => node.hearsReleases?.()),
      [false, false, false],
      "SUBSCRIBE was refused"
    )
    assert.strictEqual((await holder.release(held)).status, "Released")
    await waiter.release(await waiting)
    await expectEmpty(fleet)
  })

  it("ioredis and node-redis nodes of one process (a subscriber connection each): a release that one of them listens for is still published for the other", async () => {
    await fleet.reset()
    const overIoredis = await managerOver(fleet.nodes)
    const overNodeRedis = await managerOver(await openNodes(await drivers.nodeRedis(), fleet.nodes))
    const slowly = { ttl: 10_000, retry: slowRetry, nodeTimeout: 1_000 } as const
    const acquiredAt = (redlock: PromiseRedlock) =>
      redlock.acquire("mixed", slowly).then(async (lock) => {
        const at = performance.now()
        await redlock.release(lock)
        return at
      })
    const held = await overIoredis.acquire("mixed", { ttl: 10_000 })
    const first = acquiredAt(overNodeRedis)
    await sleep(200)
    // Behind it, a waiter over ioredis: this process's ioredis subscriber listens to the key's channel too.
    const second = acquiredAt(overIoredis)
    // Past the renewal of the places the first attempts took: the next attempts on their own are 10 s away.
    await sleep(1_000)
    const released = performance.now()
    assert.strictEqual((await overIoredis.release(held)).status, "Released")
    const firstAcquired = await first
    assert.isBelow(
      firstAcquired - released,
      500,
      "the node-redis waiter heard the ioredis release on its own connection"
    )
    const secondAcquired = await second
    assert.isBelow(secondAcquired - firstAcquired, 500, "and the other way round")
    await expectEmpty(fleet)
  })
})
