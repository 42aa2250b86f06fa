/**
 * What an Effect package adds to core's promise API (its `effect-redlock/
 * Promise`): its layers of nodes, passwords held by a `Redacted`, its retry
 * Schedules (stepped as plain code) and any Schedule built by hand (stepped
 * as an effect), and its error classes recognising core's errors; on 3 real
 * redis-servers and in-memory nodes. The promise API itself is tested in
 * core (promise.test.ts, promise-redis.test.ts).
 *
 * One suite, run by both Effect lines (each package's test/promise.test.ts).
 */
import {
  assert,
  atMost,
  describe,
  Effect,
  type Fleet,
  Ioredis,
  it,
  layer,
  layerFleet,
  PromiseApi,
  Redacted,
  RedisFleet,
  RedisNode,
  Redlock,
  RedlockError,
  Schedule
} from "@effect-redlock/line"
import { eventually } from "@effect-redlock/fleet/servers.js"
import * as Util from "node:util"

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))
/** A rejection's reason; fails when the promise resolves. */
const refusal = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(() => assert.fail("granted"), (error: unknown) => error)
/** A key's value on one server of the fleet. */
const valueOn = (server: Fleet["servers"][number], key: string) => Effect.runPromise(server.call("GET", key))
/** Until `read` gives `wanted` (a write at quorum: the last server's may land just after), at most 2 s. */
const until = (read: () => Promise<unknown>, wanted: unknown) =>
  eventually(async () => assert.strictEqual(await read(), wanted), 2_000, 20)

export const promiseHostSuite = () => {
  layer(layerFleet(3), { timeout: 60_000, excludeTestServices: true })(
    "effect-redlock/Promise, 3 redis-servers",
    (it) => {
      it.effect("connection options: a lock on every server, refused to a second holder with core's error, which this package's class recognises", () =>
        Effect.gen(function*() {
          const { nodes, servers } = yield* RedisFleet
          yield* Effect.promise(async () => {
            const redlock = await PromiseApi.makeRedlock(nodes, { restartQuarantine: false })
            const other = await PromiseApi.makeRedlock(nodes, { restartQuarantine: false })
            const lock = await redlock.acquire("orders:42", { ttl: 10_000 })
            for (const server of servers) await until(() => valueOn(server, "redlock:orders:42"), lock.value)
            const refused = await refusal(other.acquire("orders:42", { ttl: 10_000, retry: PromiseApi.noRetry }))
            assert.instanceOf(refused, PromiseApi.LockNotAcquired)
            assert.instanceOf(refused, RedlockError.LockNotAcquired)
            assert.strictEqual((refused as RedlockError.LockNotAcquired).reason, "Held")
            assert.strictEqual((await redlock.release(lock)).status, "Released")
            for (const server of servers) await until(() => valueOn(server, "redlock:orders:42"), null)
            await Promise.all([redlock.close(), other.close()])
          })
        }))

      it.effect("retry Schedules: Redlock.noRetry and Redlock.retry by their plain steps, Schedules built by hand as effects", () =>
        Effect.gen(function*() {
          const { nodes } = yield* RedisFleet
          yield* Effect.promise(async () => {
            const redlock = await PromiseApi.makeRedlock(nodes, { restartQuarantine: false })
            const lock = await redlock.acquire("reports", { ttl: 10_000 })
            const attemptsWith = async (retry: unknown) =>
              ((await refusal(
                redlock.acquire("reports", { ttl: 10_000, retry: retry as never })
              )) as RedlockError.LockNotAcquired).attempts
            assert.strictEqual(await attemptsWith(Redlock.noRetry), 1)
            assert.strictEqual(await attemptsWith(Schedule.recurs(0)), 1)
            // Each retry, and at most one more attempt: at once when the line's subscription is ready (a release may have been missed).
            for (
              const [retry, times] of [[Redlock.retry({ delay: 5, times: 3 }), 3], [
                Schedule.spaced("5 millis").pipe(atMost(2)),
                2
              ]] as const
            ) {
              const attempts = await attemptsWith(retry)
              assert.isTrue(
                attempts === times + 1 || attempts === times + 2,
                `${attempts} attempts for ${times} retries`
              )
            }
            await redlock.release(lock)
            // A waiter on a Schedule of 10 s steps is woken by the release, long before its next step.
            const held = await redlock.acquire("reports", { ttl: 10_000 })
            const waiting = redlock.acquire("reports", {
              ttl: 10_000,
              retry: Schedule.spaced("10 seconds").pipe(atMost(3))
            })
            await sleep(200)
            const releasedAt = performance.now()
            await redlock.release(held)
            const next = await waiting
            assert.isBelow(performance.now() - releasedAt, 2_000, "woken by the release, not by its schedule")
            assert.isAbove(next.attempts, 1)
            await redlock.close()
          })
        }))

      it.effect("a layer of this package's nodes (its connections closed by close(), after the release), and a password held by a Redacted", () =>
        Effect.gen(function*() {
          const { nodes, servers } = yield* RedisFleet
          yield* Effect.promise(async () => {
            const overLayer = await PromiseApi.makeRedlock(Ioredis.layer(nodes), { restartQuarantine: false })
            const lock = await overLayer.acquire("layered", { ttl: 5_000 })
            await until(() => valueOn(servers[0], "redlock:layered"), lock.value)
            await overLayer.close()
            await until(() => valueOn(servers[0], "redlock:layered"), null)
            await Effect.runPromise(servers[0].call("CONFIG", "SET", "requirepass", "s3cret"))
            try {
              const withPassword = await PromiseApi.makeRedlock(
                [{ ...nodes[0], password: Redacted.make("s3cret") }, nodes[1], nodes[2]],
                { restartQuarantine: false }
              )
              const held = await withPassword.acquire("secret", { ttl: 5_000 })
              // The server that asks for the password holds the lock.
              await until(() => valueOn(servers[0], "redlock:secret"), held.value)
              assert.notInclude(JSON.stringify(held) + Util.inspect(held), "s3cret")
              await withPassword.close()
            } finally {
              await Effect.runPromise(servers[0].call("CONFIG", "SET", "requirepass", ""))
            }
          })
        }))
    }
  )

  describe("effect-redlock/Promise, in-memory nodes", () => {
    it("RedisNode.layerMemory: acquire, a refusal with Schedule.recurs(0) as the retry, inspect, release; a lock logs and serializes as plain data", async () => {
      const redlock = await PromiseApi.makeRedlock(RedisNode.layerMemory(3))
      const lock = await redlock.acquire("m", { ttl: 1_000 })
      assert.instanceOf(
        await refusal(redlock.acquire("m", { ttl: 1_000, retry: Schedule.recurs(0) })),
        RedlockError.LockNotAcquired
      )
      assert.strictEqual((await redlock.inspect("m")).holder, lock.value)
      const shown = Util.inspect(lock)
      assert.match(shown, /^PromiseLock \{/)
      assert.notInclude(shown, "settings")
      const data = JSON.parse(JSON.stringify(lock))
      assert.deepStrictEqual(Object.keys(data), [
        "resources",
        "value",
        "ttlMillis",
        "validityMillis",
        "remainingMillis",
        "attempts",
        "outcomes"
      ])
      assert.deepStrictEqual(data.resources, ["m"])
      assert.strictEqual((await redlock.release(lock)).status, "Released")
      await redlock.close()
    })
  })
}
