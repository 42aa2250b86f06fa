/**
 * A semaphore's `limit` and a read-write lock's `maxReaders` are recorded on
 * the nodes (issue 32): a client with another value is refused with
 * SettingConflict, decided by a quorum of nodes, and a new value takes
 * effect once the resource is idle. Before, a writer with a smaller
 * `maxReaders` was granted beside a reader, and clients with a larger
 * `limit` took slots beyond the others'.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Scope, TestClock } from "effect"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as ReadWriteLock from "../src/ReadWriteLock.js"
import * as RedisNode from "../src/RedisNode.js"
import * as Redlock from "../src/Redlock.js"
import { SettingConflict } from "../src/RedlockError.js"
import * as Semaphore from "../src/Semaphore.js"
import { effectsOf, expectEmpty, failureOf, memory, redis } from "./support.js"

/** A hold in a scope of its own (its slot, and the scope's close), in a fiber of its own as another client's. */
const hold = <E>(acquire: Effect.Effect<{ readonly resources: ReadonlyArray<string> }, E, Redlock.Redlock | Scope.Scope>) =>
  Effect.flatMap(
    Effect.fork(Effect.gen(function*() {
      const scope = yield* Scope.make()
      const lock = yield* Scope.extend(acquire, scope)
      return { slot: lock.resources[0], release: Scope.close(scope, Exit.void) }
    })),
    Fiber.join
  )

const failure = <E>(acquire: Effect.Effect<unknown, E, Redlock.Redlock | Scope.Scope>) =>
  Effect.map(Effect.exit(Effect.scoped(acquire)), failureOf)

const once = { ttl: "10 seconds", retry: Redlock.noRetry } as const

/**
 * A reader that holds read slot 1 of 2 and no other: two readers take both
 * slots, and the one on slot 0 leaves.
 */
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
      const refused = yield* failure(ReadWriteLock.acquireWrite("cache", { ...once, maxReaders: 1 }))
      assert.instanceOf(refused, SettingConflict)
      assert.deepInclude(refused, { resource: "cache", setting: "maxReaders", requested: 1, recorded: 2 })
      assert.match(refused.message, /maxReaders 1 refused, its holders use 2/)
      const reader2 = yield* failure(ReadWriteLock.acquireRead("cache", { ...once, maxReaders: 4 }))
      assert.instanceOf(reader2, SettingConflict, "a reader with another maxReaders too")
      yield* reader.release
      // Idle: the record went with the last reader, and the writer's value is taken.
      yield* Effect.scoped(ReadWriteLock.acquireWrite("cache", { ...once, maxReaders: 1 }))
    }).pipe(Effect.provide(memory(3))))

  it.effect("permits of a larger limit are refused while holders of a smaller one hold; the new limit takes effect once idle", () =>
    Effect.gen(function*() {
      const holders = [
        yield* hold(Semaphore.acquire("exports", { ...once, limit: 3 })),
        yield* hold(Semaphore.acquire("exports", { ...once, limit: 3 })),
        yield* hold(Semaphore.acquire("exports", { ...once, limit: 3 }))
      ]
      // Before, this took slot 3 or 4: a fourth holder of a limit of three.
      const refused = yield* failure(Semaphore.acquire("exports", { ...once, limit: 5, retry: Redlock.retry({ delay: "100 millis", times: 50 }) }))
      assert.instanceOf(refused, SettingConflict)
      assert.deepInclude(refused, { resource: "exports", setting: "limit", requested: 5, recorded: 3 })
      assert.strictEqual(yield* TestClock.currentTimeMillis, 0, "refused at once: the retry schedule is not waited out")
      for (const holder of holders) yield* holder.release
      const control = yield* RedisNode.MemoryNodes
      for (const node of [0, 1, 2]) assert.deepStrictEqual(yield* control.keys(node), [], `node ${node}: nothing left`)
      yield* Effect.scoped(Semaphore.acquire("exports", { ...once, limit: 5 }))
    }).pipe(Effect.provide(memory(3))))

  it.effect("an extended holder keeps the record alive past its first ttl", () =>
    Effect.gen(function*() {
      const redlock = yield* Redlock.Redlock
      const scope = yield* Scope.make()
      const permit = yield* Scope.extend(Semaphore.acquire("jobs", { ttl: "10 seconds", limit: 2, retry: Redlock.noRetry }), scope)
      yield* TestClock.adjust("8 seconds")
      yield* redlock.extend(permit)
      yield* TestClock.adjust("7 seconds")
      assert.instanceOf(yield* failure(Semaphore.acquire("jobs", { ...once, limit: 3 })), SettingConflict)
      yield* Scope.close(scope, Exit.void)
      yield* Effect.scoped(Semaphore.acquire("jobs", { ...once, limit: 3 }))
    }).pipe(Effect.provide(memory(3))))

  it.effect("decided by a quorum: a record on one node of three does not refuse, on two it does", () =>
    Effect.gen(function*() {
      const nodes = yield* RedisNode.RedisNodes
      // A stranger's slot 0 of a limit of 7 on node 0 only (as a holder that reached one node).
      const recordOn = (index: number, resource: string) =>
        effectsOf(nodes[index]).acquireInTurn([`redlock:${resource}\u0000permit0`], "stranger", 60_000, {
          ticket: 0,
          leaseMillis: 0,
          setting: "7"
        })
      assert.strictEqual((yield* recordOn(0, "a"))._tag, "Granted")
      yield* Effect.scoped(Semaphore.acquire("a", { ...once, limit: 2 }))
      yield* recordOn(0, "b")
      yield* recordOn(1, "b")
      const refused = yield* failure(Semaphore.acquire("b", { ...once, limit: 2 }))
      assert.instanceOf(refused, SettingConflict)
      assert.strictEqual(refused.recorded, 7)
    }).pipe(Effect.provide(memory(3))))
})

layer(RedisFleet.layerLocal(3), { timeout: 60_000, excludeTestServices: true })("settings recorded on 3 redis-servers", (it) => {
  it.scoped("two managers: a writer with a smaller maxReaders is refused beside a reader; a larger limit is refused", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const manager = () => Effect.map(Layer.build(redis(fleet.nodes)), (context) => Context.get(context, Redlock.Redlock))
      const [first, second] = [yield* manager(), yield* manager()]
      const reader = yield* readerOnSlotOne("cache").pipe(Effect.provideService(Redlock.Redlock, first))
      const refused = yield* failure(ReadWriteLock.acquireWrite("cache", { ...once, maxReaders: 1 })).pipe(
        Effect.provideService(Redlock.Redlock, second)
      )
      assert.instanceOf(refused, SettingConflict)
      assert.deepInclude(refused, { requested: 1, recorded: 2 })
      yield* reader.release
      const permit = yield* hold(Semaphore.acquire("exports", { ...once, limit: 1 })).pipe(Effect.provideService(Redlock.Redlock, first))
      const larger = yield* failure(Semaphore.acquire("exports", { ...once, limit: 2 })).pipe(Effect.provideService(Redlock.Redlock, second))
      assert.instanceOf(larger, SettingConflict)
      yield* permit.release
      yield* expectEmpty(fleet)
    }))
})
