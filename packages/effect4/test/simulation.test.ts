/**
 * Random contention with node faults on memory nodes, on the TestClock:
 * workers of two managers take one lock over and over while nodes go down,
 * slow down and fail; no two holders are ever inside their validity at once.
 * Seeded runs: a failure names its seed.
 *
 * Lines of waiters that came to disagree between nodes (a waiter whose
 * place on a node that was down or failing ran out rejoined it, behind
 * others) livelocked with retries forever (issue 32): in seeds 4, 5 and 6
 * nobody was granted again after the faults ended, every node left with a
 * line and no key. Each node now seats a waiter by its ticket at every
 * attempt, so the lines converge: every worker ends its rounds, with finite
 * schedules and with retries forever. The same for permits of a semaphore
 * and for reads and writes of a read-write lock, whose slots share one line.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Random from "effect/Random"
import * as TestClock from "effect/testing/TestClock"
import type * as Scope from "effect/Scope"
import { type Lock, ReadWriteLock, RedisNode, Redlock, Semaphore } from "effect-redlock"

// A waiter gives up after 40 retries (it leaves every line), as with any finite schedule.
const finiteRetry = Redlock.retry({ delay: "7 millis", times: 40 })
const retryForever = Redlock.retry({ delay: "7 millis", times: Number.MAX_SAFE_INTEGER })

// The simulated time a run may take: with retries forever, a livelock would otherwise never end.
const simulatedBoundMillis = 120_000

interface Held {
  readonly worker: number
  readonly from: number
  readonly until: number
  /** A read-write lock's writer (it may hold beside nobody). */
  readonly writes?: boolean | undefined
}

/** What each worker takes, round by round: a lock, a permit, or a read or a write. */
type Take = (
  retry: Redlock.RetrySchedule,
  worker: number,
  round: number
) => { readonly acquire: Effect.Effect<Lock.Lock, unknown, Scope.Scope | Redlock.Redlock>; readonly writes?: boolean }

const takeLock: Take = (retry) => ({ acquire: Redlock.acquire("account", { ttl: "200 millis", retry }) })

const run = (seed: number, retry: Redlock.RetrySchedule, take: Take = takeLock) =>
  Effect.gen(function*() {
    const control = yield* RedisNode.MemoryNodes
    const holds: Array<Held> = []
    const worker = (index: number) =>
      Effect.gen(function*() {
        for (let round = 0; round < 12; round++) {
          const { acquire, writes } = take(retry, index, round)
          yield* Effect.scoped(Effect.gen(function*() {
            const lock = yield* acquire
            const from = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
            yield* Effect.sleep(Duration.millis(yield* Random.nextIntBetween(1, 250)))
            // Inside until the work ends (the release starts then) or the validity runs out, whichever is first.
            const done = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
            holds.push({ worker: index, from, until: Math.min(done, from + Duration.toMillis(lock.validity)), writes })
          })).pipe(Effect.ignore)
        }
      })
    // Two managers, as two processes, four workers each.
    const managers = [Redlock.layer(), Redlock.layer()]
    const workers = yield* Effect.forEach(
      [0, 1, 2, 3, 4, 5, 6, 7],
      // Forked one after another by this fiber: forks of a concurrent forEach would be children of its short-lived fibers.
      (index) => Effect.forkChild(Effect.provide(worker(index), managers[index % 2]))
    )
    const faults = Effect.gen(function*() {
      for (let step = 0; step < 60; step++) {
        const node = yield* Random.nextIntBetween(0, 4)
        const fault = yield* Random.nextIntBetween(0, 3)
        if (fault === 0) yield* control.setDown(node, true)
        else if (fault === 1) yield* control.setLatency(node, Duration.millis(yield* Random.nextIntBetween(1, 30)))
        else if (fault === 2) yield* control.setFailure(node, "Unavailable")
        else yield* control.heal(node)
        yield* Effect.sleep("40 millis")
        if ((yield* Random.nextIntBetween(0, 2)) === 0) yield* control.heal(node)
      }
      for (const node of [0, 1, 2, 3, 4]) yield* control.heal(node)
    })
    const faulting = yield* Effect.forkChild(faults)
    // The clock moves in small steps, so that timers fire in order, until every worker is done.
    const running = () => workers.filter((fiber) => fiber.pollUnsafe() === undefined).length
    for (let elapsed = 0; running() > 0 || faulting.pollUnsafe() === undefined; elapsed += 3) {
      if (elapsed >= simulatedBoundMillis) {
        const waiting = running()
        const lines = yield* Effect.forEach([0, 1, 2, 3, 4], (node) =>
          Effect.map(control.keys(node), (keys) => `node ${node}: ${keys.join(" ")}`))
        yield* Fiber.interruptAll(workers)
        return assert.fail(
          `seed ${seed}: ${waiting} workers still waiting after ${elapsed} ms; keys left: ${lines.join("; ")}`
        )
      }
      yield* TestClock.adjust("3 millis")
    }
    yield* Fiber.joinAll(workers)
    const sorted = [...holds].sort((a, b) =>
      a.from - b.from
    )
    return sorted
  }).pipe(Effect.provide(RedisNode.layerMemory(5)), Random.withSeed(seed))

