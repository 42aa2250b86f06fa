/**
 * The counting semaphore: at most `limit` permits held at once, on in-memory
 * nodes (TestClock) and on 5 real redis-servers; bad input; and the reason
 * for its construction: counting holders per node and taking a majority of
 * the counts grants more than `limit` permits.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Layer, Option, Random, Schedule, Scope, TestClock } from "effect"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Redlock from "../src/Redlock.js"
import * as RedisNode from "../src/RedisNode.js"
import { InvalidOptions, LockNotAcquired } from "../src/RedlockError.js"
import * as Semaphore from "../src/Semaphore.js"
import { expectEmpty, failureOf, memory, redis, redisManager } from "./support.js"

/** A waiter's retry that keeps it waiting well past the test's interruption. */
const fast = Schedule.spaced("2 millis").pipe(Schedule.intersect(Schedule.recurs(10_000)))

/** A permit held in a scope of its own, closed by the caller. */
const holdPermit = (resource: string, options: Semaphore.PermitOptions) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const permit = yield* Scope.extend(Semaphore.acquire(resource, options), scope)
    return { permit, release: Scope.close(scope, Exit.void) }
  })

/** A manager over 3 in-memory nodes whose second reports the first's server run: one server listed twice. */
const memoryWithOneServerTwice = Redlock.layer().pipe(
  Layer.provideMerge(
    Layer.effect(
      RedisNode.RedisNodes,
      Effect.map(RedisNode.RedisNodes, (nodes) => nodes.map((node, index) => index === 1 ? { ...node, run: nodes[0].run } : node))
    ).pipe(Layer.provideMerge(RedisNode.layerMemory(3)))
  )
)

