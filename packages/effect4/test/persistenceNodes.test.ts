/**
 * Nodes over Effect 4's own `Redis` service (`effect/persistence/Redis`), as
 * `@effect/platform-node`'s `NodeRedis.layer` provides it, on real
 * redis-servers: core's node contract (core/test/nodeContract.ts) over the
 * node, a restarted server told from the old one in the first answer after
 * it, waiters woken by releases heard through the service's `subscribe`,
 * and locks from the Effect API over `RedisNode/Persistence.layer`.
 */
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { NodeRedis } from "@effect/platform-node"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redis from "effect/persistence/Redis"
import * as Scope from "effect/Scope"
import { type LocalFleet, startLocalFleet } from "@effect-redlock/fleet/fleet.js"
import * as LiveTime from "@effect-redlock/core/engine/liveTime.js"
import type { Node, NodeRun } from "@effect-redlock/core/engine/node.js"
import { Problem } from "@effect-redlock/core/engine/options.js"
import { readMillis } from "@effect-redlock/core/manager/durations.js"
import { makeNodeError } from "@effect-redlock/core/manager/errors.js"
import * as NodeOptions from "@effect-redlock/core/nodes/nodeOptions.js"
import { makeRedlock, retry } from "@effect-redlock/core/Promise.js"
import { Redlock } from "effect-redlock"
import * as Persistence from "effect-redlock/RedisNode/Persistence"
import { driverOf } from "../src/internal/redisService.js"
import { contract } from "../../core/test/nodeContract.js"

const time = LiveTime.make(0)
const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** Closed after each use: what a test opened. */
const opened: Array<() => Promise<unknown>> = []
const closeOpened = async () => {
  for (const close of opened.splice(0).reverse()) await close().catch(() => {})
}

/** A `Redis` service over NodeRedis for the server on `port`, built in a scope of its own (closed by `closeOpened`). */
const serviceFor = async (port: number): Promise<Redis.Redis["Service"]> => {
  const scope = Effect.runSync(Scope.make())
  opened.push(() => Effect.runPromise(Scope.close(scope, Exit.void)))
  const services = await Effect.runPromise(
    Layer.buildWithScope(NodeRedis.layer({ socket: { host: "127.0.0.1", port } }), scope)
  )
  return Context.get(services, Redis.Redis)
}

/** A node over the service for `port`, opened as core opens a user's client (its errors core's own, for the contract). */
const nodeFor = async (port: number, name = `service ${port}`): Promise<Node> => {
  const driver = driverOf(Context.empty(), name)
  const checked = NodeOptions.check(driver, { client: await serviceFor(port) }, {
    millis: readMillis,
    password: () => undefined
  })
  if (checked instanceof Problem) throw new Error(`${checked.option}: ${checked.detail}`)
  const node = await NodeOptions.open(driver, checked, makeNodeError, time.now)
  opened.push(node.close)
  return node.node
}

const runId = (run: NodeRun): string | undefined => run._tag === "Known" ? run.id : undefined

let fleet: LocalFleet
beforeAll(async () => {
  fleet = await startLocalFleet(3)
})
afterAll(async () => {
  await closeOpened()
  await fleet?.stop()
})

describe("contract: a node over NodeRedis.layer's Redis service", () => {
  contract({ it }, async () => {
    await fleet.reset()
    const server = fleet.servers[0]
    const node = await nodeFor(server.port)
    return {
      node,
      putForeign: async (key) => void await server.call("RPUSH", key, "important", "data"),
      foreignIntact: async (key) =>
        JSON.stringify(await server.call("LRANGE", key, 0, -1)) === "[\"important\",\"data\"]",
      keys: async () => await server.call("KEYS", "*") as ReadonlyArray<string>,
      close: closeOpened
    }
  })
})

describe("nodes over NodeRedis.layer's Redis service on 3 redis-servers", () => {
  it("a server restarted while nobody asked it: the first answer after it is not told as the old run's", async () => {
    try {
      const server = fleet.servers[1]
      const node = await nodeFor(server.port)
      const before = runId(node.run())
      assert.isDefined(before, "identified at start-up")
      await server.kill()
      await server.start()
      // Long enough for node-redis to reconnect by itself.
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
      await sleep(500)
      const after = node.run()
      assert.strictEqual(after._tag, "Known")
      assert.notStrictEqual(runId(after), before)
    } finally {
      await closeOpened()
    }
  })

  it("a waiter is woken by the release, heard through the service's subscribe, not by its 10 s retry", async () => {
    try {
      await fleet.reset()
      const nodesOf = () => Promise.all(fleet.servers.map((server) => nodeFor(server.port)))
      const holder = await makeRedlock(await nodesOf(), { restartQuarantine: false })
      const waiter = await makeRedlock(await nodesOf(), { restartQuarantine: false })
      opened.push(() => holder.close(), () => waiter.close())
      const held = await holder.acquire("woken", { ttl: 10_000 })
      const waiting = waiter.acquire("woken", {
        ttl: 10_000,
        retry: retry({ delay: 10_000, times: 3 }),
        nodeTimeout: 1_000
      })
      await sleep(1_000)
      const released = performance.now()
      await holder.release(held)
      const lock = await waiting
      const after = performance.now() - released
      await waiter.release(lock)
      assert.isBelow(after, 1_000, `acquired ${Math.round(after)} ms after the release`)
    } finally {
      await closeOpened()
    }
  })

  it("the Effect API over Persistence.layer: a lock held on every master, refused to another manager, gone at the scope's end", async () => {
    await fleet.reset()
    const masters = fleet.servers.map((server) => NodeRedis.layer({ socket: { host: "127.0.0.1", port: server.port } }))
    const nodes = Persistence.layer(masters)
    const program = Effect.gen(function*() {
      const redlock = yield* Redlock.Redlock
      const other = yield* Layer.build(Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(nodes)))
      const held = yield* Effect.scoped(Effect.gen(function*() {
        yield* redlock.acquire("orders:42", { ttl: "10 seconds" })
        const refused = yield* Context.get(other, Redlock.Redlock).acquire("orders:42", {
          ttl: "10 seconds",
          retry: Redlock.noRetry
        }).pipe(
          Effect.scoped,
          Effect.flip
        )
        const counts = yield* Effect.promise(() => fleet.dbsizes())
        return { refused: refused._tag, counts }
      }))
      return held
    }).pipe(Effect.scoped, Effect.provide(Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(nodes))))
    const { counts, refused } = await Effect.runPromise(program)
    assert.strictEqual(refused, "LockNotAcquired")
    assert.deepStrictEqual(counts, [1, 1, 1])
    await sleep(100)
    assert.deepStrictEqual(await fleet.dbsizes(), [0, 0, 0])
  })
})
