/**
 * The node-redis nodes (`redis` 5 and 6: this file runs in the "ioredis 5"
 * project on redis 6, and in the "node-redis 5" project on redis 5): what
 * every driver does (driverSuite.ts), and locks
 * over three servers with release announcements heard, refused (an ACL
 * without pub/sub) and typed errors.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Redacted } from "effect"
import { createClient, createClientPool, createCluster, createSentinel } from "redis"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import { makeRedlock } from "../src/Promise.js"
import * as Redlock from "../src/Redlock.js"
import { InvalidOptions } from "../src/RedlockError.js"
import * as NodeRedis from "../src/RedisNode/NodeRedis.js"
import { driverSuite, lockSuite, nodesOf, type UserClientOptions } from "./driverSuite.js"
import { aclUser, expectEmpty, failureOf, redisManager, slowRetry } from "./support.js"

/** A user's client, connected, closed with the scope. */
const userClient = (port: number, options: UserClientOptions & { readonly password?: string; readonly RESP?: 2 | 3 } = {}) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = createClient({
        socket: { host: "127.0.0.1", port },
        ...(options.password === undefined ? {} : { password: options.password }),
        ...(options.username === undefined ? {} : { username: options.username }),
        // node-redis 5 has no key prefix (and ignores the option).
        ...(options.keyPrefix === undefined ? {} : { keyPrefix: options.keyPrefix }),
        ...(options.RESP === undefined ? {} : { RESP: options.RESP }),
        ...options.driverOptions
      })
      client.on("error", () => {})
      await client.connect()
      return client
    }),
    (client) => Effect.promise(() => client.isOpen ? client.close().catch(() => {}) : Promise.resolve())
  )

/** A lock manager over node-redis nodes (quarantine off: the fleet's servers were just started). */
const manager = (nodes: ReadonlyArray<NodeRedis.NodeOptions>, options?: Redlock.Options) =>
  Effect.map(
    Layer.build(Redlock.layer({ restartQuarantine: false, ...options }).pipe(Layer.provide(NodeRedis.layer(nodes)))),
    (context) => Context.get(context, Redlock.Redlock)
  )

describe("node-redis objects that are no client", () => {
  // A pool passed for a client took locks, then threw in the first waiter (it has no duplicate() for the
  // release subscriber) and ended the process.
  it.effect("a client pool, a cluster or Sentinel client, anything else: InvalidOptions (client) before anything is sent", () =>
    Effect.gen(function*() {
      const socket = { host: "127.0.0.1", port: 1 }
      const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
        [createClientPool({ socket }), /^a node-redis client pool \(createClientPool\) cannot subscribe/],
        [createCluster({ rootNodes: [{ socket }] }), /^a node-redis cluster client \(createCluster\) is not served/],
        [createSentinel({ name: "mymaster", sentinelRootNodes: [socket] }), /^a node-redis Sentinel client \(createSentinel\) is not served/],
        [{ isOpen: false }, /^must be a node-redis client \(createClient\): it has no sendCommand\(\)$/],
        ["redis://127.0.0.1", /^must be a node-redis client \(createClient\)$/]
      ]
      for (const [client, detail] of cases) {
        const layered = failureOf(yield* Effect.exit(Effect.scoped(nodesOf(NodeRedis.layer([{ client } as unknown as NodeRedis.NodeOptions])))))
        assert.instanceOf(layered, InvalidOptions)
        assert.strictEqual((layered as InvalidOptions).option, "client")
        assert.match((layered as InvalidOptions).detail, detail)
      }
      // Promise code, which picks node-redis for a client without ioredis's status: the same refusal.
      const promised = yield* Effect.promise(() =>
        makeRedlock([{ client: createClientPool({ socket }) } as never]).then(() => undefined, (error: unknown) => error)
      )
      assert.instanceOf(promised, InvalidOptions)
      assert.strictEqual((promised as InvalidOptions).option, "client")
    }))
})

