/**
 * Semaphores and read-write locks: memory nodes on the TestClock, and real
 * redis-servers under load.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as TestClock from "effect/testing/TestClock"
import { ReadWriteLock, RedisNode, Redlock, Semaphore } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import { layerLocal, RedisFleet } from "./fleet.js"

const memory = (n: number) => Redlock.layer().pipe(Layer.provideMerge(RedisNode.layerMemory(n)))
const forever = Schedule.spaced("5 seconds")
/** Run as another client would: in a fiber of its own, whose read-write holds are not this fiber's. */
const elsewhere = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.flatMap(Effect.forkChild(effect), Fiber.join)

describe("Semaphore (memory nodes, TestClock)", () => {
  it.effect("limit permits at once; the next is refused naming the resource, and woken by a release", () =>
    Effect.gen(function*() {
      const redlock = yield* Redlock.Redlock
      const first = yield* redlock.acquirePermit("pool", { limit: 2, ttl: "10 seconds" })
      yield* Semaphore.acquire("pool", { limit: 2, ttl: "10 seconds" })
      assert.strictEqual((yield* Semaphore.inspect("pool", 2)).held, 2)
      const refused = yield* Effect.flip(Effect.scoped(Semaphore.acquire("pool", { limit: 2, ttl: "10 seconds", retry: Redlock.noRetry })))
      assert.strictEqual(refused._tag, "LockNotAcquired")
      if (refused._tag === "LockNotAcquired") {
        assert.deepStrictEqual(refused.resources, ["pool"])
        assert.strictEqual(refused.reason, "Held")
        assert.strictEqual(refused.attempts, 1, "one round tries every slot")
      }
      const waiting = yield* Effect.forkChild(Effect.scoped(Semaphore.acquire("pool", { limit: 2, ttl: "10 seconds", retry: forever })))
      yield* TestClock.adjust("100 millis")
      assert.isUndefined(waiting.pollUnsafe(), "waits while both permits are held")
      yield* redlock.release(first)
      yield* TestClock.adjust("10 millis")
      const exit = waiting.pollUnsafe()
      assert.isTrue(exit !== undefined && Exit.isSuccess(exit), "woken by the release, long before its 5 s retry")
    }).pipe(Effect.scoped, Effect.provide(memory(3))))

  it.effect("waiters are woken when a crashed holder's keys run out, not at their schedule's next round", () =>
    Effect.gen(function*() {
      const tenSeconds = Schedule.spaced("10 seconds")
      // Holders that never release (crashed): a permit and a writer, each running out at 2 s.
      yield* Semaphore.acquire("pool", { limit: 1, ttl: "2 seconds" })
      yield* elsewhere(ReadWriteLock.acquireWrite("doc", { ttl: "2 seconds" }))
      const permit = yield* Effect.forkChild(Effect.scoped(Semaphore.acquire("pool", { limit: 1, ttl: "10 seconds", retry: tenSeconds })))
      const reader = yield* Effect.forkChild(Effect.scoped(ReadWriteLock.acquireRead("doc", { ttl: "10 seconds", retry: tenSeconds })))
      yield* TestClock.adjust("1990 millis")
      assert.isUndefined(permit.pollUnsafe(), "the permit is held")
      assert.isUndefined(reader.pollUnsafe(), "the writer holds")
      yield* TestClock.adjust("20 millis")
      for (const waiter of [permit, reader]) {
        const exit = waiter.pollUnsafe()
        assert.isTrue(exit !== undefined && Exit.isSuccess(exit), "woken as the holder's keys ran out")
      }
    }).pipe(Effect.scoped, Effect.provide(memory(3))))

  it.effect("a limit out of range is InvalidOptions, and nothing is sent", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      for (const limit of [0, 65, 1.5]) {
        const invalid = yield* Effect.flip(Effect.scoped(Semaphore.acquire("pool", { limit, ttl: "1 second" })))
        assert.strictEqual(invalid._tag === "InvalidOptions" ? invalid.option : invalid._tag, "limit")
      }
      assert.strictEqual(yield* control.operations(0), 0)
    }).pipe(Effect.provide(memory(3))))

  it.effect("withPermit holds a permit while its body runs, and gives it back", () =>
    Effect.gen(function*() {
      const inside = yield* Semaphore.withPermit("pool", { limit: 3, ttl: "10 seconds" })(Semaphore.inspect("pool", 3))
      assert.strictEqual(inside.held, 1)
      assert.strictEqual((yield* Semaphore.inspect("pool", 3)).held, 0)
    }).pipe(Effect.provide(memory(3))))
})

