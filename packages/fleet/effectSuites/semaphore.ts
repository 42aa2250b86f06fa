/**
 * The counting semaphore: at most `limit` permits held at once, on in-memory
 * nodes (TestClock) and on 5 real redis-servers; bad input; and the reason
 * for its construction: counting holders per node and taking a majority of
 * the counts grants more than `limit` permits.
 *
 * One suite, run by both Effect lines (each package's test/semaphore.test.ts).
 */
import {
  assert,
  atMost,
  describe,
  Duration,
  Effect,
  Exit,
  failWith,
  Fiber,
  fork,
  inScope,
  it,
  Layer,
  layer,
  layerFleet,
  Option,
  poll,
  RedisFleet,
  RedisNode,
  Redlock,
  Schedule,
  Scope,
  Semaphore,
  TestClock,
  withFixedRandom
} from "@effect-redlock/line"
import { expectEmpty, failureOf, invalidOf, memory, redis, redisManager, refusalOf, seededRandom } from "./support.js"

/** A waiter's retry that keeps it waiting well past the test's interruption. */
const fast = Schedule.spaced("2 millis").pipe(atMost(10_000))

/** A permit held in a scope of its own, closed by the caller. */
const holdPermit = (resource: string, options: Semaphore.PermitOptions) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const permit = yield* inScope(scope)(Semaphore.acquire(resource, options))
    return { permit, release: Scope.close(scope, Exit.void) }
  })

/** A manager over 3 in-memory nodes whose second reports the first's server run: one server listed twice. */
const memoryWithOneServerTwice = Redlock.layer().pipe(
  Layer.provideMerge(
    Layer.effect(
      RedisNode.RedisNodes,
      Effect.map(
        RedisNode.RedisNodes,
        (nodes) => nodes.map((node, index) => index === 1 ? { ...node, run: nodes[0].run } : node)
      )
    ).pipe(Layer.provideMerge(RedisNode.layerMemory(3)))
  )
)

