/**
 * Waiting for replicas (issue 33, item 4): three masters, each with one
 * replica, on 127.0.0.1. With `waitForReplicas`, a node's vote counts only
 * once its replica acknowledged the write; a node whose replica is paused
 * fails as Unavailable, and a refused attempt leaves no key behind. A slot
 * that releases hand a waiter counts only through the waiter's own call,
 * which waits for the replicas (the release waited for none).
 *
 * One suite, run by both Effect lines (each package's test/replicas.test.ts).
 */
import {
  assert,
  atMost,
  Clock,
  describe,
  Effect,
  Exit,
  Fiber,
  fork,
  inScope,
  Ioredis,
  it,
  layer,
  layerFleet,
  poll,
  RedisFleet,
  Redlock,
  Schedule,
  Scope
} from "@effect-redlock/line"
import { inspect } from "node:util"
import { invalidOf, redisManager, refusalOf } from "./support.js"

const waiting = { replicas: 1, timeout: "200 millis" } as const

/** The fleet emptied, its replicas in sync, and a manager whose nodes wait for them. */
const waitingManager = Effect.gen(function*() {
  const fleet = yield* RedisFleet
  yield* fleet.reset
  yield* fleet.replicasInSync
  const redlock = yield* redisManager(fleet.nodes.map((node) => ({ ...node, waitForReplicas: waiting })))
  return { fleet, redlock }
})

