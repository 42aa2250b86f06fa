/**
 * One suite over every kind of node, through the public API on the live
 * clock: memory nodes, and ioredis, iovalkey, node-redis and Valkey GLIDE
 * nodes on real redis-servers (ours, each server a Redis Cluster of its own,
 * and a user's own node-redis and GLIDE clients). What the nodes do on their own is core's
 * (contract.test.ts, driverSuite.ts); this is the Effect API over them.
 *
 * One suite, run by both Effect lines (each package's test/nodeKinds.test.ts).
 */
import type { FleetOptions } from "@effect-redlock/fleet/fleet.js"
import {
  assert,
  atMost,
  Context,
  describe,
  Duration,
  Effect,
  Fiber,
  type Fleet,
  fork,
  Glide,
  Ioredis,
  Iovalkey,
  isInterrupted,
  it,
  Layer,
  layer,
  layerFleet,
  NodeRedis,
  Option,
  RedisFleet,
  RedisNode,
  Redlock,
  RedlockError,
  Schedule,
  type Scope
} from "@effect-redlock/line"
import { createClient } from "redis"
import { GlideClient, Logger } from "@valkey/valkey-glide"

/** The nodes of one test, built in its scope, and every key on each (lines of waiters included). */
interface Nodes {
  readonly context: Context.Context<RedisNode.RedisNodes>
  readonly keys: Effect.Effect<ReadonlyArray<ReadonlyArray<string>>, unknown>
}

interface Kind {
  readonly name: string
  /** The servers' options; `undefined`: memory nodes, no servers. */
  readonly fleet: FleetOptions | undefined
  readonly nodes: (fleet: Fleet | undefined) => Effect.Effect<Nodes, unknown, Scope.Scope>
}

const memoryKind: Kind = {
  name: "memory nodes",
  fleet: undefined,
  nodes: () =>
    Effect.map(Layer.build(RedisNode.layerMemory(3)), (context) => ({
      context,
      keys: Effect.forEach([0, 1, 2], (index) => Context.get(context, RedisNode.MemoryNodes).keys(index))
    }))
}

/** Nodes of one driver on the fleet's 3 servers. */
const redisKind = (
  name: string,
  nodesOf: (fleet: Fleet) => Effect.Effect<Layer.Layer<RedisNode.RedisNodes, unknown>, never, Scope.Scope>,
  fleetOptions: FleetOptions = {}
): Kind => ({
  name,
  fleet: fleetOptions,
  nodes: (fleet) =>
    Effect.gen(function*() {
      const servers = fleet!.servers
      const context = yield* Layer.build(yield* nodesOf(fleet!))
      const keys = Effect.forEach(servers, (server) =>
        Effect.map(server.call("KEYS", "*"), (keys) => keys as ReadonlyArray<string>))
      return { context, keys }
    })
})

const ioredisKind = redisKind("ioredis nodes on 3 redis-servers", (fleet) => Effect.succeed(Ioredis.layer(fleet.nodes)))

const iovalkeyKind = redisKind(
  "iovalkey nodes on 3 redis-servers",
  (fleet) => Effect.succeed(Iovalkey.layer(fleet.nodes))
)

// Each node a Redis Cluster (of one master here; core's test/cluster.test.ts runs three): keys tagged by resource.
const clusterKind = redisKind(
  "ioredis cluster nodes on 3 one-master Redis Clusters",
  (fleet) =>
    Effect.succeed(
      Ioredis.layer(fleet.nodes.map((node) => ({ cluster: { nodes: [{ host: node.host, port: node.port }] } })))
    ),
  { clusterPerServer: true }
)

const nodeRedisKind = redisKind(
  "node-redis nodes on 3 redis-servers",
  (fleet) => Effect.succeed(NodeRedis.layer(fleet.nodes))
)

// node-redis users' own clients (RESP3, redis 6's default), connected by the user and closed after the nodes.
const nodeRedisClientsKind = redisKind("node-redis clients of the user's on 3 redis-servers", (fleet) =>
  Effect.map(
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
  ))

// GLIDE's core logs every server error to the console by default: its users set their own level.
Logger.setLoggerConfig("off")

const glideKind = redisKind(
  "Valkey GLIDE nodes on 3 redis-servers",
  (fleet) => Effect.succeed(Glide.layer(fleet.nodes))
)

// GLIDE users' own clients (RESP3 and GLIDE's 250 ms requestTimeout, its defaults), closed after the nodes.
const glideClientsKind = redisKind("Valkey GLIDE clients of the user's on 3 redis-servers", (fleet) =>
  Effect.map(
    Effect.forEach(fleet.servers, (server) =>
      Effect.acquireRelease(
        Effect.promise(() => GlideClient.createClient({ addresses: [{ host: "127.0.0.1", port: server.port }] })),
        (client) => Effect.sync(() => client.close())
      )),
    (clients) => Glide.layer(clients.map((client) => ({ client })))
  ))

// The servers were started a moment ago: without the restart quarantine (tested on its own), they vote at once.
const options: Redlock.Options = { restartQuarantine: false }

