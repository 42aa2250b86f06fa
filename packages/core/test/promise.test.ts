/**
 * The promise API as core ships it (no Effect anywhere), over its in-memory
 * nodes on the live clock: what a plain Node program meets. The same API
 * over real servers is promise-redis.test.ts; what the Effect packages add
 * to it (their layers and Schedules) is the shared Effect suite
 * promiseHost.ts.
 */
import * as Util from "node:util"
import { assert, describe, it } from "vitest"
import {
  InvalidOptions,
  LockLost,
  LockNotAcquired,
  makeRedlock,
  ManagerClosed,
  memoryNodes,
  noRetry,
  retry
} from "../src/Promise.js"

const quiet = { warn: () => {} }
const rejection = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(() => assert.fail("resolved"), (error: unknown) => error)
const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

describe("the promise API over in-memory nodes", () => {
  it("a lock is refused to a second holder while held, granted once released; errors are plain, with their _tag", async () => {
    const redlock = await makeRedlock(memoryNodes(3), { logger: quiet })
    const lock = await redlock.acquire("orders:42", { ttl: 1_000 })
    const refused = await rejection(redlock.acquire("orders:42", { ttl: 1_000, retry: noRetry }))
    assert.instanceOf(refused, LockNotAcquired)
    assert.instanceOf(refused, Error)
    assert.strictEqual((refused as LockNotAcquired)._tag, "LockNotAcquired")
    assert.strictEqual((refused as LockNotAcquired).reason, "Held")
    assert.strictEqual((refused as LockNotAcquired).attempts, 1)
    assert.match((refused as Error).message, /^lock on orders:42 not acquired after 1 attempt/)
    assert.strictEqual((await redlock.release(lock)).status, "Released")
    assert.strictEqual((await redlock.release(lock)).status, "AlreadyReleased")
    const again = await redlock.acquire("orders:42", { ttl: 1_000, retry: noRetry })
    assert.notStrictEqual(again.value, lock.value)
    await redlock.close()
  })

  it("a waiter is granted the lock when its holder releases it, before its retries run out", async () => {
    const redlock = await makeRedlock(memoryNodes(3), { logger: quiet })
    const held = await redlock.acquire("queue", { ttl: 5_000 })
    const waiting = redlock.acquire("queue", { ttl: 5_000, retry: retry({ delay: 1_000, times: 5 }) })
    await sleep(20)
    const start = performance.now()
    await redlock.release(held)
    const granted = await waiting
    // Woken by the release, not by its next retry a second later.
    assert.isBelow(performance.now() - start, 500)
    assert.isAtLeast(granted.attempts, 2)
    await redlock.close()
  })

  it("using: the signal aborts with LockLost when the lock's validity runs out; the lock is released however the body ends", async () => {
    const redlock = await makeRedlock(memoryNodes(3), { logger: quiet })
    const reason = await redlock.using(
      "short",
      { ttl: 100 },
      (_lock, signal) =>
        new Promise((resolve) => signal.addEventListener("abort", () => resolve(signal.reason), { once: true }))
    )
    assert.instanceOf(reason, LockLost)
    assert.strictEqual((reason as LockLost).reason, "Expired")
    const failed = await rejection(redlock.using("thrown", { ttl: 1_000 }, async () => {
      throw new Error("the body's own")
    }))
    assert.strictEqual((failed as Error).message, "the body's own")
    assert.isNull((await redlock.inspect("thrown")).holder)
    // autoExtend keeps it held past its ttl.
    const extended = await redlock.using("long", { ttl: 100, autoExtend: true }, async (lock, signal) => {
      await sleep(250)
      return [signal.aborted, lock.remaining() > 0]
    })
    assert.deepStrictEqual(extended, [false, true])
    await redlock.close()
  })

  it("an aborted wait leaves its line and rejects with the signal's reason; close() ends the waiting with ManagerClosed", async () => {
    const redlock = await makeRedlock(memoryNodes(3), { logger: quiet })
    await redlock.acquire("busy", { ttl: 5_000 })
    const controller = new AbortController()
    const aborted = rejection(
      redlock.acquire("busy", { ttl: 5_000, retry: retry({ delay: 50, times: 100 }), signal: controller.signal })
    )
    await sleep(20)
    controller.abort(new Error("gave up"))
    assert.strictEqual(((await aborted) as Error).message, "gave up")
    const waiting = rejection(redlock.acquire("busy", { ttl: 5_000, retry: retry({ delay: 50, times: 100 }) }))
    await sleep(20)
    await redlock.close()
    assert.instanceOf(await waiting, ManagerClosed)
    assert.instanceOf(await rejection(redlock.acquire("after", { ttl: 1_000 })), ManagerClosed)
  })

  it("permits, read and write holds keep their limits", async () => {
    const redlock = await makeRedlock(memoryNodes(3), { logger: quiet })
    const permits = [
      await redlock.acquirePermit("pool", { limit: 2, ttl: 1_000 }),
      await redlock.acquirePermit("pool", { limit: 2, ttl: 1_000 })
    ]
    assert.instanceOf(
      await rejection(redlock.acquirePermit("pool", { limit: 2, ttl: 1_000, retry: noRetry })),
      LockNotAcquired
    )
    assert.strictEqual((await redlock.inspectPermits("pool", 2)).held, 2)
    await Promise.all(permits.map((permit) => redlock.release(permit)))
    const readers = [await redlock.acquireRead("doc", { ttl: 1_000 }), await redlock.acquireRead("doc", { ttl: 1_000 })]
    assert.instanceOf(await rejection(redlock.acquireWrite("doc", { ttl: 1_000, retry: noRetry })), LockNotAcquired)
    assert.strictEqual((await redlock.inspectReadWrite("doc")).readers, 2)
    await Promise.all(readers.map((reader) => redlock.release(reader)))
    const writer = await redlock.acquireWrite("doc", { ttl: 1_000 })
    assert.strictEqual((await redlock.inspectReadWrite("doc")).writer, writer.value)
    await redlock.close()
  })

  it("bad input is InvalidOptions before anything is sent; a lock logs and serializes as plain data", async () => {
    assert.instanceOf(await rejection(makeRedlock(memoryNodes(3), { driftFactor: 2 })), InvalidOptions)
    assert.instanceOf(await rejection(makeRedlock("localhost" as never)), InvalidOptions)
    assert.instanceOf(await rejection(makeRedlock(memoryNodes(1), { logger: "stderr" as never })), InvalidOptions)
    const redlock = await makeRedlock(memoryNodes(3), { logger: quiet })
    for (const options of [{ ttl: 0 }, { ttl: "soon" }, { ttl: 50_000 }, { ttl: 1_000, retry: { delay: 5 } }, null]) {
      const refused = await rejection(redlock.acquire("r", options as never))
      assert.instanceOf(refused, InvalidOptions, JSON.stringify(options))
    }
    assert.throws(() => retry({ delay: 10, times: -1 }), /retry\.times/)
    const lock = await redlock.acquire("shown", { ttl: "10 seconds" })
    assert.strictEqual(lock.ttlMillis, 10_000)
    const shown = Util.inspect(lock, { depth: 5 })
    assert.match(shown, /^PromiseLock \{/)
    assert.include(shown, `value: '${lock.value}'`)
    // What it is, not the manager's state behind it.
    for (const inside of ["held", "manager", "Duration", "clock", "runPromise", "validUntil"]) {
      assert.notInclude(shown, inside)
    }
    assert.deepStrictEqual(Object.keys(JSON.parse(JSON.stringify(lock))), [
      "resources",
      "value",
      "ttlMillis",
      "validityMillis",
      "remainingMillis",
      "attempts",
      "outcomes"
    ])
    await redlock.close()
  })
})