/** Each hold that began while an earlier one (by start) was still inside, as "worker@from inside worker's until". */
const overlapsOf = (holds: ReadonlyArray<Held>): ReadonlyArray<string> => {
  const overlaps: Array<string> = []
  let inside: Held | undefined
  for (const hold of holds) {
    if (inside !== undefined && hold.from < inside.until) {
      overlaps.push(`${hold.worker}@${hold.from} inside ${inside.worker}'s until ${inside.until}`)
    }
    if (inside === undefined || hold.until > inside.until) inside = hold
  }
  return overlaps
}

/** The most holds inside at once, and each hold that was inside beside a writer (or a writer beside anyone). */
const crowding = (holds: ReadonlyArray<Held>): { readonly most: number; readonly besideWriter: number } => {
  let most = 0
  let besideWriter = 0
  for (const hold of holds) {
    const inside = holds.filter((other) => other.from <= hold.from && hold.from < other.until)
    most = Math.max(most, inside.length)
    if (inside.length > 1 && inside.some((other) => other.writes === true)) besideWriter++
  }
  return { most, besideWriter }
}

const takePermit: Take = (retry) => ({ acquire: Semaphore.acquire("account", { limit: 2, ttl: "200 millis", retry }) })
// Every third round of each worker writes.
const takeReadOrWrite: Take = (retry, worker, round) =>
  (worker + round) % 3 === 0
    ? { acquire: ReadWriteLock.acquireWrite("account", { ttl: "200 millis", maxReaders: 3, retry }), writes: true }
    : { acquire: ReadWriteLock.acquireRead("account", { ttl: "200 millis", maxReaders: 3, retry }) }

describe("random contention with node faults (memory nodes, TestClock)", () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it.effect(`seed ${seed}: no two holders inside their validity at once, and the lock is taken`, () =>
      Effect.gen(function*() {
        const holds = yield* run(seed, finiteRetry)
        assert.isAtLeast(holds.length, 10, "locks were granted despite the faults")
        assert.deepStrictEqual(overlapsOf(holds), [], `seed ${seed}`)
      }))
    it.effect(`seed ${seed}, retries forever: the lines converge, every worker holds the lock 12 times`, () =>
      Effect.gen(function*() {
        const holds = yield* run(seed, retryForever)
        assert.strictEqual(holds.length, 8 * 12)
        assert.deepStrictEqual(overlapsOf(holds), [], `seed ${seed}`)
      }))
  }

  // One line per semaphore and read-write lock (issue 32): with retries forever, every worker ends its
  // rounds under the same faults, never more permits than the limit, and no writer beside anyone.
  for (const seed of [1, 2, 3]) {
    it.effect(`seed ${seed}, retries forever: permits of 2, every worker holds one 12 times, never 3 at once`, () =>
      Effect.gen(function*() {
        const holds = yield* run(seed, retryForever, takePermit)
        assert.strictEqual(holds.length, 8 * 12)
        assert.isAtMost(crowding(holds).most, 2)
      }))
    it.effect(`seed ${seed}, retries forever: reads and writes, every worker ends its 12 rounds, no writer beside anyone`, () =>
      Effect.gen(function*() {
        const holds = yield* run(seed, retryForever, takeReadOrWrite)
        assert.strictEqual(holds.length, 8 * 12)
        const { besideWriter, most } = crowding(holds)
        assert.strictEqual(besideWriter, 0)
        assert.isAtMost(most, 3)
      }))
  }

  it.effect("the checker sees two holders at once when a restart loses the keys and the restart quarantine is off", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      const holds: Array<Held> = []
      const hold = (worker: number) =>
        Effect.provide(
          Effect.gen(function*() {
            const lock = yield* Redlock.acquire("account", { ttl: "1 second", retry: Redlock.noRetry })
            const from = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
            holds.push({ worker, from, until: from + Duration.toMillis(lock.validity) })
          }),
          Redlock.layer({ restartQuarantine: false })
        )
      yield* hold(0)
      for (const index of [0, 1, 2]) yield* control.restart(index)
      yield* TestClock.adjust("100 millis")
      yield* hold(1)
      assert.strictEqual(overlapsOf(holds).length, 1)
    }).pipe(Effect.scoped, Effect.provide(RedisNode.layerMemory(5))))
})
