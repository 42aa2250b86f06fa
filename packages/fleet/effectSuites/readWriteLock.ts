/**
 * The read-write lock: readers together, a writer alone, on in-memory nodes
 * (TestClock) and on 5 real redis-servers; a waiting writer is not starved
 * by readers that keep coming; bad input.
 *
 * One suite, run by both Effect lines (each package's test/readWriteLock.test.ts).
 */
import {
  assert,
  atMost,
  describe,
  Effect,
  Exit,
  Fiber,
  fork,
  inScope,
  it,
  layer,
  layerFleet,
  Option,
  poll,
  ReadWriteLock,
  RedisFleet,
  Redlock,
  Schedule,
  Scope,
  TestClock
} from "@effect-redlock/line"
import { expectEmpty, invalidOf, memory, redis, refusalOf } from "./support.js"

/**
 * A hold in a scope of its own, closed by the caller, taken as another
 * client would: in a fiber of its own, so that this fiber does not hold it
 * (a fiber's own read-write holds make it refuse what would wait for them).
 */
const hold = (acquire: Effect.Effect<unknown, unknown, Redlock.Redlock | Scope.Scope>) =>
  Effect.flatMap(
    fork(Effect.gen(function*() {
      const scope = yield* Scope.make()
      yield* inScope(scope)(acquire)
      return Scope.close(scope, Exit.void)
    })),
    Fiber.join
  )

const once: ReadWriteLock.ReadWriteOptions = { ttl: "10 seconds", maxReaders: 3, retry: Redlock.noRetry }

const exitOf = (acquire: Effect.Effect<unknown, unknown, Redlock.Redlock | Scope.Scope>) =>
  Effect.exit(Effect.scoped(acquire))

