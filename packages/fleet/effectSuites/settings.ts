/**
 * A semaphore's `limit` and a read-write lock's `maxReaders` are recorded on
 * the nodes (issue 32): a client with another value is refused with
 * SettingConflict, decided by a quorum of nodes, and a new value takes
 * effect once the resource is idle. Before, a writer with a smaller
 * `maxReaders` was granted beside a reader, and clients with a larger
 * `limit` took slots beyond the others'.
 *
 * One suite, run by both Effect lines (each package's test/settings.test.ts).
 */
import {
  assert,
  Clock,
  describe,
  Effect,
  Exit,
  Fiber,
  fork,
  inScope,
  it,
  layer,
  layerFleet,
  ReadWriteLock,
  RedisFleet,
  RedisNode,
  Redlock,
  RedlockError,
  Scope,
  Semaphore,
  TestClock
} from "@effect-redlock/line"
import { effectsOf, expectEmpty, failureOfType, memory, redisManager } from "./support.js"

/** A hold in a scope of its own (its slot, and the scope's close), in a fiber of its own as another client's. */
const hold = <E>(
  acquire: Effect.Effect<{ readonly resources: ReadonlyArray<string> }, E, Redlock.Redlock | Scope.Scope>
) =>
  Effect.flatMap(
    fork(Effect.gen(function*() {
      const scope = yield* Scope.make()
      const lock = yield* inScope(scope)(acquire)
      return { slot: lock.resources[0], release: Scope.close(scope, Exit.void) }
    })),
    Fiber.join
  )

/** The refusal of an acquisition, which must be a SettingConflict. */
const conflict = <E>(acquire: Effect.Effect<unknown, E, Redlock.Redlock | Scope.Scope>) =>
  Effect.map(Effect.exit(Effect.scoped(acquire)), (exit) => failureOfType(exit, RedlockError.SettingConflict))

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

export const settingsSuite = () => {
  describe("settings recorded on the nodes (memory nodes, TestClock)", () => {
    it.effect("a writer with a smaller maxReaders than a holding reader's is refused, not granted beside it", () =>
      Effect.gen(function*() {
        const reader = yield* readerOnSlotOne("cache")
        // Read slot 0, all the writer of maxReaders 1 would lock, is free.
        const refused = yield* conflict(ReadWriteLock.acquireWrite("cache", { ...once, maxReaders: 1 }))
        assert.deepInclude(refused, { resource: "cache", setting: "maxReaders", requested: 1, recorded: 2 })
        assert.match(refused.message, /maxReaders 1 refused, its holders use 2/)
        // A reader with another maxReaders is refused too.
        yield* conflict(ReadWriteLock.acquireRead("cache", { ...once, maxReaders: 4 }))
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
        const refused = yield* conflict(
          Semaphore.acquire("exports", { ...once, limit: 5, retry: Redlock.retry({ delay: "100 millis", times: 50 }) })
        )
        assert.deepInclude(refused, { resource: "exports", setting: "limit", requested: 5, recorded: 3 })
        assert.strictEqual(yield* Clock.currentTimeMillis, 0, "refused at once: the retry schedule is not waited out")
        for (const holder of holders) yield* holder.release
        const control = yield* RedisNode.MemoryNodes
        for (const node of [0, 1, 2]) {
          assert.deepStrictEqual(yield* control.keys(node), [], `node ${node}: nothing left`)
        }
        yield* Effect.scoped(Semaphore.acquire("exports", { ...once, limit: 5 }))
      }).pipe(Effect.provide(memory(3))))

    it.effect("an extended holder keeps the record alive past its first ttl", () =>
      Effect.gen(function*() {
        const redlock = yield* Redlock.Redlock
        const scope = yield* Scope.make()
        const permit = yield* inScope(scope)(
          Semaphore.acquire("jobs", { ttl: "10 seconds", limit: 2, retry: Redlock.noRetry })
        )
        yield* TestClock.adjust("8 seconds")
        yield* redlock.extend(permit)
        yield* TestClock.adjust("7 seconds")
        yield* conflict(Semaphore.acquire("jobs", { ...once, limit: 3 }))
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
        const refused = yield* conflict(Semaphore.acquire("b", { ...once, limit: 2 }))
        assert.strictEqual(refused.recorded, 7)
      }).pipe(Effect.provide(memory(3))))
  })

  layer(layerFleet(3), { timeout: 60_000, excludeTestServices: true })("settings recorded on 3 redis-servers", (it) => {
    it.effect("two managers: a writer with a smaller maxReaders is refused beside a reader; a larger limit is refused", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const [first, second] = [yield* redisManager(fleet.nodes), yield* redisManager(fleet.nodes)]
        const reader = yield* readerOnSlotOne("cache").pipe(Effect.provideService(Redlock.Redlock, first))
        const refused = yield* conflict(ReadWriteLock.acquireWrite("cache", { ...once, maxReaders: 1 })).pipe(
          Effect.provideService(Redlock.Redlock, second)
        )
        assert.deepInclude(refused, { requested: 1, recorded: 2 })
        yield* reader.release
        const permit = yield* hold(Semaphore.acquire("exports", { ...once, limit: 1 })).pipe(
          Effect.provideService(Redlock.Redlock, first)
        )
        yield* conflict(Semaphore.acquire("exports", { ...once, limit: 2 })).pipe(
          Effect.provideService(Redlock.Redlock, second)
        )
        yield* permit.release
        yield* expectEmpty(fleet)
      }).pipe(Effect.scoped))
  })
}
