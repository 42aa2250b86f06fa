/**
 * A Redis Cluster as one node: three local masters made one cluster by the
 * fleet (`redis-cli --cluster create`), reached through ioredis's `Cluster`
 * client (the node's `cluster` option; core's contract.test.ts runs the node
 * contract over it). Each resource's keys land in one hash slot (`{resource}`
 * tags); a lock of several resources needs a common tag; a master's restart
 * makes the whole node sit out the restart quarantine.
 */
import { assert, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schedule } from "effect"
import { Cluster } from "ioredis"
import { EventEmitter } from "node:events"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as ClusterKeys from "@effect-redlock/core/nodes/clusterKeys.js"
import * as IoredisCluster from "@effect-redlock/core/nodes/ioredis/cluster.js"
import * as Redlock from "../src/Redlock.js"
import { makeRedlock } from "../src/Promise.js"
import * as Ioredis from "../src/RedisNode/Ioredis.js"
import * as Iovalkey from "../src/RedisNode/Iovalkey.js"
import * as NodeRedis from "../src/RedisNode/NodeRedis.js"
import { InvalidOptions, LockNotAcquired } from "../src/RedlockError.js"
import { nodesOf } from "./driverSuite.js"
import { failureOf, wokenAfterRelease } from "./support.js"

const manager = (nodes: ReadonlyArray<Ioredis.NodeOptions>, options: Redlock.Options = { restartQuarantine: false }) =>
  Effect.map(
    Layer.build(Redlock.layer(options).pipe(Layer.provide(Ioredis.layer(nodes)))),
    (context) => Context.get(context, Redlock.Redlock)
  )

/** A client of the user's over the cluster, to read and write keys where the cluster keeps them. */
const userCluster = (fleet: RedisFleet.Fleet) =>
  Effect.acquireRelease(
    Effect.sync(() => new Cluster([...fleet.cluster])),
    (client) => Effect.sync(() => client.disconnect())
  )

/** Every key of every master. */
const allKeys = (fleet: RedisFleet.Fleet) =>
  Effect.map(
    Effect.forEach(fleet.servers, (server) => server.call("KEYS", "*"), { concurrency: "unbounded" }),
    (lists) => (lists as ReadonlyArray<ReadonlyArray<string>>).flat().sort()
  )

