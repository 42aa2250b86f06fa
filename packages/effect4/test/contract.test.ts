/**
 * One suite over every kind of node: memory nodes, and ioredis, iovalkey
 * and node-redis nodes on real redis-servers (ours and a user's own clients),
 * through the public API, on the live clock.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { RedisNode, Redlock, type RedlockError } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import * as Iovalkey from "effect-redlock/RedisNode/Iovalkey"
import * as NodeRedis from "effect-redlock/RedisNode/NodeRedis"
import { createClient } from "redis"
import { type FleetError, type FleetOptions, layerLocal, RedisFleet } from "./fleet.js"

interface Kind {
  readonly name: string
  /** Fresh nodes (and their fleet) for one test. */
  readonly nodes: Layer.Layer<RedisNode.RedisNodes | Probe, RedlockError.InvalidOptions | FleetError>
}

/** Every key on each node, lines of waiters included. */
class Probe extends Context.Service<Probe, { readonly keys: Effect.Effect<ReadonlyArray<ReadonlyArray<string>>> }>()("test/Probe") {}

const memoryKind: Kind = {
  name: "memory nodes",
  nodes: Layer.effect(
    Probe,
    Effect.map(RedisNode.MemoryNodes, (control) =>
      Probe.of({ keys: Effect.forEach([0, 1, 2], (index) => control.keys(index)) }))
  ).pipe(Layer.provideMerge(RedisNode.layerMemory(3)))
}

/** Nodes of one driver on 3 fresh redis-servers (each a Redis Cluster of its own with `clusters`). */
const redisKind = (
  name: string,
  nodesOf: (fleet: RedisFleet["Service"]) => Layer.Layer<RedisNode.RedisNodes, RedlockError.InvalidOptions>,
  fleetOptions: FleetOptions = {}
): Kind => ({
  name,
  nodes: Layer.unwrap(Effect.map(RedisFleet, (fleet) =>
    Layer.merge(
      nodesOf(fleet),
      Layer.succeed(Probe, Probe.of({
        keys: Effect.forEach(fleet.servers, (server) => Effect.promise(() => server.admin.keys("*")))
      }))
    ))).pipe(Layer.provide(layerLocal(3, fleetOptions)))
})

const ioredisKind = redisKind("ioredis nodes on 3 redis-servers", (fleet) => Ioredis.layer(fleet.nodes))

const iovalkeyKind = redisKind("iovalkey nodes on 3 redis-servers", (fleet) => Iovalkey.layer(fleet.nodes))

// Each node a Redis Cluster (of one master here; core's test/cluster.test.ts runs three): keys tagged by resource.
const clusterKind = redisKind(
  "ioredis cluster nodes on 3 one-master Redis Clusters",
  (fleet) => Ioredis.layer(fleet.nodes.map((node) => ({ cluster: { nodes: [node] } }))),
  { clusterPerServer: true }
)

const nodeRedisKind = redisKind("node-redis nodes on 3 redis-servers", (fleet) => NodeRedis.layer(fleet.nodes))

// node-redis users' own clients (RESP3, redis 6's default), connected by the user and closed after the nodes.
const nodeRedisClientsKind = redisKind("node-redis clients of the user's on 3 redis-servers", (fleet) =>
  Layer.unwrap(Effect.map(
    Effect.forEach(fleet.servers, (server) =>
      Effect.acquireRelease(
        Effect.promise(async () => {
          const client = createClient({ socket: { host: "127.0.0.1", port: server.port } })
          client.on("error", () => {})
          await client.connect()
          return client
        }),
        (client) => Effect.promise(() => client.close().catch(() => {}))
      )),
    (clients) => NodeRedis.layer(clients.map((client) => ({ client })))
  )))

// The servers were started a moment ago: without the restart quarantine (tested on its own), they vote at once.
const options: Redlock.Options = { restartQuarantine: false }