export const readWriteLockSuite = () => {
  describe("read-write lock on in-memory nodes", () => {
    it.effect("readers hold together up to maxReaders; a writer waits for all of them; readers wait for the writer", () =>
      Effect.gen(function*() {
        const readers = [
          yield* hold(ReadWriteLock.acquireRead("cache", once)),
          yield* hold(ReadWriteLock.acquireRead("cache", once)),
          yield* hold(ReadWriteLock.acquireRead("cache", once))
        ]
        refusalOf(yield* exitOf(ReadWriteLock.acquireRead("cache", once)))
        const read = yield* ReadWriteLock.inspect("cache", 3)
        assert.strictEqual(read.readers, 3)
        assert.isTrue(Option.isNone(read.writer))
        const writerRefused = refusalOf(yield* exitOf(ReadWriteLock.acquireWrite("cache", once)))
        assert.deepStrictEqual(writerRefused.resources, ["cache"])
        yield* readers[0]
        yield* readers[1]
        refusalOf(yield* exitOf(ReadWriteLock.acquireWrite("cache", once)))
        yield* readers[2]

        assert.strictEqual((yield* ReadWriteLock.inspect("cache", 3)).readers, 0)
        const writer = yield* hold(ReadWriteLock.acquireWrite("cache", once))
        const written = yield* ReadWriteLock.inspect("cache", 3)
        assert.strictEqual(written.readers, 0)
        assert.isTrue(Option.isSome(written.writer))
        refusalOf(yield* exitOf(ReadWriteLock.acquireRead("cache", once)))
        refusalOf(yield* exitOf(ReadWriteLock.acquireWrite("cache", once)))
        // A plain lock, and a semaphore, on the same name are other resources.
        yield* Effect.scoped(Redlock.acquire("cache", { ttl: "1 second", retry: Redlock.noRetry }))
        yield* writer
        yield* Effect.scoped(ReadWriteLock.acquireRead("cache", once))
      }).pipe(Effect.provide(memory(3))))

    it.effect("a reader waiting for a crashed writer is woken when the writer's keys run out, not at its schedule's next round", () =>
      Effect.gen(function*() {
        // A writer that never releases (crashed).
        yield* hold(ReadWriteLock.acquireWrite("cache", { ...once, ttl: "2 seconds" }))
        const reader = yield* fork(
          hold(ReadWriteLock.acquireRead("cache", { ...once, retry: Schedule.spaced("10 seconds") }))
        )
        yield* TestClock.adjust("1990 millis")
        assert.isUndefined(yield* poll(reader), "the writer holds")
        yield* TestClock.adjust("20 millis")
        assert.isDefined(yield* poll(reader), "woken as the writer's keys ran out")
      }).pipe(Effect.provide(memory(3))))

    it.effect("a waiting writer is not starved: readers that ask after it wait behind it", () =>
      Effect.gen(function*() {
        const options: ReadWriteLock.ReadWriteOptions = {
          ttl: "10 seconds",
          maxReaders: 2,
          retry: Schedule.spaced("20 millis").pipe(atMost(100))
        }
        const first = yield* hold(ReadWriteLock.acquireRead("doc", options))
        const writer = yield* fork(hold(ReadWriteLock.acquireWrite("doc", options)))
        yield* TestClock.adjust("10 millis")
        // A reader arriving now finds a free slot, but the writer asked first: it waits.
        const late = yield* fork(hold(ReadWriteLock.acquireRead("doc", options)))
        yield* TestClock.adjust("50 millis")
        assert.isUndefined(yield* poll(late), "the later reader waits behind the writer")
        assert.isUndefined(yield* poll(writer), "the writer waits for the first reader")
        yield* first
        yield* TestClock.adjust("50 millis")
        const releaseWriter = yield* Fiber.join(writer)
        assert.isUndefined(yield* poll(late), "the later reader still waits, for the writer's release")
        yield* releaseWriter
        yield* TestClock.adjust("50 millis")
        yield* yield* Fiber.join(late)
      }).pipe(Effect.provide(memory(3))))

    it.effect("bad input fails with InvalidOptions naming the option", () =>
      Effect.gen(function*() {
        for (const maxReaders of [0, 65, 2.5]) {
          for (const acquire of [ReadWriteLock.acquireRead, ReadWriteLock.acquireWrite]) {
            assert.strictEqual(
              invalidOf(yield* exitOf(acquire("r", { ttl: "1 second", maxReaders }))).option,
              "maxReaders"
            )
          }
        }
        const resource = invalidOf(yield* exitOf(ReadWriteLock.acquireWrite("a\u0000b", { ttl: "1 second" })))
        assert.strictEqual(resource.option, "resource")
        const ttl = invalidOf(yield* exitOf(ReadWriteLock.acquireWrite("r", { ttl: "0 millis" })))
        assert.strictEqual(ttl.option, "ttl")
        const missing = invalidOf(yield* exitOf(ReadWriteLock.acquireRead("r", undefined as never)))
        assert.strictEqual(missing.option, "options")
      }).pipe(Effect.provide(memory(3))))
  })

  layer(layerFleet(5), { timeout: 60_000, excludeTestServices: true })("read-write lock on 5 redis-servers", (it) => {
    it.effect("readers and writers in a mix: a writer is always alone, readers share, and everyone gets through", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        let readers = 0
        let writers = 0
        let mostReaders = 0
        const problems: Array<string> = []
        const done = { read: 0, write: 0 }
        const options: ReadWriteLock.ReadWriteOptions = {
          ttl: "5 seconds",
          maxReaders: 4,
          retry: Schedule.spaced("5 millis").pipe(Schedule.jittered, atMost(2000))
        }
        const read = Effect.gen(function*() {
          readers++
          mostReaders = Math.max(mostReaders, readers)
          if (writers > 0) problems.push("a reader entered while a writer held")
          yield* Effect.sleep("10 millis")
          readers--
          done.read++
        }).pipe(ReadWriteLock.withRead("shared-doc", options))
        const write = Effect.gen(function*() {
          writers++
          if (writers > 1 || readers > 0) {
            problems.push(`a writer entered with ${writers - 1} writers and ${readers} readers`)
          }
          yield* Effect.sleep("10 millis")
          writers--
          done.write++
        }).pipe(ReadWriteLock.withWrite("shared-doc", options))
        yield* Effect.all(
          [
            ...Array.from({ length: 6 }, () => Effect.repeat(read, { times: 9 })),
            ...Array.from({ length: 2 }, () => Effect.repeat(write, { times: 4 }))
          ],
          { concurrency: "unbounded" }
        ).pipe(Effect.provide(redis(fleet.nodes)))
        assert.deepStrictEqual(problems, [])
        assert.deepStrictEqual(done, { read: 60, write: 10 })
        assert.isAtLeast(mostReaders, 2, "readers did share")
        assert.isAtMost(mostReaders, 4)
        yield* expectEmpty(fleet)
      }).pipe(Effect.scoped))
  })
}