layer(RedisFleet.layerLocal(3, { cluster: true }), { timeout: 60_000, excludeTestServices: true })(
  "a Redis Cluster as one node",
  (it) => {
    it.scoped("a resource's keys share its slot: the lock key, its line and a semaphore's slots are tagged with the lock key", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        yield* fleet.clusterOk
        const redlock = yield* manager([{ cluster: { nodes: fleet.cluster } }])
        assert.strictEqual(redlock.nodes[0].name, `127.0.0.1:${fleet.servers[0].port} (cluster)`)
        const lock = yield* redlock.acquire("order:7", { ttl: "10 seconds" })
        const user = yield* userCluster(fleet)
        assert.strictEqual(yield* Effect.promise(() => user.get("{redlock:order:7}")), lock.value)
        assert.deepStrictEqual(yield* allKeys(fleet), ["{redlock:order:7}"], "nothing under the untagged name")
        yield* redlock.release(lock)

        const permit = yield* redlock.acquirePermit("pool", { limit: 2, ttl: "10 seconds" })
        const keys = yield* allKeys(fleet)
        assert.isTrue(keys.length > 0 && keys.every((key) => key.startsWith("{redlock:pool}")), JSON.stringify(keys))
        yield* redlock.release(permit)
        assert.deepStrictEqual(yield* allKeys(fleet), [])

        // A read-write lock's read slots too: readers together, a writer after them.
        const readers = [yield* redlock.acquireRead("doc", { ttl: "10 seconds" }), yield* redlock.acquireRead("doc", { ttl: "10 seconds" })]
        const readKeys = yield* allKeys(fleet)
        assert.isTrue(readKeys.length > 0 && readKeys.every((key) => key.startsWith("{redlock:doc}")), JSON.stringify(readKeys))
        // Another process's writer (this one holding reads would be refused as SelfDeadlock).
        const other = yield* manager([{ cluster: { nodes: fleet.cluster } }])
        const writerRefused = failureOf(yield* Effect.exit(Effect.scoped(other.acquireWrite("doc", { ttl: "1 second", retry: Redlock.noRetry }))))
        assert.instanceOf(writerRefused, LockNotAcquired)
        for (const reader of readers) yield* redlock.release(reader)
        const writer = yield* other.acquireWrite("doc", { ttl: "10 seconds" })
        yield* other.release(writer)
        assert.deepStrictEqual(yield* allKeys(fleet), [])
      }).pipe(Effect.scoped))

    it.scoped("a lock of several resources needs a common tag: without one every cluster node refuses it as CrossSlot, sending nothing", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        yield* fleet.clusterOk
        const redlock = yield* manager([{ cluster: { nodes: fleet.cluster } }])
        const refused = failureOf(yield* Effect.exit(Effect.scoped(redlock.acquire(["charge", "ship"], { ttl: "1 second", retry: Redlock.noRetry }))))
        assert.instanceOf(refused, LockNotAcquired)
        const outcome = (refused as LockNotAcquired).outcomes[0]
        assert.strictEqual(outcome._tag, "Failed", JSON.stringify(outcome))
        assert.strictEqual((outcome as Extract<typeof outcome, { _tag: "Failed" }>).error.reason, "CrossSlot")
        assert.deepStrictEqual(yield* allKeys(fleet), [])

        const lock = yield* redlock.acquire(["{order:7}:charge", "{order:7}:ship"], { ttl: "10 seconds" })
        assert.deepStrictEqual(yield* allKeys(fleet), ["redlock:{order:7}:charge", "redlock:{order:7}:ship"])
        // Each fence counter beside its lock key, in the same slot.
        assert.strictEqual((yield* lock.fencingTokens).length, 2)
        assert.deepStrictEqual(yield* allKeys(fleet), [
          "redlock-fence:{order:7}:charge",
          "redlock-fence:{order:7}:ship",
          "redlock:{order:7}:charge",
          "redlock:{order:7}:ship"
        ])
        yield* redlock.release(lock)
      }).pipe(Effect.scoped))

    it.scoped("a cluster's masters given as plain nodes: refused, each redirection or cross-slot reply saying to give the cluster as one node", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        yield* fleet.clusterOk
        const failures = (error: unknown) =>
          (error as LockNotAcquired).outcomes.flatMap((outcome) => outcome._tag === "Failed" ? [outcome.error] : [])
        // Three masters of one cluster as three nodes: each key lives on one of them, the others redirect.
        const three = yield* manager(fleet.nodes)
        // Node timeouts of a second: an answer slow on a loaded machine is still the failure this test reads, not a timeout.
        const slack = { ttl: "5 seconds", nodeTimeout: "1 second", retry: Redlock.noRetry } as const
        const lock = failureOf(yield* Effect.exit(Effect.scoped(three.acquire("a", slack))))
        assert.instanceOf(lock, LockNotAcquired)
        assert.isAtLeast(failures(lock).length, 1)
        for (const error of failures(lock)) {
          assert.match(error.detail, /^MOVED \d+ 127\.0\.0\.1:\d+ \(the server is a Redis Cluster master: give the whole cluster as one node/)
        }
        // One master as the only node: a permit's keys span slots.
        const one = yield* manager([fleet.nodes[0]])
        const permit = failureOf(yield* Effect.exit(Effect.scoped(one.acquirePermit("b", { limit: 2, ...slack }))))
        const [crossSlot] = failures(permit)
        assert.strictEqual(crossSlot.reason, "CrossSlot")
        assert.include(crossSlot.detail, "give the whole cluster as one node, with the cluster option")
      }).pipe(Effect.scoped))

    it.scoped("managers contending through cluster nodes never overlap; a waiter is woken by the release", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        yield* fleet.clusterOk
        const node: Ioredis.NodeOptions = { cluster: { nodes: fleet.cluster } }
        const holder = yield* manager([node])
        const waiter = yield* manager([node])
        const wokenAfter = yield* wokenAfterRelease(holder, waiter, "woken")
        assert.isBelow(wokenAfter, 500, `woken ${Math.round(wokenAfter)} ms after the release`)

        // Three managers, ten turns each, one resource: never two inside at once.
        const managers = [holder, waiter, yield* manager([node])]
        let inside = 0
        let most = 0
        yield* Effect.forEach(managers, (redlock) =>
          Effect.repeatN(
            Effect.scoped(Effect.gen(function*() {
              const lock = yield* redlock.acquire("turns", { ttl: "10 seconds", retry: Redlock.retry({ delay: 20, times: 500 }) })
              most = Math.max(most, ++inside)
              yield* Effect.sleep("2 millis")
              inside--
              yield* redlock.release(lock)
            })),
            9
          ), { concurrency: "unbounded", discard: true })
        assert.strictEqual(most, 1)
        assert.deepStrictEqual(yield* allKeys(fleet), [])
      }).pipe(Effect.scoped))

    it.scoped("a master's restart (no persistence) makes the whole node sit out the quarantine, whichever slots it held", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        yield* fleet.clusterOk
        const node: Ioredis.NodeOptions = { cluster: { nodes: fleet.cluster }, connectTimeout: "500 millis" }
        const guarded = yield* manager([node], { maxTtl: "2 seconds" })
        const before = guarded.nodes[0].run()
        assert.strictEqual(before._tag, "Known")
        // It votes once its youngest master has been up maxTtl (the fleet was started a moment ago).
        const lock = yield* guarded.acquire("a", { ttl: "1 second", retry: Redlock.retry({ delay: 100, times: 100 }) })
        yield* guarded.release(lock)

        yield* fleet.servers[1].kill
        yield* fleet.servers[1].start
        yield* fleet.clusterOk
        // The node reads every master's run again once the restarted one is back.
        yield* Effect.sync(() => guarded.nodes[0].run()).pipe(
          Effect.filterOrFail(
            (run) => run._tag === "Known" && before._tag === "Known" && run.id !== before.id,
            (run) => `the restart is not seen yet: ${JSON.stringify(run)}`
          ),
          Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("20 seconds")))
        )
        const abstained = failureOf(yield* Effect.exit(Effect.scoped(guarded.acquire("a", { ttl: "1 second", retry: Redlock.noRetry }))))
        assert.instanceOf(abstained, LockNotAcquired)
        const outcome = (abstained as LockNotAcquired).outcomes[0]
        assert.strictEqual(outcome._tag, "Abstained", JSON.stringify(outcome))
        assert.match((outcome as { readonly detail: string }).detail, /server started \d\.\d s ago.*restart quarantine.*no AOF/)
      }).pipe(Effect.scoped))

    it.scoped("effect-redlock/Promise takes the cluster option as it is: the lock key lands tagged, the release deletes it", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        yield* fleet.clusterOk
        const redlock = yield* Effect.acquireRelease(
          Effect.promise(() => makeRedlock([{ cluster: { nodes: fleet.cluster } }], { restartQuarantine: false })),
          (redlock) => Effect.promise(() => redlock.close())
        )
        const lock = yield* Effect.promise(() => redlock.acquire("p:cluster", { ttl: 10_000 }))
        assert.deepStrictEqual(yield* allKeys(fleet), ["{redlock:p:cluster}"])
        yield* Effect.promise(() => redlock.release(lock))
        assert.deepStrictEqual(yield* allKeys(fleet), [])
      }))

    it.scoped("a Cluster client of the user's (lazyConnect) is one node too: connected, used, its waiters woken, never closed; no waitForReplicas beside it", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        yield* fleet.clusterOk
        const client = yield* Effect.acquireRelease(
          Effect.sync(() => new Cluster([...fleet.cluster], { lazyConnect: true })),
          (client) => Effect.sync(() => client.disconnect())
        )
        yield* Effect.scoped(Effect.gen(function*() {
          const redlock = yield* manager([{ client }])
          assert.match(redlock.nodes[0].name, /^127\.0\.0\.1:\d+ \(cluster\)$/)
          const lock = yield* redlock.acquire(["{order:8}:a", "{order:8}:b"], { ttl: "10 seconds" })
          assert.deepStrictEqual(yield* allKeys(fleet), ["redlock:{order:8}:a", "redlock:{order:8}:b"])
          yield* redlock.release(lock)
          // A waiter over the same lazy client hears a release (its announcements' connection connects on its own).
          const wokenAfter = yield* wokenAfterRelease(redlock, yield* manager([{ client }]), "lazy")
          assert.isBelow(wokenAfter, 500, `woken ${Math.round(wokenAfter)} ms after the release`)
        }))
        assert.strictEqual(client.status, "ready", "the user's client is left open")
        const error = failureOf(yield* Effect.exit(Layer.build(Ioredis.layer([{ client, waitForReplicas: { replicas: 1, timeout: "10 millis" } }]))))
        assert.instanceOf(error, InvalidOptions)
        assert.include((error as InvalidOptions).message, "not available on cluster nodes")
      }))

    it.scoped("a Cluster client of the user's with a key prefix: lock keys carry it, and a waiter hears the release", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        yield* fleet.clusterOk
        const client = yield* Effect.acquireRelease(
          Effect.sync(() => new Cluster([...fleet.cluster], { keyPrefix: "app:" })),
          (client) => Effect.sync(() => client.disconnect())
        )
        const redlock = yield* manager([{ client }])
        const lock = yield* redlock.acquire("prefixed", { ttl: "10 seconds" })
        assert.deepStrictEqual(yield* allKeys(fleet), ["app:{redlock:prefixed}"])
        yield* redlock.release(lock)
        // Another manager's waiter (its own subscriber) hears the prefixed key's release on its channel.
        const wokenAfter = yield* wokenAfterRelease(redlock, yield* manager([{ client }]), "prefixed")
        assert.isBelow(wokenAfter, 500, `woken ${Math.round(wokenAfter)} ms after the release`)
      }))

    it.scoped("iovalkey's Cluster client serves cluster nodes too", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        yield* fleet.clusterOk
        const [node] = yield* nodesOf(Iovalkey.layer([{ cluster: { nodes: fleet.cluster } }]))
        assert.isTrue(yield* node.acquire(["k"], "v", 10_000))
        assert.deepStrictEqual(yield* allKeys(fleet), ["{k}"])
        assert.strictEqual(yield* node.release(["k"], "v", true), 1)
      }))
  }
)

