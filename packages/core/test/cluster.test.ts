/**
 * A Redis Cluster as one node: three local masters made one cluster by the
 * fleet (`redis-cli --cluster create`), reached through ioredis's `Cluster`
 * client (the node's `cluster` option; contract.test.ts runs the node
 * contract over it). Each resource's keys land in one hash slot (`{resource}`
 * tags); a lock of several resources needs a common tag; a master's restart
 * or failover makes the whole node sit out the restart quarantine.
 */
import { assert, beforeAll, describe, it } from "vitest"
import { Cluster } from "ioredis"
import { EventEmitter } from "node:events"
import type { LocalFleet } from "@effect-redlock/fleet/fleet.js"
import { eventually } from "@effect-redlock/fleet/servers.js"
import type { Node } from "../src/engine/node.js"
import { InvalidOptions, LockNotAcquired, type Outcome, type RedisNodeError } from "../src/manager/errors.js"
import * as ClusterKeys from "../src/nodes/clusterKeys.js"
import * as IoredisCluster from "../src/nodes/ioredis/cluster.js"
import { makeRedlock, noRetry, type PromiseOptions, retry } from "../src/Promise.js"
import {
  Cleanup,
  drivers,
  localFleet,
  managerOver,
  openNodes,
  rejectionOf,
  sleep,
  wokenAfterRelease
} from "./driverSuite.js"

/** Every key of every master. */
const allKeys = async (fleet: LocalFleet) =>
  (await Promise.all(fleet.servers.map((server) => server.call("KEYS", "*") as Promise<ReadonlyArray<string>>))).flat()
    .sort()

/** A manager over ioredis nodes of `options`, and its nodes (to read their runs). */
const managerWithNodes = async (options: ReadonlyArray<unknown>, settings?: PromiseOptions) => {
  const nodes = await openNodes(await drivers.ioredis(), options)
  return { redlock: await managerOver(nodes, settings), nodes }
}

const failuresOf = (error: unknown): ReadonlyArray<RedisNodeError> =>
  (error as LockNotAcquired).outcomes.flatMap((outcome) =>
    outcome._tag === "Failed" ? [outcome.error as RedisNodeError] : []
  )

/** Until `node`'s server run is known and another than `before`'s. */
const anotherRun = (nodes: ReadonlyArray<Node>, before: ReturnType<Node["run"]>) =>
  eventually(
    async () => {
      const runs = nodes.map((node) => node.run())
      assert.isTrue(
        runs.every((run) => run._tag === "Known" && before._tag === "Known" && run.id !== before.id),
        `not seen yet: ${JSON.stringify(runs)}`
      )
    },
    20_000,
    100
  )

/** A refusal's first outcome, which must be of `tag`. */
const firstOutcome = (refused: unknown, tag: Outcome["_tag"]) => {
  assert.instanceOf(refused, LockNotAcquired)
  const outcome = (refused as LockNotAcquired).outcomes[0]
  assert.strictEqual(outcome._tag, tag, JSON.stringify(outcome))
  return outcome as Outcome & { readonly detail: string }
}