export const semaphoreSuite = () => {
  describe("semaphore on in-memory nodes", () => {
    it.effect("limit permits are granted on distinct slots; the next is refused until one is released", () =>
      Effect.gen(function*() {
        const options: Semaphore.PermitOptions = { limit: 2, ttl: "10 seconds", retry: Redlock.noRetry }
        const first = yield* holdPermit("exports", options)
        const second = yield* holdPermit("exports", options)
        assert.notStrictEqual(first.permit.resources[0], second.permit.resources[0])
        for (const { permit } of [first, second]) {
          assert.oneOf(permit.resources[0], ["exports\u0000permit0", "exports\u0000permit1"])
        }

        const view = yield* Semaphore.inspect("exports", 2)
        assert.strictEqual(view.held, 2)
        assert.sameMembers(
          view.slots.map((slot) => Option.getOrUndefined(slot.holder)),
          [first.permit.value, second.permit.value]
        )
        assert.strictEqual((yield* Semaphore.inspect("exports", 3)).held, 2, "a third slot nobody took")

        const refused = refusalOf(yield* Effect.exit(Effect.scoped(Semaphore.acquire("exports", options))))
        assert.deepStrictEqual(refused.resources, ["exports"])
        assert.strictEqual(refused.reason, "Held")
        assert.strictEqual(refused.attempts, 1, "one round tries every slot")

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
        const waiter = yield* fork(
          Effect.succeed("ran").pipe(
            Semaphore.withPermit("jobs", { limit: 1, ttl: "10 seconds", retry: Schedule.spaced("100 millis") })
          )
        )
        yield* TestClock.adjust("250 millis")
        assert.isUndefined(yield* poll(waiter), "still waiting while the permit is held")
        yield* holder.release
        yield* TestClock.adjust("100 millis")
        assert.strictEqual(yield* Fiber.join(waiter), "ran")
        // withPermit released it: the permit is free again.
        yield* Effect.scoped(Semaphore.acquire("jobs", { limit: 1, ttl: "1 second", retry: Redlock.noRetry }))
      }).pipe(Effect.provide(memory(3))))

    it.effect("withPermit holds a permit while its body runs, and gives it back", () =>
      Effect.gen(function*() {
        const inside = yield* Semaphore.withPermit("pool", { limit: 3, ttl: "10 seconds" })(
          Semaphore.inspect("pool", 3)
        )
        assert.strictEqual(inside.held, 1)
        assert.strictEqual((yield* Semaphore.inspect("pool", 3)).held, 0)
      }).pipe(Effect.provide(memory(3))))

    it.effect("a waiter is woken by the release of any slot, long before its schedule's next round", () =>
      Effect.gen(function*() {
        const options: Semaphore.PermitOptions = { limit: 2, ttl: "30 seconds", retry: Schedule.spaced("10 seconds") }
        const holders = [yield* holdPermit("jobs", options), yield* holdPermit("jobs", options)]
        const waiter = yield* fork(holdPermit("jobs", options))
        yield* TestClock.adjust("5 millis")
        assert.isUndefined(yield* poll(waiter), "both permits are held")
        // Whichever slot is released, the waiter watches it.
        yield* holders[1].release
        yield* TestClock.adjust("1 millis")
        assert.isDefined(yield* poll(waiter), "woken by the release, not by the schedule 10 s later")
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
        const waiter = yield* fork(holdPermit("jobs", options))
        yield* TestClock.adjust("1990 millis")
        assert.isUndefined(yield* poll(waiter), "both permits are held")
        yield* TestClock.adjust("20 millis")
        assert.isDefined(yield* poll(waiter), "woken as the first slot ran out, not 10 s after it began")
      }).pipe(Effect.provide(memory(3))))

    it.effect("a slot handed over by a node that is an earlier node's server counts once", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const options: Semaphore.PermitOptions = { limit: 1, ttl: "30 seconds", retry: Schedule.spaced("10 seconds") }
        const holder = yield* holdPermit("jobs", options)
        const waiter = yield* fork(holdPermit("jobs", options))
        yield* TestClock.adjust("5 millis")
        assert.isUndefined(yield* poll(waiter), "the permit is held")
        // Nodes 0 and 1 hand the slot over; node 2 is down. Nodes 0 and 1 are one server: one vote of the two needed.
        yield* control.setDown(2, true)
        yield* fork(holder.release)
        yield* TestClock.adjust("5 millis")
        assert.isUndefined(yield* poll(waiter), "not held on one server's hand-over counted twice")
        // Its leaving waits for node 2's answer, or for the per-node timeout on the test's clock.
        yield* control.setDown(2, false)
        const left = yield* fork(Fiber.interrupt(waiter))
        yield* TestClock.adjust("1 second")
        yield* Fiber.join(left)
      }).pipe(Effect.provide(memoryWithOneServerTwice)))

    it.effect("bad input fails with InvalidOptions naming the option, and nothing is sent", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const options = (limit: unknown) => ({ limit, ttl: "1 second" }) as Semaphore.PermitOptions
        const invalid = (effect: Effect.Effect<unknown, unknown, Redlock.Redlock | Scope.Scope>) =>
          Effect.map(Effect.exit(Effect.scoped(effect)), invalidOf)
        for (const limit of [0, 1.5, 65, -1, "2", undefined]) {
          const error = yield* invalid(Semaphore.acquire("r", options(limit)))
          assert.strictEqual(error.option, "limit", String(limit))
        }
        for (const resource of [["a", "b"], "", "a\u0000b"] as const) {
          const error = yield* invalid(Semaphore.acquire(resource as unknown as string, options(2)))
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
        assert.strictEqual(yield* control.operations(0), 0)
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
        yield* control.setFailure(3, failWith("Unavailable"))
        const grants = yield* Effect.forEach(reachable, (nodes) =>
          Effect.gen(function*() {
            const seen = [0, 1, 2].map((node) => nodes.includes(node as never) ? all[node] : all[3])
            const manager = yield* Redlock.make({ restartQuarantine: false }).pipe(
              Effect.provideService(RedisNode.RedisNodes, seen)
            )
            const exit = yield* Effect.exit(
              manager.acquirePermit("reports", { limit, ttl: "10 seconds", retry: Redlock.noRetry })
            )
            return Exit.isSuccess(exit)
          }))
        assert.deepStrictEqual(grants, [true, true, false])
        // Every client tries slot 0 first: client 1 finds it held on B (client 0's) and free on C, and its
        // first round splits (B sets slot 1, C slot 0); the round after, from slot 1, is granted.
      }).pipe(Effect.scoped, withFixedRandom([0]), Effect.provide(RedisNode.layerMemory(4))))
  })

  layer(layerFleet(5), { timeout: 60_000, excludeTestServices: true })("semaphore on 5 redis-servers", (it) => {
    it.effect("six fibers share three permits: never more than three at once, and all of them run", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        let inside = 0
        let most = 0
        let done = 0
        const retry = Schedule.spaced("5 millis").pipe(Schedule.jittered, atMost(2000))
        const work = Effect.gen(function*() {
          most = Math.max(most, ++inside)
          yield* Effect.sleep("15 millis")
          inside--
          done++
        }).pipe(Semaphore.withPermit("builds", { limit: 3, ttl: "5 seconds", retry }))
        yield* Effect.forEach(Array.from({ length: 6 }), () => Effect.repeat(work, { times: 4 }), {
          concurrency: "unbounded"
        }).pipe(
          Effect.provide(redis(fleet.nodes))
        )
        assert.strictEqual(done, 30)
        assert.strictEqual(most, 3, "three holders at a time, not more (and the permits were used)")
        yield* expectEmpty(fleet)
      }).pipe(Effect.scoped))

    it.effect("interruption at random points of a permit's acquisition leaves no slot key; the holders' keys survive", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const waiter = yield* redisManager(fleet.nodes)
        const holder = yield* redisManager(fleet.nodes)
        const random = seededRandom(7)
        const options: Semaphore.PermitOptions = { limit: 2, ttl: "10 seconds", nodeTimeout: "50 millis", retry: fast }
        for (let i = 0; i < 60; i++) {
          // Both permits held (the waiter interrupted while waiting or mid-round), or
          // one (interrupted while taking the other); every fourth with a node paused.
          const held = i % 3 === 0 ? 2 : 1
          const paused = i % 4 === 1
          yield* Effect.scoped(Effect.gen(function*() {
            const holders = yield* Effect.all(
              Array.from({ length: held }, () => holder.acquirePermit(`p${i}`, options))
            )
            if (paused) yield* fleet.servers[i % 5].pause
            const fiber = yield* fork(waiter.acquirePermit(`p${i}`, options))
            yield* Effect.sleep(Duration.millis(random() * 6))
            yield* Fiber.interrupt(fiber)
            if (paused) yield* fleet.servers[i % 5].resume
            for (const { keys, value } of holders) {
              const values = yield* Effect.forEach(fleet.servers, (server) => server.call("GET", keys[0]))
              assert.deepStrictEqual(
                values,
                [value, value, value, value, value],
                "a holder's slot survives the waiter's end"
              )
            }
          }))
          yield* expectEmpty(fleet)
        }
      }).pipe(Effect.scoped))

    it.effect("a waiter that runs out of retries is refused for the resource, with every round counted", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const manager = yield* redisManager(fleet.nodes)
        const options: Semaphore.PermitOptions = { limit: 2, ttl: "10 seconds", retry: Schedule.recurs(2) }
        yield* manager.acquirePermit("exports", options)
        yield* manager.acquirePermit("exports", options)
        const refusal = refusalOf(yield* Effect.exit(Effect.scoped(manager.acquirePermit("exports", options))))
        assert.deepStrictEqual(refusal.resources, ["exports"])
        // Four rounds (the first, its re-check once the new subscriptions were ready, two retries), each trying
        // both slots in one call per node.
        assert.strictEqual(refusal.attempts, 4)
        assert.strictEqual(refusal.reason, "Held")
      }).pipe(Effect.scoped, Effect.andThen(Effect.flatMap(RedisFleet, expectEmpty))))

    it.effect("a release wakes a waiter through the servers' announcements, long before its schedule's next round", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const manager = yield* redisManager(fleet.nodes)
        const options: Semaphore.PermitOptions = { limit: 1, ttl: "20 seconds", retry: Schedule.spaced("30 seconds") }
        const held = yield* manager.acquirePermit("reports", options)
        const waiter = yield* fork(Effect.timed(Effect.scoped(manager.acquirePermit("reports", options))))
        yield* Effect.sleep("300 millis")
        assert.isUndefined(yield* poll(waiter), "the permit is held")
        yield* manager.release(held)
        const [waited] = yield* Fiber.join(waiter).pipe(Effect.timeout("5 seconds"))
        assert.isBelow(Duration.toMillis(waited), 3_000)
        yield* expectEmpty(fleet)
      }).pipe(Effect.scoped))
  })
}
