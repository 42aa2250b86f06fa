/**
 * What only the Valkey GLIDE nodes do (the rest is the driver suite,
 * driver-nodes.test.ts): GLIDE objects that are no standalone client, a
 * server restarted while nobody asked it (GLIDE reconnects without telling),
 * a wrong password, ACL users without pub/sub or without the commands a
 * vote is checked by, and GLIDE and ioredis nodes of one process hearing each
 * other's releases.
 */
import { assert, beforeAll, describe, it } from "vitest"
import { GlideClient, GlideClusterClient, Logger } from "@valkey/valkey-glide"
import type { LocalFleet } from "@effect-redlock/fleet/fleet.js"
import { eventually } from "@effect-redlock/fleet/servers.js"
import type { NodeRun } from "../src/engine/node.js"
import { InvalidOptions, type RedisNodeError } from "../src/manager/errors.js"
import { LockNotAcquired, makeRedlock, retry } from "../src/Promise.js"
import {
  aclUser,
  Cleanup,
  drivers,
  expectEmpty,
  localFleet,
  managerOver,
  openNodes,
  rejectionOf,
  sleep,
  slowRetry
} from "./driverSuite.js"

Logger.setLoggerConfig("off")

const runId = (run: NodeRun): string | undefined => run._tag === "Known" ? run.id : undefined

describe("GLIDE objects that are no standalone client", () => {
  it("a cluster client, a client reading from replicas, anything else: InvalidOptions (client) before anything is sent", async () => {
    const cluster = await GlideClusterClient.createClient({
      addresses: [{ host: "127.0.0.1", port: 1 }],
      lazyConnect: true
    })
    const replicas = await GlideClient.createClient({
      addresses: [{ host: "127.0.0.1", port: 1 }],
      lazyConnect: true,
      readFrom: "preferReplica"
    })
    Cleanup.add(async () => [cluster, replicas].forEach((client) => client.close()), undefined)
    const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
      [cluster, /^a GLIDE cluster client \(GlideClusterClient\) is not served/],
      [replicas, /^a GLIDE client with readFrom "preferReplica" may send a node's reads to a replica/],
      [{ customCommand: () => undefined }, /^must be a GLIDE client \(GlideClient.createClient\)$/]
    ]
    for (const [client, detail] of cases) {
      const error = await rejectionOf(openNodes(await drivers.glide(), [{ client }]))
      assert.instanceOf(error, InvalidOptions)
      assert.strictEqual((error as InvalidOptions).option, "client")
      assert.match((error as InvalidOptions).detail, detail)
    }
    // Promise code, which picks GLIDE for a GLIDE client: the same refusal.
    const promised = await rejectionOf(makeRedlock([{ client: replicas }]))
    assert.instanceOf(promised, InvalidOptions)
    assert.strictEqual((promised as InvalidOptions).option, "client")
  })
})