/** A manager over the test's nodes (another one over the same nodes is another process). */
const managerOver = (nodes: Nodes, settings: Redlock.Options = options) =>
  Effect.map(
    Layer.build(Redlock.layer(settings).pipe(Layer.provide(Layer.succeedContext(nodes.context)))),
    (context) => Context.get(context, Redlock.Redlock)
  )

/** The nodes of `kind` for one test, on the fleet the test runs beside (none for memory nodes). */
type NodesOf = Effect.Effect<Nodes, unknown, Scope.Scope | RedisFleet>

type Tester = {
  readonly effect: (name: string, self: () => Effect.Effect<void, unknown, Scope.Scope | RedisFleet>) => void
}

const behaviours = (it: Tester, nodesOf: NodesOf) => {
  it.effect("acquire holds the key on a quorum; the scope's end deletes it on every node", () =>
    Effect.gen(function*() {
      const nodes = yield* nodesOf
      const redlock = yield* managerOver(nodes)
      const value = yield* Effect.scoped(Effect.gen(function*() {
        const lock = yield* redlock.acquire("job", { ttl: "5 seconds" })
        const inspected = yield* redlock.inspect("job")
        assert.deepStrictEqual(inspected.holder, Option.some(lock.value))
        assert.isTrue(Option.isSome(inspected.ttl) && Duration.toMillis(inspected.ttl.value) <= 5_000)
        return lock.value
      }))
      assert.strictEqual(value.length, 28)
      assert.deepStrictEqual(yield* nodes.keys, [[], [], []])
    }))

  it.effect("a held lock is refused to another acquirer (Held); extend keeps it; release frees it", () =>
    Effect.gen(function*() {
      const redlock = yield* managerOver(yield* nodesOf)
      // A node timeout a loaded machine meets (a 1 s ttl's default is 10 ms): a late answer would make it NoQuorum.
      const lock = yield* redlock.acquire("job", { ttl: "2 seconds", nodeTimeout: "500 millis" })
      const refused = yield* Effect.flip(
        Effect.scoped(redlock.acquire("job", { ttl: "1 second", nodeTimeout: "500 millis", retry: Redlock.noRetry }))
      )
      assert.strictEqual(refused instanceof RedlockError.LockNotAcquired ? refused.reason : String(refused), "Held")
      yield* redlock.extend(lock, "10 seconds")
      assert.isAbove(Duration.toMillis(yield* lock.remaining), 9_000)
      assert.strictEqual((yield* redlock.release(lock)).status, "Released")
      const next = yield* Effect.scoped(
        redlock.acquire("job", { ttl: "1 second", nodeTimeout: "500 millis", retry: Redlock.noRetry })
      )
      assert.strictEqual(next.resources[0], "job")
    }))

  it.effect("a waiter is woken by the release: granted within 200 ms of it, not at its 5 s retry", () =>
    Effect.gen(function*() {
      const redlock = yield* managerOver(yield* nodesOf)
      const held = yield* redlock.acquire("job", { ttl: "10 seconds" })
      const waiting = yield* fork(Effect.scoped(Effect.gen(function*() {
        yield* redlock.acquire("job", { ttl: "10 seconds", retry: atMost(2)(Schedule.spaced("5 seconds")) })
        return performance.now()
      })))
      yield* Effect.sleep("300 millis")
      const released = performance.now()
      yield* redlock.release(held)
      const granted = yield* Fiber.join(waiting)
      assert.isBelow(granted - released, 200)
    }))

  it.effect("interruption at random points of contended acquisitions leaves no key and no line on any node", () =>
    Effect.gen(function*() {
      const nodes = yield* nodesOf
      const redlock = yield* managerOver(nodes)
      for (let round = 0; round < 20; round++) {
        const contenders = yield* Effect.forEach([0, 1, 2], () =>
          fork(Effect.scoped(Effect.andThen(
            // A node timeout a loaded machine meets: a leaving waiter waits for every node's answer within it.
            redlock.acquire("job", { ttl: "5 seconds", nodeTimeout: "1 second", retry: Schedule.spaced("2 millis") }),
            Effect.sleep("3 millis")
          ))))
        yield* Effect.sleep(Duration.millis(Math.floor(Math.random() * 8)))
        yield* Effect.forEach(contenders, Fiber.interrupt, { concurrency: "unbounded" })
      }
      // Late answers of interrupted attempts land and are undone within the node timeout.
      let keys = yield* nodes.keys
      for (let waited = 0; waited < 2_000 && keys.some((node) => node.length > 0); waited += 50) {
        yield* Effect.sleep("50 millis")
        keys = yield* nodes.keys
      }
      assert.deepStrictEqual(keys, [[], [], []])
    }))

  it.effect("two managers never hold the lock together: a counter guarded by it is never entered twice", () =>
    Effect.gen(function*() {
      const nodes = yield* nodesOf
      let inside = 0
      let most = 0
      let entries = 0
      // Two managers over the same nodes, as two processes would be.
      const managers = [yield* managerOver(nodes), yield* managerOver(nodes)]
      const worker = (redlock: typeof managers[number]) =>
        Effect.gen(function*() {
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
      yield* Effect.forEach(managers, worker, { concurrency: "unbounded" })
      assert.strictEqual(entries, 30)
      assert.strictEqual(most, 1)
    }))

  it.effect("fencing tokens grow with each holder, are issued once per lock, and fail with LockLost once released", () =>
    Effect.gen(function*() {
      const redlock = yield* managerOver(yield* nodesOf)
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
      assert.strictEqual(lost instanceof RedlockError.LockLost ? lost.reason : String(lost), "Released")
    }))

  it.effect("an acquisition interrupted while it waits ends with the interruption, not a lock", () =>
    Effect.gen(function*() {
      const redlock = yield* managerOver(yield* nodesOf)
      yield* redlock.acquire("job", { ttl: "10 seconds" })
      const waiting = yield* fork(
        Effect.scoped(redlock.acquire("job", { ttl: "1 second", retry: Schedule.spaced("1 second") }))
      )
      yield* Effect.sleep("50 millis")
      yield* Fiber.interrupt(waiting)
      assert.isTrue(isInterrupted(yield* Fiber.await(waiting)))
    }))
}

/** The tests of `kind`, each on nodes of its own (and, for servers, on the kind's fleet, emptied first). */
const suiteOf = (kind: Kind, tests: (it: Tester, nodesOf: NodesOf) => void) => {
  if (kind.fleet === undefined) {
    describe(
      kind.name,
      () =>
        tests({
          effect: (name, self) =>
            it.live(name, () => Effect.scoped(self() as Effect.Effect<void, unknown, Scope.Scope>))
        }, kind.nodes(undefined))
    )
    return
  }
  layer(layerFleet(3, kind.fleet), { timeout: 60_000, excludeTestServices: true })(kind.name, (it) =>
    tests(
      { effect: (name, self) => it.effect(name, () => Effect.scoped(self())) },
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        return yield* kind.nodes(fleet)
      })
    ))
}

