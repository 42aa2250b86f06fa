/**
 * Waiting for replicas (issue 33, item 4) on this line: three masters with a
 * replica each. A grant reaches the replicas before acquire returns; a node
 * whose replica is paused fails, and with two of them the attempt is refused
 * and leaves no key; bad input is refused before any connection.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { Redlock } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import { expectEmpty, layerLocal, RedisFleet } from "./fleet.js"

const waiting = { replicas: 1, timeout: "200 millis" } as const

/** Each replica in sync with its master. */
const replicasInSync = (fleet: RedisFleet["Service"]) =>
  Effect.forEach(fleet.servers, (server) =>
    Effect.gen(function*() {
      while ((yield* Effect.promise(() => server.admin.wait(1, 100))) < 1) yield* Effect.sleep("100 millis")
    }), { discard: true })

describe("waitForReplicas (3 masters, a replica each)", () => {
  it.live("a grant reaches the replicas; two paused replicas refuse the attempt, and it leaves no key", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet
      yield* replicasInSync(fleet)
      const nodes = fleet.nodes.map((node) => ({ ...node, waitForReplicas: waiting }))
      yield* Effect.provide(
        Effect.gen(function*() {
          const redlock = yield* Redlock.Redlock
          const lock = yield* Effect.scoped(Effect.gen(function*() {
            const held = yield* redlock.acquire("orders", { ttl: "10 seconds", nodeTimeout: "1 second" })
            // Each node that counted (a quorum at least) counted once its replica had the key.
            const counted = fleet.replicas.filter((_, index) => held.outcomes[index]._tag === "Ok")
            assert.isAtLeast(counted.length, 2)
            for (const replica of counted) {
              assert.strictEqual(yield* Effect.promise(() => replica.admin.get("redlock:orders")), held.value)
            }
            return held
          }))
          assert.isString(lock.value)
          yield* fleet.replicas[0].pause
          yield* fleet.replicas[1].pause
          const refused = yield* Effect.flip(Effect.scoped(
            redlock.acquire("orders", { ttl: "10 seconds", nodeTimeout: "1 second", retry: Redlock.noRetry })
          ))
          assert.strictEqual(refused._tag, "LockNotAcquired")
          if (refused._tag === "LockNotAcquired") {
            const failed = refused.outcomes.filter((outcome) => outcome._tag === "Failed")
            assert.lengthOf(failed, 2)
            for (const outcome of failed) {
              assert.match(outcome._tag === "Failed" ? outcome.error.detail : "", /WAIT: 0 of 1 replicas/)
            }
          }
          yield* expectEmpty(fleet.servers)
          yield* fleet.replicas[0].resume
          yield* fleet.replicas[1].resume
        }),
        Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(Ioredis.layer(nodes)))
      )
    }).pipe(Effect.provide(layerLocal(3, { replicas: true }))), 60_000)

  it.live("a permit handed over by a release is held only once the waiter's own call found it on the replicas", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet
      yield* replicasInSync(fleet)
      const nodes = fleet.nodes.map((node) => ({ ...node, waitForReplicas: waiting }))
      const manager = Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(Ioredis.layer(nodes)))
      const options = { limit: 1, ttl: "10 seconds", nodeTimeout: "1 second", retry: Schedule.spaced("100 millis") } as const
      const held = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // Holder and waiter: managers of their own (their own connections), as two processes would be.
      const holder = yield* Effect.forkChild(Effect.provide(
        Effect.scoped(Effect.gen(function*() {
          yield* (yield* Redlock.Redlock).acquirePermit("exports", options)
          yield* Deferred.succeed(held, undefined)
          yield* Deferred.await(release)
        })),
        manager
      ))
      yield* Deferred.await(held)
      let grantedAt: number | undefined
      const waiter = yield* Effect.forkChild(Effect.provide(
        Effect.scoped(Effect.gen(function*() {
          const permit = yield* (yield* Redlock.Redlock).acquirePermit("exports", options)
          grantedAt = Date.now()
          // Read while held: each node that counted has its replica holding the slot.
          const counted = fleet.replicas.filter((_, index) => permit.outcomes[index]._tag === "Ok")
          const onReplicas = yield* Effect.forEach(counted, (replica) =>
            Effect.promise(() => replica.admin.get(`redlock:${permit.resources[0]}`)))
          return { counted: counted.length, onReplicas, value: permit.value }
        })),
        manager
      ))
      // The waiter has tried once and stands in line.
      yield* Effect.sleep("300 millis")
      yield* fleet.replicas[0].pause
      yield* fleet.replicas[1].pause
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      yield* Effect.sleep("1 second")
      assert.isUndefined(grantedAt, "granted while two of three replicas were paused")
      yield* fleet.replicas[0].resume
      yield* fleet.replicas[1].resume
      const granted = yield* Fiber.join(waiter)
      assert.isAtLeast(granted.counted, 2)
      assert.deepStrictEqual(granted.onReplicas, granted.onReplicas.map(() => granted.value))
    }).pipe(Effect.provide(layerLocal(3, { replicas: true }))), 60_000)

  it.effect("bad input is refused before any connection is opened", () =>
    Effect.gen(function*() {
      for (const bad of [{ replicas: 0, timeout: "1 second" }, { replicas: 1, timeout: "forever" }, "yes"]) {
        const error = yield* Effect.flip(Effect.scoped(Ioredis.make({ host: "127.0.0.1", port: 1, waitForReplicas: bad as never })))
        assert.strictEqual(error._tag, "InvalidOptions")
        assert.match(error.option, /^waitForReplicas/)
      }
    }))
})