layer(RedisFleet.layerLocal(3, { cluster: true, replicas: true }), { timeout: 60_000, excludeTestServices: true })(
  "a Redis Cluster with replicas as one node",
  (it) => {
    it.scoped("a master's failover: the node follows it, the lock survives on the promoted replica, and the node abstains for the quarantine", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.clusterOk
        const node: Ioredis.NodeOptions = { cluster: { nodes: fleet.cluster } }
        // The fleet was started a moment ago: the quarantine would keep it from voting, for the holder only.
        const holder = yield* manager([node])
        const guarded = yield* manager([node], { maxTtl: "10 seconds" })
        const before = guarded.nodes[0].run()
        assert.strictEqual(before._tag, "Known")
        const holderBefore = holder.nodes[0].run()
        assert.isTrue(holderBefore._tag === "Known" && before._tag === "Known" && holderBefore.id === before.id, "both managers' clients see the same masters")
        const lock = yield* holder.acquire("failover", { ttl: "10 seconds" })
        const holding = yield* Effect.forEach(fleet.servers, (server) => server.call("GET", "{redlock:failover}").pipe(Effect.orElseSucceed(() => null)))
        const master = holding.findIndex((value) => value === lock.value)
        assert.isAtLeast(master, 0, "one master holds it")
        // On its replica before the master goes (replication is asynchronous: WAIT answers once it is).
        yield* fleet.replicasInSync

        yield* fleet.servers[master].kill
        // The cluster promotes the replica after its node timeout (1 s); each manager's node reads every
        // master's run again once its client refreshed the cluster's slots (each client on its own).
        yield* Effect.sync(() => [holder.nodes[0].run(), guarded.nodes[0].run()]).pipe(
          Effect.filterOrFail(
            (runs) => runs.every((run) => run._tag === "Known" && before._tag === "Known" && run.id !== before.id),
            (runs) => `the failover is not seen yet: ${JSON.stringify(runs)}`
          ),
          Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("20 seconds")))
        )
        // The lock survived: another acquirer is refused while it is valid.
        const refused = failureOf(yield* Effect.exit(Effect.scoped(holder.acquire("failover", { ttl: "1 second", retry: Redlock.noRetry }))))
        assert.instanceOf(refused, LockNotAcquired)
        assert.strictEqual((refused as LockNotAcquired).reason, "Held", JSON.stringify((refused as LockNotAcquired).outcomes))
        // A manager that keeps the quarantine does not count the cluster's vote yet, and says why.
        const abstained = failureOf(yield* Effect.exit(Effect.scoped(guarded.acquire("other", { ttl: "1 second", retry: Redlock.noRetry }))))
        assert.instanceOf(abstained, LockNotAcquired)
        const outcome = (abstained as LockNotAcquired).outcomes[0]
        assert.strictEqual(outcome._tag, "Abstained", JSON.stringify(outcome))
        assert.include((outcome as { readonly detail: string }).detail, "another server than before")
      }).pipe(Effect.scoped))
  }
)