export const nodeKindsSuite = () => {
  for (
    const kind of [
      memoryKind,
      ioredisKind,
      iovalkeyKind,
      clusterKind,
      nodeRedisKind,
      nodeRedisClientsKind,
      glideKind,
      glideClientsKind
    ]
  ) suiteOf(kind, behaviours)

  suiteOf({
    ...ioredisKind,
    name: "ioredis nodes on servers started a moment ago, restart quarantine on (the default)"
  }, (it, nodesOf) => {
    it.effect("they abstain: the lock is refused NoQuorum, and each abstention says when the node votes again", () =>
      Effect.gen(function*() {
        const redlock = yield* managerOver(yield* nodesOf, {})
        const refused = yield* Effect.flip(
          Effect.scoped(redlock.acquire("job", { ttl: "1 second", retry: Redlock.noRetry }))
        )
        assert.strictEqual(
          refused instanceof RedlockError.LockNotAcquired ? refused.reason : String(refused),
          "NoQuorum"
        )
        const abstained = refused instanceof RedlockError.LockNotAcquired
          ? refused.outcomes.filter((outcome) => outcome._tag === "Abstained")
          : []
        assert.isAtLeast(abstained.length, 2)
        for (const outcome of abstained) {
          assert.include(outcome._tag === "Abstained" ? outcome.detail : "", "votes again in")
        }
      }))
  })

  suiteOf({ ...clusterKind, name: "ioredis cluster nodes: a resource's keys in one hash slot" }, (it, nodesOf) => {
    it.effect("keys carry their lock key as hash tag; a lock of resources without a common tag is refused CrossSlot on every node, with one granted", () =>
      Effect.gen(function*() {
        const nodes = yield* nodesOf
        const redlock = yield* managerOver(nodes)
        const lock = yield* redlock.acquire("order:7", { ttl: "5 seconds" })
        assert.deepStrictEqual(yield* nodes.keys, [["{redlock:order:7}"], ["{redlock:order:7}"], ["{redlock:order:7}"]])
        yield* redlock.release(lock)

        const refused = yield* Effect.flip(
          Effect.scoped(redlock.acquire(["charge", "ship"], { ttl: "1 second", retry: Redlock.noRetry }))
        )
        const outcomes = refused instanceof RedlockError.LockNotAcquired ? refused.outcomes : []
        assert.deepStrictEqual(
          outcomes.map((outcome) => outcome._tag === "Failed" ? outcome.error.reason : outcome._tag),
          ["CrossSlot", "CrossSlot", "CrossSlot"]
        )
        assert.deepStrictEqual(yield* nodes.keys, [[], [], []])

        const both = yield* redlock.acquire(["{order:7}:charge", "{order:7}:ship"], { ttl: "5 seconds" })
        for (const keys of yield* nodes.keys) {
          assert.deepStrictEqual([...keys].sort(), ["redlock:{order:7}:charge", "redlock:{order:7}:ship"])
        }
        yield* redlock.release(both)
      }))
  })
}