describe("semaphore on in-memory nodes", () => {
  it.effect("limit permits are granted on distinct slots; the next is refused until one is released", () =>
    Effect.gen(function*() {
      const options: Semaphore.PermitOptions = { limit: 2, ttl: "10 seconds", retry: Redlock.noRetry }
      const first = yield* holdPermit("exports", options)
      const second = yield* holdPermit("exports", options)
      assert.notStrictEqual(first.permit.resources[0], second.permit.resources[0])
      for (const { permit } of [first, second]) assert.match(permit.resources[0], /^exports\u0000permit[01]$/)

      const view = yield* Semaphore.inspect("exports", 2)
      assert.strictEqual(view.held, 2)
      assert.sameMembers(
        view.slots.map((slot) => Option.getOrUndefined(slot.holder)),
        [first.permit.value, second.permit.value]
      )
      assert.strictEqual((yield* Semaphore.inspect("exports", 3)).held, 2, "a third slot nobody took")

      const refused = failureOf(yield* Effect.exit(Effect.scoped(Semaphore.acquire("exports", options))))
      assert.instanceOf(refused, LockNotAcquired)
      assert.deepStrictEqual((refused as LockNotAcquired).resources, ["exports"])
      assert.strictEqual((refused as LockNotAcquired).attempts, 1, "one round tries every slot")

      // Another resource, and a plain lock on the same name, are not counted.
      yield* Effect.scoped(Semaphore.acquire("imports", options))
      yield* Effect.scoped(Redlock.acquire("exports", { ttl: "1 second", retry: Redlock.noRetry }))

      yield* first.release
      assert.strictEqual((yield* Semaphore.inspect("exports", 2)).held, 1)
      const third = yield* holdPermit("exports", options)
      assert.strictEqual(third.permit.resources[0], first.permit.resources[0])
      yield* second.release
      yield* third.release
    }).pipe(Effect.provide(memory(3))))

  it.effect("a waiter retries on its schedule and gets the permit released meanwhile; withPermit releases it", () =>
    Effect.gen(function*() {
      const holder = yield* holdPermit("jobs", { limit: 1, ttl: "10 seconds" })
      const waiter = yield* Effect.fork(
        Effect.succeed("ran").pipe(
          Semaphore.withPermit("jobs", { limit: 1, ttl: "10 seconds", retry: Schedule.spaced("100 millis") })
        )
      )
      yield* TestClock.adjust("250 millis")
      assert.isNull(waiter.unsafePoll(), "still waiting while the permit is held")
      yield* holder.release
      yield* TestClock.adjust("100 millis")
      assert.strictEqual(yield* Fiber.join(waiter), "ran")
      // withPermit released it: the permit is free again.
      yield* Effect.scoped(Semaphore.acquire("jobs", { limit: 1, ttl: "1 second", retry: Redlock.noRetry }))
    }).pipe(Effect.provide(memory(3))))

  it.effect("a waiter is woken by the release of any slot, long before its schedule's next round", () =>
    Effect.gen(function*() {
      const options: Semaphore.PermitOptions = { limit: 2, ttl: "30 seconds", retry: Schedule.spaced("10 seconds") }
      const holders = [yield* holdPermit("jobs", options), yield* holdPermit("jobs", options)]
      const waiter = yield* Effect.fork(holdPermit("jobs", options))
      yield* TestClock.adjust("5 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(waiter)), "both permits are held")
      // Whichever slot is released, the waiter watches it.
      yield* holders[1].release
      yield* TestClock.adjust("1 millis")
      assert.isTrue(Option.isSome(yield* Fiber.poll(waiter)), "woken by the release, not by the schedule 10 s later")
      const third = yield* Fiber.join(waiter)
      assert.strictEqual(third.permit.resources[0], holders[1].permit.resources[0])
      yield* holders[0].release
      yield* third.release
    }).pipe(Effect.provide(memory(3))))

  it.effect("a waiter is woken when a crashed holder's slot runs out, not at its schedule's next round", () =>
    Effect.gen(function*() {
      const options: Semaphore.PermitOptions = { limit: 2, ttl: "30 seconds", retry: Schedule.spaced("10 seconds") }
      // Two holders that never release (crashed): one slot runs out at 2 s, the other at 30 s.
      yield* holdPermit("jobs", { ...options, ttl: "2 seconds" })
      yield* holdPermit("jobs", options)
      const waiter = yield* Effect.fork(holdPermit("jobs", options))
      yield* TestClock.adjust("1990 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(waiter)), "both permits are held")
      yield* TestClock.adjust("20 millis")
      assert.isTrue(Option.isSome(yield* Fiber.poll(waiter)), "woken as the first slot ran out, not 10 s after it began")
    }).pipe(Effect.provide(memory(3))))

  it.effect("a slot handed over by a node that is an earlier node's server counts once", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      const options: Semaphore.PermitOptions = { limit: 1, ttl: "30 seconds", retry: Schedule.spaced("10 seconds") }
      const holder = yield* holdPermit("jobs", options)
      const waiter = yield* Effect.fork(holdPermit("jobs", options))
      yield* TestClock.adjust("5 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(waiter)), "the permit is held")
      // Nodes 0 and 1 hand the slot over; node 2 is down. Nodes 0 and 1 are one server: one vote of the two needed.
      yield* control.setDown(2, true)
      yield* Effect.fork(holder.release)
      yield* TestClock.adjust("5 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(waiter)), "not held on one server's hand-over counted twice")
      // Its leaving waits for node 2's answer, or for the per-node timeout on the test's clock.
      yield* control.setDown(2, false)
      const left = yield* Effect.fork(Fiber.interrupt(waiter))
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(left)
    }).pipe(Effect.provide(memoryWithOneServerTwice)))

  it.effect("bad input fails with InvalidOptions naming the option", () =>
    Effect.gen(function*() {
      const options = (limit: unknown) => ({ limit, ttl: "1 second" }) as Semaphore.PermitOptions
      const invalid = (effect: Effect.Effect<unknown, unknown, Redlock.Redlock | Scope.Scope>) =>
        Effect.map(Effect.exit(Effect.scoped(effect)), (exit) => failureOf(exit) as InvalidOptions)
      for (const limit of [0, 1.5, 65, -1, "2", undefined]) {
        const error = yield* invalid(Semaphore.acquire("r", options(limit)))
        assert.instanceOf(error, InvalidOptions)
        assert.strictEqual(error.option, "limit", String(limit))
      }
      for (const resource of [["a", "b"], "", "a\u0000b"] as const) {
        const error = yield* invalid(Semaphore.acquire(resource as unknown as string, options(2)))
        assert.instanceOf(error, InvalidOptions)
        assert.strictEqual(error.option, "resource", JSON.stringify(resource))
      }
      const inspected = failureOf(yield* Effect.exit(Semaphore.inspect("r", 0)))
      assert.strictEqual(inspected.option, "limit")
      const missing = yield* invalid(Semaphore.acquire("r", undefined as unknown as Semaphore.PermitOptions))
      assert.strictEqual(missing.option, "options")
      const ttl = yield* invalid(Semaphore.acquire("r", { limit: 2, ttl: "0 millis" }))
      assert.strictEqual(ttl.option, "ttl")
      const retry = yield* invalid(Semaphore.acquire("r", { limit: 2, ttl: "1 second", retry: 3 as never }))
      assert.strictEqual(retry.option, "retry")
    }).pipe(Effect.provide(memory(3))))
})

describe("why each slot is a lock", () => {
  // Three clients, each cut off from a different one of the nodes A, B, C (a
  // partition, or a node that times out for that client only): client 0
  // reaches A and B, client 1 reaches B and C, client 2 reaches A and C.
  const reachable = [[0, 1], [1, 2], [0, 2]] as const
  const limit = 2

  it("counting holders per node and taking a majority of the counts grants more than limit permits", () => {
    // The construction of redis-semaphore's RedlockSemaphore: a node admits a
    // holder while it counts fewer than `limit`; a client holds a permit when
    // a majority admitted it.
    const holders: Array<Set<number>> = [new Set(), new Set(), new Set()]
    const granted = reachable.filter((nodes, client) => {
      const admitted = nodes.filter((node) => holders[node].size < limit && holders[node].add(client))
      return admitted.length >= 2
    })
    assert.strictEqual(granted.length, 3, "three holders of a limit of two")
  })

  it.effect("with a lock per slot, the same three clients get two permits", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      const all = yield* RedisNode.RedisNodes
      // Node 3 fails every command, for everyone: it stands in for the node a client cannot reach.
      yield* control.setFailure(3, Option.some("Unavailable"))
      const grants = yield* Effect.forEach(reachable, (nodes) =>
        Effect.gen(function*() {
          const seen = [0, 1, 2].map((node) => nodes.includes(node as never) ? all[node] : all[3])
          const manager = yield* Redlock.make({ restartQuarantine: false }).pipe(
            Effect.provideService(RedisNode.RedisNodes, seen)
          )
          const exit = yield* Effect.exit(manager.acquirePermit("reports", { limit, ttl: "10 seconds", retry: Redlock.noRetry }))
          return Exit.isSuccess(exit)
        }))
      assert.deepStrictEqual(grants, [true, true, false])
      // Every client tries slot 0 first: client 1 finds it held on B (client 0's) and free on C, and its
      // first round splits (B sets slot 1, C slot 0); the round after, from slot 1, is granted.
    }).pipe(Effect.scoped, Effect.withRandom(Random.fixed([0])), Effect.provide(RedisNode.layerMemory(4))))
})