export const replicasSuite = () => {
  layer(layerFleet(3, { replicas: true }), { timeout: 60_000, excludeTestServices: true })(
    "waiting for replicas, 3 masters with a replica each",
    (it) => {
      it.effect("a grant counts once the replicas have it: the replica of each node that counted holds the lock's key when acquire returns", () =>
        Effect.gen(function*() {
          const { fleet, redlock } = yield* waitingManager
          const lock = yield* redlock.acquire("orders", { ttl: "10 seconds", nodeTimeout: "1 second" })
          // Each node that counted (a quorum at least) counted once its replica had the key.
          const counted = fleet.replicas.filter((_, index) => lock.outcomes[index]._tag === "Ok")
          assert.isAtLeast(counted.length, 2)
          const onReplicas = yield* Effect.forEach(counted, (replica) => replica.call("GET", "redlock:orders"))
          assert.deepStrictEqual(onReplicas, counted.map(() => lock.value))
          // An extension waits for the replicas too, and counts: a quorum's replicas have it when it returns
          // (the third node's may land just after).
          const extended = yield* redlock.extend(lock, "20 seconds")
          const ttls = yield* Effect.forEach(fleet.replicas, (replica) => replica.call("PTTL", "redlock:orders"))
          assert.isAbove(ttls.map(Number).sort((a, b) => b - a)[1], 10_000, `replicas' ttls: ${ttls.join(", ")}`)
          assert.strictEqual(extended.value, lock.value)
        }).pipe(Effect.scoped))

      it.effect("a node whose replica is paused does not count; with two of three, the attempt is refused and leaves no key", () =>
        Effect.gen(function*() {
          const { fleet, redlock } = yield* waitingManager
          yield* fleet.replicas[0].pause
          const one = yield* Effect.scoped(Effect.map(
            redlock.acquire("orders", { ttl: "10 seconds", nodeTimeout: "1 second", retry: Redlock.noRetry }),
            (lock) => lock.outcomes.map((outcome) => outcome._tag)
          ))
          // Granted by the other two (the first one's answer was not awaited, or failed).
          assert.deepStrictEqual(one.slice(1), ["Ok", "Ok"])
          assert.notStrictEqual(one[0], "Ok")
          yield* fleet.replicas[1].pause
          const second = yield* Effect.exit(Effect.scoped(
            redlock.acquire("orders", { ttl: "10 seconds", nodeTimeout: "1 second", retry: Redlock.noRetry })
          ))
          // Seen once in CI (granted): what the masters say of their replicas, should it come back.
          if (Exit.isSuccess(second)) {
            const replication = yield* Effect.forEach(fleet.servers, (server) => server.call("INFO", "replication"))
            assert.fail(
              `granted with two replicas paused: ${inspect(second.value.outcomes)}\n${replication.join("\n")}`
            )
          }
          const refused = refusalOf(second)
          assert.strictEqual(refused.reason, "NoQuorum")
          const failed = refused.outcomes.filter((outcome) => outcome._tag === "Failed")
          assert.lengthOf(failed, 2)
          for (const outcome of failed) {
            assert.match(
              outcome._tag === "Failed" ? outcome.error.detail : "",
              /WAIT: 0 of 1 replicas acknowledged within 200 ms/
            )
          }
          // The refused attempt deleted what it set on the masters whose replica did not answer.
          assert.deepStrictEqual(yield* fleet.dbsizes, [0, 0, 0])
          yield* Effect.forEach(fleet.replicas, (replica) => replica.resume, { discard: true })
        }).pipe(Effect.scoped))

      it.effect("a permit handed over by a release counts once the waiter's own call found it on the replicas", () =>
        Effect.gen(function*() {
          const { fleet, redlock: holder } = yield* waitingManager
          const waiter = yield* redisManager(fleet.nodes.map((node) => ({ ...node, waitForReplicas: waiting })))
          const options = {
            limit: 1,
            ttl: "10 seconds",
            nodeTimeout: "1 second",
            retry: Schedule.spaced("100 millis").pipe(atMost(200))
          } as const
          const holding = yield* Scope.make()
          yield* inScope(holding)(holder.acquirePermit("exports", options))
          // Held in the test's scope, so that the replicas can be read while it is held.
          const queued = yield* fork(Effect.map(
            waiter.acquirePermit("exports", options),
            (permit) => ({ key: `redlock:${permit.resources[0]}`, value: permit.value, outcomes: permit.outcomes })
          ))
          // The waiter has tried once and stands in line on every node.
          yield* Effect.sleep("300 millis")
          yield* fleet.replicas[0].pause
          yield* fleet.replicas[1].pause
          // The release hands the slot to the waiter on every node; two of their replicas cannot have it.
          yield* Scope.close(holding, Exit.void)
          yield* Effect.sleep("1 second")
          assert.isUndefined(yield* poll(queued), "granted while two of three replicas were paused")
          yield* Effect.forEach(fleet.replicas, (replica) => replica.resume, { discard: true })
          const permit = yield* Fiber.join(queued)
          const counted = fleet.replicas.filter((_, index) => permit.outcomes[index]._tag === "Ok")
          assert.isAtLeast(counted.length, 2)
          const onReplicas = yield* Effect.forEach(counted, (replica) => replica.call("GET", permit.key))
          assert.deepStrictEqual(onReplicas, counted.map(() => permit.value))
        }).pipe(Effect.scoped))

      it.effect("a waiter handed a permit takes it at once: its own call confirms the slot, with no wait for a timeout or its schedule", () =>
        Effect.gen(function*() {
          const { fleet, redlock: holder } = yield* waitingManager
          const waiter = yield* redisManager(fleet.nodes.map((node) => ({ ...node, waitForReplicas: waiting })))
          // Neither the next retry (10 s) nor a node timeout (5 s) comes within the test's bound.
          const options = {
            limit: 1,
            ttl: "20 seconds",
            nodeTimeout: "5 seconds",
            retry: Schedule.spaced("10 seconds")
          } as const
          const holding = yield* Scope.make()
          yield* inScope(holding)(holder.acquirePermit("exports", options))
          const queued = yield* fork(waiter.acquirePermit("exports", options))
          yield* Effect.sleep("300 millis")
          const released = yield* Clock.currentTimeMillis
          yield* Scope.close(holding, Exit.void)
          const permit = yield* Fiber.join(queued)
          const tookMillis = (yield* Clock.currentTimeMillis) - released
          assert.isBelow(tookMillis, 2_000)
          // Counted by its own call: each outcome that counted took time (a handed slot's outcome takes none).
          const counted = permit.outcomes.filter((outcome) => outcome._tag === "Ok")
          assert.isAtLeast(counted.length, 2)
          for (const outcome of counted) assert.isAbove(outcome.millis, 0)
        }).pipe(Effect.scoped))
    }
  )

  describe("waitForReplicas, bad input", () => {
    it.effect("is checked before any connection is opened", () =>
      Effect.gen(function*() {
        for (const bad of [{ replicas: 0, timeout: "1 second" }, { replicas: 1, timeout: "forever" }, "yes"]) {
          const exit = yield* Effect.exit(Ioredis.make({ host: "127.0.0.1", port: 1, waitForReplicas: bad as never }))
          assert.match(invalidOf(exit).option, /^waitForReplicas/)
        }
      }).pipe(Effect.scoped))
  })
}
