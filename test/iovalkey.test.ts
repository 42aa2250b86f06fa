/**
 * The iovalkey nodes (RedisNode/Iovalkey): the ioredis driver over iovalkey's
 * client, tested rather than assumed: the node contract over our clients and
 * a user's, what every driver does (driverSuite.ts), and locks contending
 * over three servers with their releases heard.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Schedule } from "effect"
import { Redis } from "iovalkey"
import * as RedisFleet from "../fleet/RedisFleet.js"
import * as Redlock from "../src/Redlock.js"
import * as Iovalkey from "../src/RedisNode/Iovalkey.js"
import { contract, redisHarness } from "./contract.js"
import { driverSuite } from "./driverSuite.js"
import { expectEmpty, overlaps, recordSection, type Section } from "./support.js"

/** A user's iovalkey client, connected, closed with the scope. */
const userClient = (port: number, password?: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Redis({ host: "127.0.0.1", port, ...(password === undefined ? {} : { password }) })
      await client.ping()
      return client
    }),
    (client) => Effect.sync(() => client.disconnect())
  )

/** A lock manager over iovalkey nodes (quarantine off: the fleet's servers were just started). */
const manager = (nodes: ReadonlyArray<Iovalkey.NodeOptions>) =>
  Effect.map(
    Layer.build(Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(Iovalkey.layer(nodes)))),
    (context) => Context.get(context, Redlock.Redlock)
  )

layer(RedisFleet.layerLocal(1), { timeout: 30_000, excludeTestServices: true })("contract: redis-server via iovalkey", (it) => {
  contract<RedisFleet.RedisFleet>((name, self) => it.effect(name, self), redisHarness(Iovalkey.make))
  contract<RedisFleet.RedisFleet>(
    (name, self) => it.effect(`a user's client: ${name}`, self),
    redisHarness((options) => Effect.flatMap(userClient(options.port!), (client) => Iovalkey.make({ client })))
  )
})

layer(RedisFleet.layerLocal(2, { password: "s3cret" }), { timeout: 30_000, excludeTestServices: true })(
  "iovalkey node options",
  (it) => {
    driverSuite(it, {
      layer: Iovalkey.layer,
      layerConfig: () => Iovalkey.layerConfig(),
      userClient: (port, password) =>
        Effect.map(userClient(port, password), (client) => ({
          client,
          isReady: () => client.status === "ready",
          get: (key) => client.get(key)
        }))
    })
  }
)

layer(RedisFleet.layerLocal(3), { timeout: 60_000, excludeTestServices: true })("locks over iovalkey nodes (3 redis-servers)", (it) => {
  it.scoped("managers contending never overlap; a waiter is woken by the release, not by its next poll", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const managers = yield* Effect.forEach([0, 1, 2], () => manager(fleet.nodes))
      const sections: Array<Section> = []
      const retry = Redlock.retry({ delay: 20, times: 500 })
      yield* Effect.forEach(managers, (redlock, index) =>
        Effect.repeatN(
          Effect.gen(function*() {
            const lock = yield* redlock.acquire("turns", { ttl: "10 seconds", retry })
            yield* recordSection(`m${index}`, lock, Effect.sleep("2 millis"), sections)
            assert.strictEqual((yield* redlock.release(lock)).status, "Released")
          }).pipe(Effect.scoped),
          9
        ), { concurrency: "unbounded", discard: true })
      assert.strictEqual(sections.length, 30)
      assert.deepStrictEqual(overlaps(sections), [])

      const [holder, waiter] = managers
      const held = yield* holder.acquire("woken", { ttl: "10 seconds" })
      const waiting = yield* Effect.fork(Effect.scoped(Effect.zipRight(
        waiter.acquire("woken", { ttl: "10 seconds", retry: Schedule.spaced("10 seconds").pipe(Schedule.intersect(Schedule.recurs(5))) }),
        Effect.sync(() => performance.now())
      )))
      // Past the renewal of the place its first attempt took (~350 ms): its next attempt on its own is 10 s away.
      yield* Effect.sleep("1 second")
      const released = performance.now()
      assert.strictEqual((yield* holder.release(held)).status, "Released")
      const acquired = yield* Fiber.join(waiting).pipe(Effect.timeout("5 seconds"))
      assert.isBelow(acquired - released, 500, `woken ${Math.round(acquired - released)} ms after the release`)
      yield* Effect.sleep("50 millis")
      yield* expectEmpty(fleet)
    }))
})