describe("a Redis Cluster as one node", () => {
  const fleetOf = localFleet(3, { cluster: true })
  let fleet: LocalFleet
  beforeAll(() => void (fleet = fleetOf()))
  const ready = async () => {
    await fleet.reset()
    await fleet.clusterOk()
  }
  const clusterNode = () => ({ cluster: { nodes: fleet.cluster } })
  /** A Cluster client of the user's, disconnected after the test. */
  const userCluster = (options: ConstructorParameters<typeof Cluster>[1] = {}): Cluster => {
    const client = new Cluster([...fleet.cluster], options)
    return Cleanup.add(async () => client.disconnect(), client)
  }

  it("a resource's keys share its slot: the lock key, its line and a semaphore's slots are tagged with the lock key", async () => {
    await ready()
    const { redlock, nodes } = await managerWithNodes([clusterNode()])
    assert.strictEqual(nodes[0].name, `127.0.0.1:${fleet.servers[0].port} (cluster)`)
    const lock = await redlock.acquire("order:7", { ttl: 10_000 })
    const user = userCluster()
    assert.strictEqual(await user.get("{redlock:order:7}"), lock.value)
    assert.deepStrictEqual(await allKeys(fleet), ["{redlock:order:7}"], "nothing under the untagged name")
    await redlock.release(lock)

    const permit = await redlock.acquirePermit("pool", { limit: 2, ttl: 10_000 })
    const keys = await allKeys(fleet)
    assert.isTrue(keys.length > 0 && keys.every((key) => key.startsWith("{redlock:pool}")), JSON.stringify(keys))
    await redlock.release(permit)
    assert.deepStrictEqual(await allKeys(fleet), [])

    // A read-write lock's read slots too: readers together, a writer after them.
    const readers = [
      await redlock.acquireRead("doc", { ttl: 10_000 }),
      await redlock.acquireRead("doc", { ttl: 10_000 })
    ]
    const readKeys = await allKeys(fleet)
    assert.isTrue(
      readKeys.length > 0 && readKeys.every((key) => key.startsWith("{redlock:doc}")),
      JSON.stringify(readKeys)
    )
    // Another process's writer (this one holding reads would be refused as SelfDeadlock).
    const other = (await managerWithNodes([clusterNode()])).redlock
    assert.instanceOf(await rejectionOf(other.acquireWrite("doc", { ttl: 1_000, retry: noRetry })), LockNotAcquired)
    for (const reader of readers) await redlock.release(reader)
    await other.release(await other.acquireWrite("doc", { ttl: 10_000 }))
    assert.deepStrictEqual(await allKeys(fleet), [])
  })

  it("a lock of several resources needs a common tag: without one every cluster node refuses it as CrossSlot, sending nothing", async () => {
    await ready()
    const { redlock } = await managerWithNodes([clusterNode()])
    const refused = await rejectionOf(redlock.acquire(["charge", "ship"], { ttl: 1_000, retry: noRetry }))
    firstOutcome(refused, "Failed")
    assert.strictEqual(failuresOf(refused)[0].reason, "CrossSlot")
    assert.deepStrictEqual(await allKeys(fleet), [])

    const lock = await redlock.acquire(["{order:7}:charge", "{order:7}:ship"], { ttl: 10_000 })
    assert.deepStrictEqual(await allKeys(fleet), ["redlock:{order:7}:charge", "redlock:{order:7}:ship"])
    // Each fence counter beside its lock key, in the same slot.
    await lock.fencingToken()
    assert.deepStrictEqual(await allKeys(fleet), [
      "redlock-fence:{order:7}:charge",
      "redlock-fence:{order:7}:ship",
      "redlock:{order:7}:charge",
      "redlock:{order:7}:ship"
    ])
    await redlock.release(lock)
  })

  it("a cluster's masters given as plain nodes: refused, each redirection or cross-slot reply saying to give the cluster as one node", async () => {
    await ready()
    // Three masters of one cluster as three nodes: each key lives on one of them, the others redirect.
    const three = (await managerWithNodes(fleet.nodes)).redlock
    // Node timeouts of a second: an answer slow on a loaded machine is still the failure this test reads, not a timeout.
    const slack = { ttl: 5_000, nodeTimeout: 1_000, retry: noRetry } as const
    const lock = await rejectionOf(three.acquire("a", slack))
    assert.instanceOf(lock, LockNotAcquired)
    assert.isAtLeast(failuresOf(lock).length, 1)
    for (const error of failuresOf(lock)) {
      assert.match(
        error.detail,
        /^MOVED \d+ 127\.0\.0\.1:\d+ \(the server is a Redis Cluster master: give the whole cluster as one node/
      )
    }
    // One master as the only node: a permit's keys span slots.
    const one = (await managerWithNodes([fleet.nodes[0]])).redlock
    const [crossSlot] = failuresOf(await rejectionOf(one.acquirePermit("b", { limit: 2, ...slack })))
    assert.strictEqual(crossSlot.reason, "CrossSlot")
    assert.include(crossSlot.detail, "give the whole cluster as one node, with the cluster option")
  })

  it("managers contending through cluster nodes never overlap; a waiter is woken by the release", async () => {
    await ready()
    const holder = (await managerWithNodes([clusterNode()])).redlock
    const waiter = (await managerWithNodes([clusterNode()])).redlock
    const wokenAfter = await wokenAfterRelease(holder, waiter, "woken")
    assert.isBelow(wokenAfter, 500, `woken ${Math.round(wokenAfter)} ms after the release`)

    // Three managers, ten turns each, one resource: never two inside at once.
    const managers = [holder, waiter, (await managerWithNodes([clusterNode()])).redlock]
    let inside = 0
    let most = 0
    const turns = retry({ delay: 20, times: 500 })
    await Promise.all(managers.map(async (redlock) => {
      for (let turn = 0; turn < 10; turn++) {
        const lock = await redlock.acquire("turns", { ttl: 10_000, retry: turns })
        most = Math.max(most, ++inside)
        await sleep(2)
        inside--
        await redlock.release(lock)
      }
    }))
    assert.strictEqual(most, 1)
    assert.deepStrictEqual(await allKeys(fleet), [])
  })

  it("a master's restart (no persistence) makes the whole node sit out the quarantine, whichever slots it held", async () => {
    await ready()
    const { redlock: guarded, nodes } = await managerWithNodes([{ ...clusterNode(), connectTimeout: 500 }], {
      maxTtl: 2_000,
      restartQuarantine: true
    })
    const before = nodes[0].run()
    assert.strictEqual(before._tag, "Known")
    // It votes once its youngest master has been up maxTtl (the fleet was started a moment ago).
    await guarded.release(await guarded.acquire("a", { ttl: 1_000, retry: retry({ delay: 100, times: 100 }) }))

    await fleet.servers[1].kill()
    await fleet.servers[1].start()
    await fleet.clusterOk()
    // The node reads every master's run again once the restarted one is back.
    await anotherRun(nodes, before)
    const abstained = await rejectionOf(guarded.acquire("a", { ttl: 1_000, retry: noRetry }))
    assert.match(firstOutcome(abstained, "Abstained").detail, /server started \d\.\d s ago.*restart quarantine.*no AOF/)
  })

  it("the promise API takes the cluster option as it is: the lock key lands tagged, the release deletes it", async () => {
    await ready()
    const redlock = await managerOver([clusterNode()])
    const lock = await redlock.acquire("p:cluster", { ttl: 10_000 })
    assert.deepStrictEqual(await allKeys(fleet), ["{redlock:p:cluster}"])
    await redlock.release(lock)
    assert.deepStrictEqual(await allKeys(fleet), [])
  })

  it("a Cluster client of the user's (lazyConnect) is one node too: connected, used, its waiters woken, never closed; no waitForReplicas beside it", async () => {
    await ready()
    const client = userCluster({ lazyConnect: true })
    const redlock = await makeRedlock([{ client }], { restartQuarantine: false })
    const waiter = await makeRedlock([{ client }], { restartQuarantine: false })
    try {
      const lock = await redlock.acquire(["{order:8}:a", "{order:8}:b"], { ttl: 10_000 })
      assert.deepStrictEqual(await allKeys(fleet), ["redlock:{order:8}:a", "redlock:{order:8}:b"])
      await redlock.release(lock)
      // A waiter over the same lazy client hears a release (its announcements' connection connects on its own).
      const wokenAfter = await wokenAfterRelease(redlock, waiter, "lazy")
      assert.isBelow(wokenAfter, 500, `woken ${Math.round(wokenAfter)} ms after the release`)
    } finally {
      await Promise.all([redlock.close(), waiter.close()])
    }
    assert.strictEqual(client.status, "ready", "the user's client is left open")
    const error = await rejectionOf(makeRedlock([{ client, waitForReplicas: { replicas: 1, timeout: 10 } }]))
    assert.instanceOf(error, InvalidOptions)
    assert.include((error as InvalidOptions).message, "not available on cluster nodes")
  })

  it("a Cluster client of the user's with a key prefix: lock keys carry it, and a waiter hears the release", async () => {
    await ready()
    const client = userCluster({ keyPrefix: "app:" })
    const redlock = await managerOver([{ client }])
    const lock = await redlock.acquire("prefixed", { ttl: 10_000 })
    assert.deepStrictEqual(await allKeys(fleet), ["app:{redlock:prefixed}"])
    await redlock.release(lock)
    // Another manager's waiter (its own subscriber) hears the prefixed key's release on its channel.
    const wokenAfter = await wokenAfterRelease(redlock, await managerOver([{ client }]), "prefixed")
    assert.isBelow(wokenAfter, 500, `woken ${Math.round(wokenAfter)} ms after the release`)
  })

  it("iovalkey's Cluster client serves cluster nodes too", async () => {
    await ready()
    const [node] = await openNodes(await drivers.iovalkey(), [clusterNode()])
    assert.isTrue(await node.promises.acquire(["k"], "v", 10_000))
    assert.deepStrictEqual(await allKeys(fleet), ["{k}"])
    assert.strictEqual(await node.promises.release(["k"], "v", true), 1)
  })
})

describe("a Redis Cluster with replicas as one node", () => {
  const fleetOf = localFleet(3, { cluster: true, replicas: true })
  let fleet: LocalFleet
  beforeAll(() => void (fleet = fleetOf()))

  it("a master's failover: the node follows it, the lock survives on the promoted replica, and the node abstains for the quarantine", async () => {
    await fleet.clusterOk()
    const node = { cluster: { nodes: fleet.cluster } }
    // The fleet was started a moment ago: the quarantine would keep it from voting, for the holder only.
    const holder = await managerWithNodes([node])
    const guarded = await managerWithNodes([node], { maxTtl: 10_000, restartQuarantine: true })
    const before = guarded.nodes[0].run()
    assert.strictEqual(before._tag, "Known")
    const holderBefore = holder.nodes[0].run()
    assert.isTrue(
      holderBefore._tag === "Known" && before._tag === "Known" && holderBefore.id === before.id,
      "both managers' clients see the same masters"
    )
    const lock = await holder.redlock.acquire("failover", { ttl: 10_000 })
    const holding = await Promise.all(
      fleet.servers.map((server) => server.call("GET", "{redlock:failover}").catch(() => null))
    )
    const master = holding.findIndex((value) => value === lock.value)
    assert.isAtLeast(master, 0, "one master holds it")
    // On its replica before the master goes (replication is asynchronous: WAIT answers once it is).
    await fleet.replicasInSync()

    await fleet.servers[master].kill()
    // The cluster promotes the replica after its node timeout (1 s); each manager's node reads every
    // master's run again once its client refreshed the cluster's slots (each client on its own).
    await anotherRun([holder.nodes[0], guarded.nodes[0]], before)
    // The lock survived: another acquirer is refused while it is valid.
    const refused = await rejectionOf(holder.redlock.acquire("failover", { ttl: 1_000, retry: noRetry }))
    assert.instanceOf(refused, LockNotAcquired)
    assert.strictEqual(
      (refused as LockNotAcquired).reason,
      "Held",
      JSON.stringify((refused as LockNotAcquired).outcomes)
    )
    // A manager that keeps the quarantine does not count the cluster's vote yet, and says why.
    const abstained = await rejectionOf(guarded.redlock.acquire("other", { ttl: 1_000, retry: noRetry }))
    assert.include(firstOutcome(abstained, "Abstained").detail, "another server than before")
  })
})

describe("cluster options and keys", () => {
  it("a cluster option that is malformed, beside a sentinel, a db or waitForReplicas, or given to node-redis nodes, is InvalidOptions", async () => {
    const nodes = [{ host: "127.0.0.1", port: 1 }]
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ cluster: { nodes: [] } }, "cluster.nodes"],
      [{ cluster: { nodes: [{ host: "h", port: 0 }] } }, "cluster.nodes"],
      [{ cluster: { nodes }, sentinel: { master: "m", sentinels: nodes } }, "not both"],
      [{ cluster: { nodes }, db: 2 }, "database 0 only"],
      [{ cluster: { nodes }, waitForReplicas: { replicas: 1, timeout: 10 } }, "waitForReplicas"]
    ]
    for (const [options, says] of cases) {
      const error = await rejectionOf(openNodes(await drivers.ioredis(), [options]))
      assert.instanceOf(error, InvalidOptions, says)
      assert.include((error as InvalidOptions).message, says)
    }
    const error = await rejectionOf(openNodes(await drivers.nodeRedis(), [{ cluster: { nodes } }]))
    assert.instanceOf(error, InvalidOptions)
    assert.include((error as InvalidOptions).message, "use ioredis or iovalkey nodes")
  })

  it("cluster keys: a key with a hash tag is kept; any other gets its lock key as its tag, derived keys (after a NUL) the same", () => {
    assert.strictEqual(ClusterKeys.hashTag("a{b}c"), "b")
    assert.strictEqual(
      ClusterKeys.hashTag("a{}c{d}"),
      undefined,
      "an empty first tag means the whole key, as Redis reads it"
    )
    assert.strictEqual(ClusterKeys.hashTag("a{b"), undefined)
    assert.strictEqual(ClusterKeys.clusterKey("redlock:{order:7}:charge"), "redlock:{order:7}:charge")
    assert.strictEqual(ClusterKeys.clusterKey("redlock:order"), "{redlock:order}")
    assert.strictEqual(ClusterKeys.clusterKey("redlock:pool\u0000permit3"), "{redlock:pool}\u0000permit3")
    assert.strictEqual(ClusterKeys.clusterKey("redlock:a{b"), "{redlock:a{b}")
    assert.strictEqual(ClusterKeys.hashTag(ClusterKeys.clusterKey("redlock:a{b")), "redlock:a{b")
  })

  it("a change of the cluster's masters without a dropped connection (a partition) is a close then a ready: the run is read again as another server's", () => {
    // A cluster client's events, as ioredis emits them; its masters' clients as plain emitters.
    const master = (port: number) =>
      Object.assign(new EventEmitter(), { status: "ready", options: { host: "127.0.0.1", port } })
    let masters = [master(7000), master(7001)]
    const cluster = Object.assign(new EventEmitter(), { status: "ready", isCluster: true, nodes: () => masters })
    const connection = IoredisCluster.connectionOf(cluster as unknown as IoredisCluster.IoredisCluster)
    const events: Array<string> = []
    const unfollow = connection.follow({
      ready: () => events.push("ready"),
      closed: () => events.push("closed"),
      error: () => {}
    })
    cluster.emit("ready")
    cluster.emit("refresh")
    assert.deepStrictEqual(events, ["ready"], "a refresh that changes nothing is nothing")
    // The slots of 7001 now at 7002 (its replica, promoted); 7001's connection still open.
    masters = [masters[0], master(7002)]
    cluster.emit("refresh")
    assert.deepStrictEqual(events, ["ready", "closed", "ready"])
    masters[0].emit("close")
    assert.deepStrictEqual(events, ["ready", "closed", "ready", "closed"], "a master's connection closing is a close")
    unfollow()
    cluster.emit("refresh")
    masters[0].emit("close")
    assert.strictEqual(events.length, 4, "nothing after unfollow")
  })
})
