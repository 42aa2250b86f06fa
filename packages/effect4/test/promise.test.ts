/**
 * The promise API from the Effect 4 package (`effect-redlock/Promise`):
 * core's plain manager, and what this package adds to it (its layers of
 * nodes, `Redacted` passwords, its Schedules), on real redis-servers and
 * in-memory nodes.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import { RedisNode, Redlock, RedlockError } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import { LockNotAcquired, makeRedlock, noRetry, retry } from "effect-redlock/Promise"
import * as Util from "node:util"
import { layerLocal, RedisFleet } from "./fleet.js"

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))
/** What `read` gives once it gives `wanted`, or after 2 s whatever it gives then. */
const eventually = async <A>(read: () => Promise<A>, wanted: A): Promise<A> => {
  const deadline = Date.now() + 2_000
  let value = await read()
  while (value !== wanted && Date.now() < deadline) {
    await sleep(20)
    value = await read()
  }
  return value
}

const refusal = (promise: Promise<unknown>): Promise<unknown> => promise.then(() => assert.fail("granted"), (error: unknown) => error)

describe("effect-redlock/Promise on Effect 4, 3 redis-servers", () => {
  it.effect("connection options: a lock is set on every server, refused to a second holder, released", () =>
    Effect.gen(function*() {
      const { nodes, servers } = yield* RedisFleet
      yield* Effect.promise(async () => {
        const redlock = await makeRedlock(nodes, { restartQuarantine: false })
        const other = await makeRedlock(nodes, { restartQuarantine: false })
        const lock = await redlock.acquire("orders:42", { ttl: 10_000 })
        // Granted at quorum: the last server's write may land just after.
        for (const server of servers) assert.strictEqual(await eventually(() => server.admin.get("redlock:orders:42"), lock.value), lock.value)
        const refused = await refusal(other.acquire("orders:42", { ttl: 10_000, retry: noRetry }))
        // Core's error, recognised by this package's class of the same name.
        assert.instanceOf(refused, LockNotAcquired)
        assert.instanceOf(refused, RedlockError.LockNotAcquired)
        assert.strictEqual((refused as LockNotAcquired).reason, "Held")
        assert.strictEqual((await redlock.release(lock)).status, "Released")
        // Released at quorum: the last server's delete may land just after.
        for (const server of servers) assert.isNull(await eventually(() => server.admin.get("redlock:orders:42"), null))
        await Promise.all([redlock.close(), other.close()])
      })
    }).pipe(Effect.provide(layerLocal(3))))

  it.effect("this package's retry Schedules: Redlock.noRetry and Redlock.retry by their plain steps, a hand-built one as an effect", () =>
    Effect.gen(function*() {
      const { nodes } = yield* RedisFleet
      yield* Effect.promise(async () => {
        const redlock = await makeRedlock(nodes, { restartQuarantine: false })
        const lock = await redlock.acquire("reports", { ttl: 10_000 })
        const once = (await refusal(redlock.acquire("reports", { ttl: 10_000, retry: Redlock.noRetry }))) as LockNotAcquired
        assert.strictEqual(once.attempts, 1)
        const plain = (await refusal(
          redlock.acquire("reports", { ttl: 10_000, retry: Redlock.retry({ delay: 5, times: 3 }) })
        )) as LockNotAcquired
        assert.isAtLeast(plain.attempts, 4)
        const handBuilt = Schedule.max([Schedule.spaced("5 millis"), Schedule.recurs(2)])
        const stepped = (await refusal(redlock.acquire("reports", { ttl: 10_000, retry: handBuilt }))) as LockNotAcquired
        assert.isAtLeast(stepped.attempts, 3)
        await redlock.release(lock)
        // A Schedule released in time is waited for.
        const held = await redlock.acquire("reports", { ttl: 10_000 })
        setTimeout(() => void redlock.release(held), 50)
        const next = await redlock.acquire("reports", { ttl: 10_000, retry: retry({ delay: 20, times: 50 }) })
        assert.isAbove(next.attempts, 1)
        await redlock.close()
      })
    }).pipe(Effect.provide(layerLocal(3))))

  it.effect("a layer of this package's nodes, and a password held by a Redacted", () =>
    Effect.gen(function*() {
      const { nodes, servers } = yield* RedisFleet
      yield* Effect.promise(async () => {
        const overLayer = await makeRedlock(Ioredis.layer(nodes), { restartQuarantine: false })
        const lock = await overLayer.acquire("layered", { ttl: 5_000 })
        assert.strictEqual(await eventually(() => servers[0].admin.get("redlock:layered"), lock.value), lock.value)
        await overLayer.close()
        // The layer's connections went with close(): the key was released first.
        assert.isNull(await eventually(() => servers[0].admin.get("redlock:layered"), null))
        await servers[0].admin.config("SET", "requirepass", "s3cret")
        try {
          const withPassword = await makeRedlock(
            [{ ...nodes[0], password: Redacted.make("s3cret") }, nodes[1], nodes[2]],
            { restartQuarantine: false }
          )
          const held = await withPassword.acquire("secret", { ttl: 5_000 })
          // The server that asks for the password holds the lock (its answer may have come after the quorum's).
          assert.strictEqual(await eventually(() => servers[0].admin.get("redlock:secret"), held.value), held.value)
          assert.notInclude(JSON.stringify(held) + Util.inspect(held), "s3cret")
          await withPassword.close()
        } finally {
          await servers[0].admin.config("SET", "requirepass", "")
        }
      })
    }).pipe(Effect.provide(layerLocal(3))))
})

describe("effect-redlock/Promise on Effect 4, in-memory nodes", () => {
  it("RedisNode.layerMemory: a lock logs and serializes as plain data", async () => {
    const redlock = await makeRedlock(RedisNode.layerMemory(3))
    const lock = await redlock.acquire("m", { ttl: 1_000 })
    const shown = Util.inspect(lock)
    assert.match(shown, /^PromiseLock \{/)
    assert.notInclude(shown, "settings")
    const data = JSON.parse(JSON.stringify(lock))
    assert.deepStrictEqual(Object.keys(data), ["resources", "value", "ttlMillis", "validityMillis", "remainingMillis", "attempts", "outcomes"])
    assert.deepStrictEqual(data.resources, ["m"])
    assert.strictEqual((await redlock.release(lock)).status, "Released")
    await redlock.close()
  })
})