it.scoped("a cluster option that is malformed, beside a sentinel, a db or waitForReplicas, or given to node-redis nodes, is InvalidOptions", () =>
  Effect.gen(function*() {
    const nodes = [{ host: "127.0.0.1", port: 1 }]
    const cases: ReadonlyArray<readonly [Ioredis.NodeOptions, string]> = [
      [{ cluster: { nodes: [] } }, "cluster.nodes"],
      [{ cluster: { nodes: [{ host: "h", port: 0 }] } }, "cluster.nodes"],
      [{ cluster: { nodes }, sentinel: { master: "m", sentinels: nodes } }, "not both"],
      [{ cluster: { nodes }, db: 2 }, "database 0 only"],
      [{ cluster: { nodes }, waitForReplicas: { replicas: 1, timeout: "10 millis" } }, "waitForReplicas"]
    ]
    for (const [options, says] of cases) {
      const error = failureOf(yield* Effect.exit(Layer.build(Ioredis.layer([options]))))
      assert.instanceOf(error, InvalidOptions, says)
      assert.include((error as InvalidOptions).message, says)
    }
    const unsupported = { cluster: { nodes } } as unknown as NodeRedis.NodeOptions
    const error = failureOf(yield* Effect.exit(Layer.build(NodeRedis.layer([unsupported]))))
    assert.instanceOf(error, InvalidOptions)
    assert.include((error as InvalidOptions).message, "use ioredis or iovalkey nodes")
  }))

