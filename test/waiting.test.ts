/**
 * Waiting for a held lock: woken by the release announced on the nodes, polling
 * on the retry schedule when no announcement comes, fair handoff, and nothing
 * left watching once the wait ends.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option, Schedule, TestClock } from "effect"
import * as RedisFleet from "../fleet/RedisFleet.js"
import * as Lock from "../src/Lock.js"
import * as Redlock from "../src/Redlock.js"
import * as RedisNode from "../src/RedisNode.js"
import { memory, redis } from "./support.js"

const slowRetry = Schedule.spaced("10 seconds").pipe(Schedule.intersect(Schedule.recurs(5)))

const watchers = Effect.gen(function*() {
  const control = yield* RedisNode.MemoryNodes
  return yield* Effect.forEach([0, 1, 2], (i) => control.releaseWatchers(i))
})

describe("waking on release (memory nodes, TestClock)", () => {
  it.effect("a waiter takes the lock when the holder releases it, not at its next scheduled attempt", () =>
    Effect.gen(function*() {
      const holder = yield* Redlock.make()
      const waiter = yield* Redlock.make()
      const held = yield* holder.acquire("r", { ttl: "10 seconds" })
      const waiting = yield* Effect.fork(Effect.flatMap(waiter.acquire("r", { ttl: "10 seconds", retry: slowRetry }), (lock) =>
        Effect.map(Lock.monotonicMillis, (at) => ({ lock, at }))))
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual(yield* watchers, [1, 1, 1], "one watcher per node while waiting")
      yield* holder.release(held)
      const { at, lock } = yield* Fiber.join(waiting)
      assert.strictEqual(at, 100, "woken by the release at 100 ms, not at 10 s")
      assert.strictEqual(lock.attempts, 2)
      assert.deepStrictEqual(yield* watchers, [0, 0, 0], "no watcher left once it holds the lock")
    }).pipe(Effect.scoped, Effect.provide(memory(3))))

  it.effect("without a release (the holder's keys expire), the waiter polls on its schedule", () =>
    Effect.gen(function*() {
      const holder = yield* Redlock.make()
      const waiter = yield* Redlock.make()
      yield* holder.acquire("r", { ttl: "1 second" })
      const retry = Schedule.spaced("300 millis").pipe(Schedule.intersect(Schedule.recurs(10)))
      const waiting = yield* Effect.fork(Effect.zipRight(waiter.acquire("r", { ttl: "1 second", retry }), Lock.monotonicMillis))
      for (let i = 0; i < 13; i++) yield* TestClock.adjust("100 millis")
      assert.strictEqual(yield* Fiber.join(waiting), 1200, "the first poll after the expiry at 1 s")
    }).pipe(Effect.scoped, Effect.provide(memory(3))))

  it.effect("an interrupted waiter leaves no watcher behind", () =>
    Effect.gen(function*() {
      const holder = yield* Redlock.make()
      yield* holder.acquire("r", { ttl: "10 seconds" })
      const waiting = yield* Effect.fork(Redlock.acquire("r", { ttl: "10 seconds", retry: slowRetry }))
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual(yield* watchers, [1, 1, 1])
      yield* Fiber.interrupt(waiting)
      assert.deepStrictEqual(yield* watchers, [0, 0, 0])
    }).pipe(Effect.scoped, Effect.provide(memory(3))))

  it.effect("fair handoff: the releaser holds back before taking the resource again; greedy does not", () =>
    Effect.gen(function*() {
      const taken: Array<number> = []
      for (const fairHandoff of [true, false]) {
        const redlock = yield* Redlock.make({ fairHandoff })
        const first = yield* redlock.acquire(`r-${fairHandoff}`, { ttl: "10 seconds" })
        yield* redlock.release(first)
        const started = yield* Lock.monotonicMillis
        const again = yield* Effect.fork(Effect.zipRight(redlock.acquire(`r-${fairHandoff}`, { ttl: "10 seconds" }), Lock.monotonicMillis))
        yield* TestClock.adjust("1 millis")
        taken.push((yield* Fiber.join(again)) - started)
      }
      // The release took 0 ms on the TestClock: the pause is 2 x 0 + 1 ms.
      assert.deepStrictEqual(taken, [1, 0])
    }).pipe(Effect.scoped, Effect.provide(memory(3))))

  it.effect("fair handoff: a waiter woken by the release gets the lock; the releaser waits its turn", () =>
    Effect.gen(function*() {
      const releaser = yield* Redlock.make()
      const waiter = yield* Redlock.make()
      const first = yield* releaser.acquire("r", { ttl: "10 seconds" })
      const waiting = yield* Effect.fork(waiter.acquire("r", { ttl: "10 seconds", retry: slowRetry }))
      yield* TestClock.adjust("100 millis")
      yield* releaser.release(first)
      const again = yield* Effect.fork(releaser.acquire("r", { ttl: "10 seconds", retry: slowRetry }))
      yield* TestClock.adjust("1 millis")
      assert.isTrue(Option.isSome(yield* Fiber.poll(waiting)), "the waiter holds it")
      assert.isTrue(Option.isNone(yield* Fiber.poll(again)), "the releaser waits")
      yield* Fiber.interrupt(again)
    }).pipe(Effect.scoped, Effect.provide(memory(3))))
})

layer(RedisFleet.layerLocal(3), { timeout: 60_000, excludeTestServices: true })("waking on release (redis-servers)", (it) => {
  it.scoped("a waiter is woken by the release's announcement, and unsubscribes when done", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      const manager = () => Effect.map(Layer.build(redis(fleet.nodes)), (context) => Context.get(context, Redlock.Redlock))
      const holder = yield* manager()
      const waiter = yield* manager()
      const held = yield* holder.acquire("r", { ttl: "10 seconds" })
      const waiting = yield* Effect.fork(Effect.zipRight(
        waiter.acquire("r", { ttl: "10 seconds", retry: slowRetry }),
        Effect.sync(() => performance.now())
      ))
      yield* Effect.sleep("300 millis")
      const subscribed = yield* fleet.servers[0].call("PUBSUB", "NUMSUB", "redlock-released:redlock:r")
      assert.deepStrictEqual(subscribed, ["redlock-released:redlock:r", 1], "one subscriber connection per node")
      const released = performance.now()
      yield* holder.release(held)
      const acquired = yield* Fiber.join(waiting)
      assert.isBelow(acquired - released, 1000, `woken ${Math.round(acquired - released)} ms after the release (next poll: 10 s)`)
      const after = yield* fleet.servers[0].call("PUBSUB", "NUMSUB", "redlock-released:redlock:r").pipe(
        Effect.filterOrFail((reply) => (reply as Array<unknown>)[1] === 0, () => "still subscribed"),
        Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("2 seconds")))
      )
      assert.deepStrictEqual(after, ["redlock-released:redlock:r", 0])
    }))
})
