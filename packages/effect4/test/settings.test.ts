/**
 * A semaphore's `limit` and a read-write lock's `maxReaders` are recorded on
 * the nodes (issue 32): a client with another value is refused with
 * SettingConflict, decided by a quorum of nodes, and a new value takes
 * effect once the resource is idle. Before, a writer with a smaller
 * `maxReaders` was granted beside a reader, and clients with a larger
 * `limit` took slots beyond the others'.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/testing/TestClock"
import { ReadWriteLock, RedisNode, Redlock, RedlockError, Semaphore } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import { expectEmpty, layerLocal, RedisFleet } from "./fleet.js"

const memory = (n: number) => Redlock.layer().pipe(Layer.provideMerge(RedisNode.layerMemory(n)))
const once = { ttl: "10 seconds", retry: Redlock.noRetry } as const

/** A hold in a scope of its own: its slot, and the scope's close. */
type Acquire = Effect.Effect<{ readonly resources: ReadonlyArray<string> }, RedlockError.RedlockError, Redlock.Redlock | Scope.Scope>

const hold = (acquire: Acquire) =>
  // In a fiber of its own, as another client's: this fiber does not hold it.
  Effect.flatMap(
    Effect.forkChild(Effect.gen(function*() {
      const scope = yield* Scope.make()
      const lock = yield* Scope.provide(acquire, scope)
      return { slot: lock.resources[0], release: Scope.close(scope, Exit.void) }
    })),
    Fiber.join
  )

const conflictOf = (acquire: Acquire) =>
  Effect.map(Effect.flip(Effect.scoped(acquire)), (error) => {
    assert.instanceOf(error, RedlockError.SettingConflict)
    return error as unknown as RedlockError.SettingConflict
  })

/** A reader that holds read slot 1 of 2 and no other: two readers take both slots, and the one on slot 0 leaves. */
const readerOnSlotOne = (resource: string) =>
  Effect.gen(function*() {
    const readers = [
      yield* hold(ReadWriteLock.acquireRead(resource, { ...once, maxReaders: 2 })),
      yield* hold(ReadWriteLock.acquireRead(resource, { ...once, maxReaders: 2 }))
    ]
    const [onZero, onOne] = readers[0].slot.endsWith("read0") ? readers : [readers[1], readers[0]]
    assert.match(onOne.slot, /read1$/)
    yield* onZero.release
    return onOne
  })

describe("settings recorded on the nodes (memory nodes, TestClock)", () => {
  it.effect("a writer with a smaller maxReaders than a holding reader's is refused, not granted beside it", () =>
    Effect.gen(function*() {
      const reader = yield* readerOnSlotOne("cache")
      // Read slot 0, all the writer of maxReaders 1 would lock, is free.
      const refused = yield* conflictOf(ReadWriteLock.acquireWrite("cache", { ...once, maxReaders: 1 }))
      assert.deepInclude(refused, { resource: "cache", setting: "maxReaders", requested: 1, recorded: 2 })
      yield* conflictOf(ReadWriteLock.acquireRead("cache", { ...once, maxReaders: 4 }))
      yield* reader.release
      yield* Effect.scoped(ReadWriteLock.acquireWrite("cache", { ...once, maxReaders: 1 }))
    }).pipe(Effect.provide(memory(3))))

  it.effect("a larger limit is refused at once while holders of a smaller one hold; it takes effect once idle", () =>
    Effect.gen(function*() {
      const holders = [
        yield* hold(Semaphore.acquire("exports", { ...once, limit: 3 })),
        yield* hold(Semaphore.acquire("exports", { ...once, limit: 3 })),
        yield* hold(Semaphore.acquire("exports", { ...once, limit: 3 }))
      ]
      const retry = Redlock.retry({ delay: "100 millis", times: 50 })
      const refused = yield* conflictOf(Semaphore.acquire("exports", { ttl: "10 seconds", limit: 5, retry }))
      assert.deepInclude(refused, { resource: "exports", setting: "limit", requested: 5, recorded: 3 })
      assert.strictEqual(yield* Effect.clockWith((clock) => clock.currentTimeMillis), 0, "refused at once: the retry schedule is not waited out")
      for (const holder of holders) yield* holder.release
      const control = yield* RedisNode.MemoryNodes
      for (const node of [0, 1, 2]) assert.deepStrictEqual(yield* control.keys(node), [], `node ${node}: nothing left`)
      yield* Effect.scoped(Semaphore.acquire("exports", { ...once, limit: 5 }))
    }).pipe(Effect.provide(memory(3))))

  it.effect("an extended holder keeps the record alive past its first ttl", () =>
    Effect.gen(function*() {
      const redlock = yield* Redlock.Redlock
      const scope = yield* Scope.make()
      const permit = yield* Scope.provide(Semaphore.acquire("jobs", { ...once, limit: 2 }), scope)
      yield* TestClock.adjust("8 seconds")
      yield* redlock.extend(permit)
      yield* TestClock.adjust("7 seconds")
      yield* conflictOf(Semaphore.acquire("jobs", { ...once, limit: 3 }))
      yield* Scope.close(scope, Exit.void)
      yield* Effect.scoped(Semaphore.acquire("jobs", { ...once, limit: 3 }))
    }).pipe(Effect.provide(memory(3))))
})

describe("settings recorded on 3 redis-servers", () => {
  it.live("two managers: a writer with a smaller maxReaders is refused beside a reader; a larger limit is refused", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet
      const manager = Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(Ioredis.layer(fleet.nodes)))
      const [first, second] = [yield* Layer.build(manager), yield* Layer.build(manager)]
      const reader = yield* Effect.provide(readerOnSlotOne("cache"), first)
      const refused = yield* Effect.provide(conflictOf(ReadWriteLock.acquireWrite("cache", { ...once, maxReaders: 1 })), second)
      assert.deepInclude(refused, { requested: 1, recorded: 2 })
      yield* reader.release
      const permit = yield* Effect.provide(hold(Semaphore.acquire("exports", { ...once, limit: 1 })), first)
      yield* Effect.provide(conflictOf(Semaphore.acquire("exports", { ...once, limit: 2 })), second)
      yield* permit.release
      yield* expectEmpty(fleet.servers)
    }).pipe(Effect.scoped, Effect.provide(layerLocal(3))))
})