describe("ReadWriteLock (memory nodes, TestClock)", () => {
  it.effect("readers hold together; a writer waits for them and is then alone; a reader behind the writer waits", () =>
    Effect.gen(function*() {
      const redlock = yield* Redlock.Redlock
      const options = { ttl: "10 seconds", maxReaders: 4, retry: forever } as const
      const readerA = yield* elsewhere(redlock.acquireRead("cache", options))
      const readerB = yield* elsewhere(redlock.acquireRead("cache", options))
      assert.strictEqual((yield* ReadWriteLock.inspect("cache", 4)).readers, 2)
      const writing = yield* Effect.forkChild(Effect.scoped(Effect.gen(function*() {
        const writer = yield* redlock.acquireWrite("cache", options)
        const seen = yield* ReadWriteLock.inspect("cache", 4)
        return [writer.value, seen] as const
      })))
      yield* TestClock.adjust("100 millis")
      assert.isUndefined(writing.pollUnsafe(), "the writer waits for the readers")
      const lateReader = yield* Effect.forkChild(Effect.scoped(ReadWriteLock.acquireRead("cache", options)))
      yield* TestClock.adjust("100 millis")
      assert.isUndefined(lateReader.pollUnsafe(), "a reader that comes after a waiting writer waits behind it")
      yield* redlock.release(readerA)
      yield* redlock.release(readerB)
      yield* TestClock.adjust("100 millis")
      const [value, seen] = yield* Fiber.join(writing)
      assert.deepStrictEqual(seen.writer, Option.some(value))
      assert.strictEqual(seen.readers, 0)
      yield* TestClock.adjust("100 millis")
      assert.isTrue(Exit.isSuccess((yield* Fiber.await(lateReader))), "the late reader gets in after the writer")
    }).pipe(Effect.scoped, Effect.provide(memory(3))))

  it.effect("maxReaders out of range is InvalidOptions naming maxReaders", () =>
    Effect.gen(function*() {
      const invalid = yield* Effect.flip(Effect.scoped(ReadWriteLock.acquireWrite("cache", { ttl: "1 second", maxReaders: 0 })))
      assert.strictEqual(invalid._tag === "InvalidOptions" ? invalid.option : invalid._tag, "maxReaders")
    }).pipe(Effect.provide(memory(3))))
})

it.live("on 3 redis-servers: never more than limit holders of a semaphore, and a writer never beside anyone", () =>
  Effect.gen(function*() {
    const fleet = yield* RedisFleet
    yield* Effect.provide(
      Effect.gen(function*() {
        let permits = 0
        let mostPermits = 0
        let readers = 0
        let writers = 0
        let overlaps = 0
        const permitWorker = Effect.gen(function*() {
          for (let i = 0; i < 8; i++) {
            yield* Effect.gen(function*() {
              permits++
              mostPermits = Math.max(mostPermits, permits)
              yield* Effect.sleep("2 millis")
              permits--
            }).pipe(Semaphore.withPermit("pool", { limit: 2, ttl: "5 seconds", retry: Schedule.spaced("5 millis") }))
          }
        })
        const reader = ReadWriteLock.withRead("doc", { ttl: "5 seconds", maxReaders: 4, retry: Schedule.spaced("5 millis") })(
          Effect.gen(function*() {
            readers++
            if (writers > 0) overlaps++
            yield* Effect.sleep("2 millis")
            readers--
          })
        )
        const writer = ReadWriteLock.withWrite("doc", { ttl: "5 seconds", maxReaders: 4, retry: Schedule.spaced("5 millis") })(
          Effect.gen(function*() {
            writers++
            if (readers > 0 || writers > 1) overlaps++
            yield* Effect.sleep("2 millis")
            writers--
          })
        )
        const readWorker = (writes: boolean) => Effect.gen(function*() {
          for (let i = 0; i < 6; i++) yield* (writes && i % 2 === 0 ? writer : reader)
        })
        yield* Effect.all([
          permitWorker,
          permitWorker,
          permitWorker,
          permitWorker,
          readWorker(false),
          readWorker(false),
          readWorker(true)
        ], { concurrency: "unbounded" })
        assert.strictEqual(mostPermits, 2)
        assert.strictEqual(overlaps, 0)
      }),
      Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(Ioredis.layer(fleet.nodes)))
    )
  }).pipe(Effect.provide(layerLocal(3))))