describe("GLIDE nodes on 3 redis-servers", () => {
  const fleetOf = localFleet(3)
  let fleet: LocalFleet
  beforeAll(() => void (fleet = fleetOf()))

  // GLIDE reconnects on its own and says nothing: the answer itself must show that another server run gave it.
  it("a server restarted while nobody asked it: the first answer after it is not told as the old run's", async () => {
    const server = fleet.servers[0]
    const user = await GlideClient.createClient({ addresses: [{ host: "127.0.0.1", port: server.port }] })
    Cleanup.add(async () => user.close(), undefined)
    for (const client of [undefined, user]) {
      const [node] = await openNodes(await drivers.glide(), [client === undefined ? fleet.nodes[0] : { client }])
      const before = runId(node.run())
      assert.isDefined(before, "identified at start-up")
      await server.kill()
      await server.start()
      // Long enough for GLIDE to reconnect by itself.
      await sleep(1_000)
      const runAtAnswer = await node.promises.acquire(["restarted"], "v", 10_000).then(
        () => node.run(),
        () => node.run()
      )
      assert.notStrictEqual(
        runId(runAtAnswer),
        before,
        "the answer came from the new run: it must not count as the old one's"
      )
      // Then the node identifies the new run, and its votes count from there.
      const after = await sleep(500).then(() => node.run())
      assert.strictEqual(after._tag, "Known")
      assert.notStrictEqual(runId(after), before)
      await server.call("FLUSHALL")
    }
  })

  it("two of three servers restarted while nobody asked them: a manager over GLIDE nodes refuses until their quarantine is over", async () => {
    await fleet.reset()
    const redlock = await makeRedlock(await openNodes(await drivers.glide(), fleet.nodes), {
      maxTtl: 2_000,
      logger: { warn: () => {} }
    })
    Cleanup.add(() => redlock.close(), undefined)
    const once = { ttl: 1_000, retry: retry({ delay: 100, times: 0 }) }
    // The fleet's own start is past its quarantine first.
    await eventually(async () => redlock.release(await redlock.acquire("quarantined", once)), 10_000, 200)
    await Promise.all(
      fleet.servers.slice(0, 2).map(async (server) => {
        await server.kill()
        await server.start()
      })
    )
    await sleep(1_000)
    const refused = await rejectionOf(redlock.acquire("quarantined", once))
    assert.instanceOf(refused, LockNotAcquired)
    assert.match(String((refused as LockNotAcquired).message), /restart quarantine|server run unknown/)
    const restartedAt = performance.now()
    await eventually(async () => redlock.release(await redlock.acquire("quarantined", once)), 10_000, 100)
    // 2 s of ttl and its drift allowance from the restart, less the second waited above.
    assert.isAbove(
      performance.now() - restartedAt,
      500,
      "granted only once the restarted servers sat out their quarantine"
    )
  })

  it("a wrong password is an Auth failure, not a hang", async () => {
    await aclUser(fleet, "glide-auth", "right")
    const [node] = await openNodes(await drivers.glide(), [{
      ...fleet.nodes[0],
      username: "glide-auth",
      password: "wrong",
      connectTimeout: 300
    }])
    const started = performance.now()
    const error = await rejectionOf(node.promises.acquire(["k"], "v", 1_000)) as RedisNodeError
    assert.isBelow(performance.now() - started, 200)
    assert.strictEqual(error.reason, "Auth", error.detail)
  })

  it("an ACL user without pub/sub: its nodes say they do not hear releases, and locks still go round", async () => {
    await fleet.reset()
    await aclUser(fleet, "no-pubsub-glide", "secret", "-@pubsub")
    const options = fleet.nodes.map((node) => ({ ...node, username: "no-pubsub-glide", password: "secret" }))
    const driver = await drivers.glide()
    const holder = await managerOver(await openNodes(driver, options))
    const waiterNodes = await openNodes(driver, options)
    const waiter = await managerOver(waiterNodes)
    const held = await holder.acquire("deaf", { ttl: 10_000 })
    const waiting = waiter.acquire("deaf", { ttl: 10_000, retry: retry({ delay: 20, times: 200 }) })
    // A refused SUBSCRIBE is never answered to GLIDE: it counts as refused once a second passed.
    await sleep(1_500)
    assert.deepStrictEqual(
      waiterNodes.map((node) => node.hearsReleases?.()),
      [false, false, false],
      "SUBSCRIBE was refused"
    )
    assert.strictEqual((await holder.release(held)).status, "Released")
    await waiter.release(await waiting)
    await expectEmpty(fleet)
  })

  it("an ACL user refused CLIENT ID or LASTSAVE: the node never votes, and says why", async () => {
    await aclUser(fleet, "no-lastsave", "secret", "-lastsave")
    const [node] = await openNodes(await drivers.glide(), [{
      ...fleet.nodes[0],
      username: "no-lastsave",
      password: "secret"
    }])
    const run = node.run()
    assert.strictEqual(run._tag, "Unknown")
    assert.match((run as Extract<NodeRun, { _tag: "Unknown" }>).detail, /INFO server failed: NOPERM .*lastsave/i)
  })

  it("GLIDE and ioredis nodes of one process (a subscriber each): a waiter over either is woken by the other's release", async () => {
    await fleet.reset()
    const overGlide = await managerOver(await openNodes(await drivers.glide(), fleet.nodes))
    const overIoredis = await managerOver(fleet.nodes)
    for (const [holder, waiter] of [[overGlide, overIoredis], [overIoredis, overGlide]] as const) {
      const held = await holder.acquire("mixed", { ttl: 10_000 })
      const waiting = waiter.acquire("mixed", { ttl: 10_000, retry: slowRetry, nodeTimeout: 1_000 })
      await sleep(500)
      const released = performance.now()
      await holder.release(held)
      await waiter.release(await waiting)
      assert.isBelow(performance.now() - released, 2_000, "woken by the release, not by the 10 s retry")
    }
    await expectEmpty(fleet)
  })
})