layer(RedisFleet.layerLocal(2, { password: "s3cret" }), { timeout: 30_000, excludeTestServices: true })(
  "node-redis node options",
  (it) => {
    driverSuite(it, {
      layer: NodeRedis.layer,
      layerConfig: () => NodeRedis.layerConfig(),
      clientVariants: [
        ["as made by default", {}],
        ["RESP3", { driverOptions: { RESP: 3 } }],
        ["another database (2)", { driverOptions: { database: 2 } }],
        ["a key prefix", { keyPrefix: "app:" }]
      ],
      userClient: (port, password, options = {}) =>
        Effect.map(userClient(port, { password, ...options }), (client) => ({
          client,
          keyPrefix: typeof (client as { readonly _keyPrefix?: unknown })._keyPrefix === "string" ? (client as { readonly _keyPrefix: string })._keyPrefix : "",
          isReady: () => client.isReady,
          get: (key) => client.get(key),
          blockFor: (seconds) => client.blPop("nowhere", seconds)
        }))
    })

    it.scoped("a wrong password is an Auth failure at once, not a hang", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const [node] = yield* nodesOf(NodeRedis.layer([{ ...fleet.nodes[0], password: Redacted.make("wrong") }]))
        const started = performance.now()
        const error = failureOf(yield* Effect.exit(node.acquire(["k"], "v", 1_000)))
        assert.isBelow(performance.now() - started, 200)
        assert.strictEqual(error.reason, "Auth", error.detail)
      }))
  }
)

layer(RedisFleet.layerLocal(3), { timeout: 60_000, excludeTestServices: true })("locks over node-redis nodes (3 redis-servers)", (it) => {
  lockSuite(it, "our connections", NodeRedis, (fleet) => Effect.succeed(fleet.nodes))
  for (const RESP of [2, 3] as const) {
    lockSuite(it, `users' RESP${RESP} clients`, NodeRedis, (fleet) =>
      Effect.forEach(fleet.servers, (server) => Effect.map(userClient(server.port, { RESP }), (client) => ({ client }))))
  }

  it.scoped("an ACL user without pub/sub: its nodes say they do not hear releases, and locks still go round", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      yield* aclUser(fleet, "no-pubsub-nr", "secret", "-@pubsub")
      const nodes = fleet.nodes.map((node) => ({ ...node, username: "no-pubsub-nr", password: Redacted.make("secret") }))
      const holder = yield* manager(nodes)
      const waiter = yield* manager(nodes)
      const held = yield* holder.acquire("deaf", { ttl: "10 seconds" })
      const waiting = yield* Effect.fork(Effect.scoped(waiter.acquire("deaf", { ttl: "10 seconds", retry: Redlock.retry({ delay: 20, times: 200 }) })))
      yield* Effect.sleep("300 millis")
      assert.deepStrictEqual(waiter.nodes.map((node) => node.hearsReleases?.()), [false, false, false], "SUBSCRIBE was refused")
      assert.strictEqual((yield* holder.release(held)).status, "Released")
      yield* Fiber.join(waiting)
      yield* expectEmpty(fleet)
    }))

  it.scoped("ioredis and node-redis nodes of one process (a subscriber connection each): a release that one of them listens for is still published for the other", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const overIoredis = yield* redisManager(fleet.nodes)
      const overNodeRedis = yield* manager(fleet.nodes)
      const slowly = { ttl: "10 seconds", retry: slowRetry, nodeTimeout: "1 second" } as const
      const acquiredAt = (redlock: Redlock.Redlock["Type"]) =>
        Effect.fork(Effect.scoped(Effect.zipRight(redlock.acquire("mixed", slowly), Effect.sync(() => performance.now()))))
      const held = yield* overIoredis.acquire("mixed", { ttl: "10 seconds" })
      const first = yield* acquiredAt(overNodeRedis)
      yield* Effect.sleep("200 millis")
      // Behind it, a waiter over ioredis: this process's ioredis subscriber listens to the key's channel too.
      const second = yield* acquiredAt(overIoredis)
      // Past the renewal of the places the first attempts took: the next attempts on their own are 10 s away.
      yield* Effect.sleep("1 second")
      let released = performance.now()
      assert.strictEqual((yield* overIoredis.release(held)).status, "Released")
      const firstAcquired = yield* Fiber.join(first).pipe(Effect.timeout("5 seconds"))
      assert.isBelow(firstAcquired - released, 500, "the node-redis waiter heard the ioredis release on its own connection")
      released = firstAcquired
      const secondAcquired = yield* Fiber.join(second).pipe(Effect.timeout("5 seconds"))
      assert.isBelow(secondAcquired - released, 500, "and the other way round")
      yield* expectEmpty(fleet)
    }))
})