for (const kind of [memoryKind, ioredisKind, iovalkeyKind, clusterKind, nodeRedisKind, nodeRedisClientsKind]) {
  const live = () => Redlock.layer(options).pipe(Layer.provideMerge(kind.nodes))
  const keysNow = Effect.flatMap(Probe, (probe) => probe.keys)

  describe(kind.name, () => {
    it.live("acquire holds the key on a quorum; the scope's end deletes it on every node", () =>
      Effect.gen(function*() {
        const value = yield* Effect.scoped(Effect.gen(function*() {
          const lock = yield* Redlock.acquire("job", { ttl: "5 seconds" })
          const inspected = yield* Redlock.inspect("job")
          assert.deepStrictEqual(inspected.holder, Option.some(lock.value))
          assert.isTrue(Option.isSome(inspected.ttl) && Duration.toMillis(inspected.ttl.value) <= 5_000)
          return lock.value
        }))
        assert.strictEqual(value.length, 28)
        assert.deepStrictEqual(yield* keysNow, [[], [], []])
      }).pipe(Effect.provide(live())))

    it.live("a held lock is refused to another acquirer (Held); extend keeps it; release frees it", () =>
      Effect.gen(function*() {
        const redlock = yield* Redlock.Redlock
        // A node timeout a loaded machine meets (a 1 s ttl's default is 10 ms): a late answer would make it NoQuorum.
        const lock = yield* redlock.acquire("job", { ttl: "2 seconds", nodeTimeout: "500 millis" })
        const refused = yield* Effect.flip(Effect.scoped(redlock.acquire("job", { ttl: "1 second", nodeTimeout: "500 millis", retry: Redlock.noRetry })))
        assert.strictEqual(refused._tag === "LockNotAcquired" ? refused.reason : refused._tag, "Held")
        yield* redlock.extend(lock, "10 seconds")
        assert.isAbove(Duration.toMillis(yield* lock.remaining), 9_000)
        assert.strictEqual((yield* redlock.release(lock)).status, "Released")
        const next = yield* Effect.scoped(redlock.acquire("job", { ttl: "1 second", nodeTimeout: "500 millis", retry: Redlock.noRetry }))
        assert.strictEqual(next.resources[0], "job")
      }).pipe(Effect.scoped, Effect.provide(live())))

    it.live("a waiter is woken by the release: granted within 200 ms of it, not at its 5 s retry", () =>
      Effect.gen(function*() {
        const redlock = yield* Redlock.Redlock
        const held = yield* redlock.acquire("job", { ttl: "10 seconds" })
        const waiting = yield* Effect.forkChild(Effect.scoped(Effect.gen(function*() {
          yield* redlock.acquire("job", { ttl: "10 seconds", retry: Schedule.max([Schedule.spaced("5 seconds"), Schedule.recurs(2)]) })
          return performance.now()
        })))
        yield* Effect.sleep("300 millis")
        const released = performance.now()
        yield* redlock.release(held)
        const granted = yield* Fiber.join(waiting)
        assert.isBelow(granted - released, 200)
      }).pipe(Effect.scoped, Effect.provide(live())))

    it.live("interruption at random points of contended acquisitions leaves no key and no line on any node", () =>
      Effect.gen(function*() {
        const redlock = yield* Redlock.Redlock
        for (let round = 0; round < 20; round++) {
          const contenders = yield* Effect.forEach(
            [0, 1, 2],
            () =>
              Effect.forkChild(Effect.scoped(Effect.andThen(
                // A node timeout a loaded machine meets: a leaving waiter waits for every node's answer within it.
                redlock.acquire("job", { ttl: "5 seconds", nodeTimeout: "1 second", retry: Schedule.spaced("2 millis") }),
                Effect.sleep("3 millis")
              )))
          )
          yield* Effect.sleep(Duration.millis(Math.floor(Math.random() * 8)))
          yield* Effect.forEach(contenders, Fiber.interrupt, { concurrency: "unbounded" })
        }
        // Late answers of interrupted attempts land and are undone within the node timeout.
        let keys = yield* keysNow
        for (let waited = 0; waited < 2_000 && keys.some((node) => node.length > 0); waited += 50) {
          yield* Effect.sleep("50 millis")
          keys = yield* keysNow
        }
        assert.deepStrictEqual(keys, [[], [], []])
      }).pipe(Effect.provide(live())))

    it.live("two managers never hold the lock together: a counter guarded by it is never entered twice", () =>
      Effect.gen(function*() {
        let inside = 0
        let most = 0
        let entries = 0
        const worker = Effect.gen(function*() {
          const redlock = yield* Redlock.Redlock
          for (let i = 0; i < 15; i++) {
            yield* Effect.scoped(Effect.gen(function*() {
              yield* redlock.acquire("counter", { ttl: "5 seconds", retry: Schedule.spaced("5 millis") })
              inside++
              entries++
              most = Math.max(most, inside)
              yield* Effect.sleep("1 millis")
              inside--
            }))
          }
        })
        // Two managers over the same nodes, as two processes would be.
        yield* Effect.forEach([0, 1], () => Effect.provide(worker, Redlock.layer(options)), { concurrency: "unbounded" })
        assert.strictEqual(entries, 30)
        assert.strictEqual(most, 1)
      }).pipe(Effect.provide(kind.nodes)))

    it.live("fencing tokens grow with each holder, are issued once per lock, and fail with LockLost once released", () =>
      Effect.gen(function*() {
        const redlock = yield* Redlock.Redlock
        const tokens: Array<bigint> = []
        for (let holder = 0; holder < 3; holder++) {
          yield* Effect.scoped(Effect.gen(function*() {
            const lock = yield* redlock.acquire("fenced", { ttl: "5 seconds" })
            const token = yield* lock.fencingToken
            assert.strictEqual(yield* lock.fencingToken, token, "one token per lock")
            tokens.push(token)
          }))
        }
        assert.isTrue(tokens[0] < tokens[1] && tokens[1] < tokens[2], tokens.join(" < "))
        const lock = yield* redlock.acquire("fenced", { ttl: "5 seconds" })
        yield* redlock.release(lock)
        const lost = yield* Effect.flip(lock.fencingToken)
        assert.strictEqual(lost._tag === "LockLost" ? lost.reason : lost._tag, "Released")
      }).pipe(Effect.scoped, Effect.provide(live())))

    it.live("an acquisition interrupted while it waits ends with the interruption, not a lock", () =>
      Effect.gen(function*() {
        const redlock = yield* Redlock.Redlock
        yield* redlock.acquire("job", { ttl: "10 seconds" })
        const waiting = yield* Effect.forkChild(Effect.scoped(redlock.acquire("job", { ttl: "1 second", retry: Schedule.spaced("1 second") })))
        yield* Effect.sleep("50 millis")
        yield* Fiber.interrupt(waiting)
        assert.isTrue(Exit.hasInterrupts(yield* Fiber.await(waiting)))
      }).pipe(Effect.scoped, Effect.provide(live())))
  })
}