layer(RedisFleet.layerLocal(5), { timeout: 60_000, excludeTestServices: true })("semaphore on 5 redis-servers", (it) => {
  it.scoped("six fibers share three permits: never more than three at once, and all of them run", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const context = yield* Layer.build(redis(fleet.nodes))
      let inside = 0
      let most = 0
      let done = 0
      const retry = Schedule.spaced("5 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(2000)))
      const work = Effect.gen(function*() {
        most = Math.max(most, ++inside)
        yield* Effect.sleep("15 millis")
        inside--
        done++
      }).pipe(Semaphore.withPermit("builds", { limit: 3, ttl: "5 seconds", retry }))
      yield* Effect.forEach(Array.from({ length: 6 }), () => Effect.repeatN(work, 4), { concurrency: "unbounded" }).pipe(
        Effect.provide(context)
      )
      assert.strictEqual(done, 30)
      assert.strictEqual(most, 3, "three holders at a time, not more (and the permits were used)")
      yield* expectEmpty(fleet)
    }))

  it.scoped("interruption at random points of a permit's acquisition leaves no slot key; the holders' keys survive", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const waiter = yield* redisManager(fleet.nodes)
      const holder = yield* redisManager(fleet.nodes)
      const random = Random.make(7)
      const options: Semaphore.PermitOptions = { limit: 2, ttl: "10 seconds", nodeTimeout: "50 millis", retry: fast }
      for (let i = 0; i < 60; i++) {
        // Both permits held (the waiter interrupted while waiting or mid-round), or
        // one (interrupted while taking the other); every fourth with a node paused.
        const held = i % 3 === 0 ? 2 : 1
        const paused = i % 4 === 1
        yield* Effect.scoped(Effect.gen(function*() {
          const holders = yield* Effect.replicateEffect(holder.acquirePermit(`p${i}`, options), held)
          if (paused) yield* fleet.servers[i % 5].pause
          const fiber = yield* Effect.fork(waiter.acquirePermit(`p${i}`, options))
          yield* Effect.sleep(Duration.micros(BigInt(yield* random.nextIntBetween(0, 6000))))
          yield* Fiber.interrupt(fiber)
          if (paused) yield* fleet.servers[i % 5].resume
          for (const { keys, value } of holders) {
            const values = yield* Effect.forEach(fleet.servers, (server) => server.call("GET", keys[0]))
            assert.deepStrictEqual(values, [value, value, value, value, value], "a holder's slot survives the waiter's end")
          }
        }))
        yield* expectEmpty(fleet)
      }
    }))

  it.scoped("a waiter that runs out of retries is refused for the resource, with every round counted", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const context = yield* Layer.build(redis(fleet.nodes))
      const options: Semaphore.PermitOptions = { limit: 2, ttl: "10 seconds", retry: Schedule.recurs(2) }
      const holders = yield* holdPermit("exports", options).pipe(Effect.provide(context), Effect.replicateEffect(2))
      const refusal = failureOf(yield* Effect.exit(Semaphore.acquire("exports", options).pipe(Effect.scoped, Effect.provide(context))))
      assert.instanceOf(refusal, LockNotAcquired)
      assert.deepStrictEqual(refusal.resources, ["exports"])
      // Four rounds (the first, its re-check once the new subscriptions were ready, two retries), each trying
      // both slots in one call per node.
      assert.strictEqual(refusal.attempts, 4)
      assert.strictEqual(refusal.reason, "Held")
      yield* Effect.forEach(holders, (holder) => holder.release)
      yield* expectEmpty(fleet)
    }))

  it.scoped("a release wakes a waiter through the servers' announcements, long before its schedule's next round", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const context = yield* Layer.build(redis(fleet.nodes))
      const options: Semaphore.PermitOptions = { limit: 1, ttl: "20 seconds", retry: Schedule.spaced("30 seconds") }
      const holder = yield* holdPermit("reports", options).pipe(Effect.provide(context))
      const waiter = yield* Effect.fork(Effect.timed(holdPermit("reports", options)).pipe(Effect.provide(context)))
      yield* Effect.sleep("300 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(waiter)), "the permit is held")
      yield* holder.release
      const [waited, third] = yield* Fiber.join(waiter).pipe(Effect.timeoutFail({
        duration: "5 seconds",
        onTimeout: () => new Error("the waiter was not woken by the release")
      }))
      assert.isBelow(Duration.toMillis(waited), 3_000)
      yield* third.release
      yield* expectEmpty(fleet)
    }))
})
