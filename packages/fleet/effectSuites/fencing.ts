/**
 * Fencing tokens: strictly increasing across holders of a resource while a
 * majority of nodes keeps its data, and stale writes refused by the storage.
 * Tokens under random contention and faults: each line's test/simulation.test.ts.
 *
 * One suite, run by both Effect lines (each package's test/fencing.test.ts).
 */
import {
  assert,
  describe,
  Effect,
  Fenced,
  Fiber,
  fork,
  it,
  layer,
  layerFleet,
  RedisFleet,
  RedisNode,
  Redlock,
  RedlockError,
  Schedule,
  TestClock
} from "@effect-redlock/line"
import { Redis } from "ioredis"
import { failureOfType, invalidOf, lossOf, memory, redisManager } from "./support.js"

export const fencingSuite = () => {
  describe("fencing tokens on memory nodes", () => {
    it.effect("each holder's token is greater than the previous holder's, and is issued once per lock", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const tokens: Array<bigint> = []
        for (let i = 0; i < 5; i++) {
          yield* Effect.scoped(Effect.gen(function*() {
            const lock = yield* Redlock.acquire("r", { ttl: "1 second" })
            const token = yield* lock.fencingToken
            const operations = yield* control.operations(0)
            assert.strictEqual(yield* lock.fencingToken, token, "the same token on the second ask")
            assert.strictEqual(yield* control.operations(0), operations, "without asking the nodes again")
            tokens.push(token)
          }))
          if (i === 2) yield* control.setDown(i % 3, true) // a minority down does not stop tokens
        }
        assert.deepStrictEqual(tokens, [1n, 2n, 3n, 4n, 5n])
        yield* control.setDown(2, false)
        // Takes the same resource again at once: no fair-handoff pause (it would wait on the TestClock).
      }).pipe(Effect.provide(memory(3, { fairHandoff: false }))))

    it.effect("a counter ahead on one node is caught up by the commit round", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* control.putString(0, "redlock-fence:r", "41")
        const first = yield* Effect.scoped(
          Effect.flatMap(Redlock.acquire("r", { ttl: "1 second" }), (l) => l.fencingToken)
        )
        assert.strictEqual(first, 42n)
        // Node 0, which knew of 42, is now down: the other two were raised to 42 by the commit.
        yield* control.setDown(0, true)
        const fiber = yield* fork(
          Effect.scoped(
            Effect.flatMap(Redlock.acquire("r", { ttl: "1 second", nodeTimeout: "10 millis" }), (l) => l.fencingToken)
          )
        )
        yield* TestClock.adjust("10 millis")
        yield* TestClock.adjust("10 millis")
        yield* TestClock.adjust("10 millis")
        yield* TestClock.adjust("10 millis")
        assert.strictEqual(yield* Fiber.join(fiber), 43n)
        yield* control.setDown(0, false)
      }).pipe(Effect.provide(memory(3))))

    it.effect("a lost lock gets no token", () =>
      Effect.gen(function*() {
        const lock = yield* Redlock.acquire("r", { ttl: "1 second" })
        yield* TestClock.adjust("1 second")
        yield* lock.lost
        lossOf(yield* Effect.exit(lock.fencingToken))
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("a token already issued is not handed out again once the lock is released or has run out", () =>
      Effect.gen(function*() {
        const released = yield* Redlock.acquire("r", { ttl: "1 second" })
        assert.strictEqual(yield* released.fencingToken, 1n)
        yield* Redlock.release(released)
        const afterRelease = lossOf(yield* Effect.exit(released.fencingToken))
        assert.strictEqual(afterRelease.reason, "Released")
        const expired = yield* Redlock.acquire("s", { ttl: "1 second" })
        assert.strictEqual(yield* expired.fencingToken, 1n)
        yield* TestClock.adjust("1 second")
        const afterDeadline = lossOf(yield* Effect.exit(expired.fencingToken))
        assert.strictEqual(afterDeadline.reason, "Expired")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("several resources get one token each", () =>
      Effect.gen(function*() {
        yield* Effect.scoped(Effect.flatMap(Redlock.acquire("a", { ttl: "1 second" }), (l) => l.fencingToken))
        const lock = yield* Redlock.acquire(["a", "b"], { ttl: "1 second" })
        assert.deepStrictEqual(yield* lock.fencingTokens, [2n, 1n])
      }).pipe(Effect.scoped, Effect.provide(memory(3))))
  })

  layer(layerFleet(5, { persistence: true }), { timeout: 60_000, excludeTestServices: true })(
    "fencing tokens on 5 redis-servers",
    (it) => {
      it.effect("a holder paused past its validity: its late write is refused by the fenced storage", () =>
        Effect.gen(function*() {
          const fleet = yield* RedisFleet
          yield* fleet.reset
          const first = yield* redisManager(fleet.nodes)
          const second = yield* redisManager(fleet.nodes)
          const storage = new Redis({ host: "127.0.0.1", port: fleet.servers[0].port })
          yield* Effect.addFinalizer(() => Effect.sync(() => storage.disconnect()))

          // These servers fsync every write (AOF always): on a busy machine the default 10 ms per-node timeout is too short.
          const stale = yield* first.acquire("report", { ttl: "200 millis", nodeTimeout: "100 millis" })
          const staleToken = yield* stale.fencingToken
          yield* Effect.sleep("300 millis") // the first holder is "paused" past its validity
          const current = yield* second.acquire("report", { ttl: "10 seconds" })
          const currentToken = yield* current.fencingToken
          assert.isTrue(currentToken > staleToken)
          yield* Fenced.set(storage, { key: "report:data", value: "first write", token: currentToken })
          // The same holder writes again with its token: accepted.
          yield* Fenced.set(storage, { key: "report:data", value: "from the current holder", token: currentToken })

          const late = yield* Effect.exit(
            Fenced.set(storage, { key: "report:data", value: "stale", token: staleToken })
          )
          const refused = failureOfType(late, RedlockError.StaleFencingToken)
          assert.strictEqual(refused.highestSeen, currentToken)
          assert.strictEqual(yield* Effect.promise(() => storage.get("report:data")), "from the current holder")
        }).pipe(Effect.scoped))

      it.effect("tokens keep increasing across nodes killed and restarted with their data (AOF)", () =>
        Effect.gen(function*() {
          const fleet = yield* RedisFleet
          yield* fleet.reset
          const redlock = yield* redisManager(fleet.nodes)
          const take = Effect.scoped(
            Effect.flatMap(redlock.acquire("job", { ttl: "5 seconds" }), (lock) => lock.fencingToken)
          )
            .pipe(Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 50 }))
          const tokens: Array<bigint> = [yield* take, yield* take]
          // Kill three of five (SIGKILL) and start them again: the counters survive on disk.
          for (const index of [0, 1, 2]) yield* fleet.servers[index].kill
          for (const index of [0, 1, 2]) yield* fleet.servers[index].start
          tokens.push(yield* take, yield* take)
          yield* fleet.servers[3].kill
          tokens.push(yield* take)
          yield* fleet.servers[3].start
          for (let i = 1; i < tokens.length; i++) assert.isTrue(tokens[i] > tokens[i - 1], tokens.join(", "))
        }).pipe(Effect.scoped))
    }
  )

  describe("fencing option", () => {
    it.effect("a fence prefix that overlaps the key prefix is refused", () =>
      Effect.gen(function*() {
        const error = invalidOf(yield* Effect.exit(Redlock.make({ keyPrefix: "locks:", fencePrefix: "locks:fence:" })))
        assert.strictEqual(error.option, "fencePrefix")
      }).pipe(Effect.provide(RedisNode.layerMemory(1))))
  })
}