it("cluster keys: a key with a hash tag is kept; any other gets its lock key as its tag, derived keys (after a NUL) the same", () => {
  assert.strictEqual(ClusterKeys.hashTag("a{b}c"), "b")
  assert.strictEqual(ClusterKeys.hashTag("a{}c{d}"), undefined, "an empty first tag means the whole key, as Redis reads it")
  assert.strictEqual(ClusterKeys.hashTag("a{b"), undefined)
  assert.strictEqual(ClusterKeys.clusterKey("redlock:{order:7}:charge"), "redlock:{order:7}:charge")
  assert.strictEqual(ClusterKeys.clusterKey("redlock:order"), "{redlock:order}")
  assert.strictEqual(ClusterKeys.clusterKey("redlock:pool\u0000permit3"), "{redlock:pool}\u0000permit3")
  assert.strictEqual(ClusterKeys.clusterKey("redlock:a{b"), "{redlock:a{b}")
  assert.strictEqual(ClusterKeys.hashTag(ClusterKeys.clusterKey("redlock:a{b")), "redlock:a{b")
})

it("a change of the cluster's masters without a dropped connection (a partition) is a close then a ready: the run is read again as another server's", () => {
  // A cluster client's events, as ioredis emits them; its masters' clients as plain emitters.
  const master = (port: number) => Object.assign(new EventEmitter(), { status: "ready", options: { host: "127.0.0.1", port } })
  let masters = [master(7000), master(7001)]
  const cluster = Object.assign(new EventEmitter(), { status: "ready", isCluster: true, nodes: () => masters })
  const connection = IoredisCluster.connectionOf(cluster as unknown as IoredisCluster.IoredisCluster)
  const events: Array<string> = []
  const unfollow = connection.follow({ ready: () => events.push("ready"), closed: () => events.push("closed"), error: () => {} })
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