describe("ioredis nodes on servers started a moment ago, restart quarantine on (the default)", () => {
  it.live("they abstain: the lock is refused NoQuorum, and each abstention says when the node votes again", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(Effect.scoped(Redlock.acquire("job", { ttl: "1 second", retry: Redlock.noRetry })))
      assert.strictEqual(refused._tag === "LockNotAcquired" ? refused.reason : refused._tag, "NoQuorum")
      const abstained = refused._tag === "LockNotAcquired" ? refused.outcomes.filter((outcome) => outcome._tag === "Abstained") : []
      assert.isAtLeast(abstained.length, 2)
      for (const outcome of abstained) assert.include(outcome._tag === "Abstained" ? outcome.detail : "", "votes again in")
    }).pipe(Effect.provide(Redlock.layer().pipe(Layer.provideMerge(ioredisKind.nodes)))))
})

describe("ioredis cluster nodes: a resource's keys in one hash slot", () => {
  it.live("keys carry their lock key as hash tag; a lock of resources without a common tag is refused CrossSlot on every node, with one granted", () =>
    Effect.gen(function*() {
      const redlock = yield* Redlock.Redlock
      const keysNow = Effect.flatMap(Probe, (probe) => probe.keys)
      const lock = yield* redlock.acquire("order:7", { ttl: "5 seconds" })
      assert.deepStrictEqual(yield* keysNow, [["{redlock:order:7}"], ["{redlock:order:7}"], ["{redlock:order:7}"]])
      yield* redlock.release(lock)

      const refused = yield* Effect.flip(Effect.scoped(redlock.acquire(["charge", "ship"], { ttl: "1 second", retry: Redlock.noRetry })))
      const outcomes = refused._tag === "LockNotAcquired" ? refused.outcomes : []
      assert.deepStrictEqual(outcomes.map((outcome) => outcome._tag === "Failed" ? outcome.error.reason : outcome._tag), ["CrossSlot", "CrossSlot", "CrossSlot"])
      assert.deepStrictEqual(yield* keysNow, [[], [], []])

      const both = yield* redlock.acquire(["{order:7}:charge", "{order:7}:ship"], { ttl: "5 seconds" })
      for (const keys of yield* keysNow) assert.deepStrictEqual([...keys].sort(), ["redlock:{order:7}:charge", "redlock:{order:7}:ship"])
      yield* redlock.release(both)
    }).pipe(Effect.scoped, Effect.provide(Redlock.layer(options).pipe(Layer.provideMerge(clusterKind.nodes)))))
})
