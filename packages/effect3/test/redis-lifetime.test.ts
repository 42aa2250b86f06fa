/**
 * Lock lifetime against 5 real redis-servers: automatic extension, loss
 * while a majority hangs, bounded extensions, release after expiry.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Exit, Fiber, Option } from "effect"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Redlock from "../src/Redlock.js"
import { LockLost } from "../src/RedlockError.js"
import { expectEmpty, failureOf, redisManager } from "./support.js"

layer(RedisFleet.layerLocal(5), { timeout: 60_000, excludeTestServices: true })("lock lifetime on 5 redis-servers", (it) => {
  it.scoped("autoExtend keeps a lock across 10 x ttl; another client never gets it meanwhile", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const holder = yield* redisManager(fleet.nodes)
      const other = yield* redisManager(fleet.nodes)
      const body = Effect.gen(function*() {
        const refused: Array<boolean> = []
        for (let i = 0; i < 10; i++) {
          yield* Effect.sleep("500 millis")
          const attempt = yield* Effect.exit(Effect.scoped(other.acquire("r", { ttl: "1 second", retry: Redlock.noRetry })))
          refused.push(Exit.isFailure(attempt))
        }
        return refused
      })
      const refused = yield* body.pipe(
        Redlock.withLock("r", { ttl: "500 millis", autoExtend: true }),
        Effect.provideService(Redlock.Redlock, holder)
      )
      assert.deepStrictEqual(refused, Array(10).fill(true))
      yield* expectEmpty(fleet)
    }))

  it.scoped("a majority paused during the hold: the loss is decided by the deadline and the body is interrupted", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* redisManager(fleet.nodes)
      let interrupted = false
      const started = performance.now()
      const fiber = yield* Effect.fork(Effect.exit(
        Effect.never.pipe(
          Effect.onInterrupt(() => Effect.sync(() => void (interrupted = true))),
          Redlock.withLock("r", { ttl: "500 millis", nodeTimeout: "50 millis", autoExtend: true }),
          Effect.provideService(Redlock.Redlock, redlock)
        )
      ))
      yield* Effect.sleep("300 millis")
      yield* Effect.forEach([0, 1, 2], (i) => fleet.servers[i].pause)
      const exit = yield* Fiber.join(fiber)
      const elapsed = performance.now() - started
      yield* Effect.forEach([0, 1, 2], (i) => fleet.servers[i].resume)
      const error = failureOf(exit)
      assert.instanceOf(error, LockLost)
      assert.strictEqual((error as LockLost).reason, "Expired")
      assert.isTrue(interrupted, "the body was interrupted")
      // Extended at ~250 ms, before the pause, to a deadline near 740 ms; no extension succeeds after it.
      // Loose bounds: a loaded machine delays timers, never the other way round.
      assert.isTrue(elapsed > 400 && elapsed < 3000, `lost after ${Math.round(elapsed)} ms`)
    }))

  it.scoped("keys deleted behind the holder's back: the next extension finds them gone and the body is interrupted", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* redisManager(fleet.nodes)
      const started = performance.now()
      const fiber = yield* Effect.fork(Effect.exit(Effect.never.pipe(
        Redlock.withLock("r", { ttl: "2 seconds", autoExtend: true }),
        Effect.provideService(Redlock.Redlock, redlock)
      )))
      yield* Effect.sleep("200 millis")
      yield* Effect.forEach(fleet.servers, (server) => server.call("DEL", "redlock:r"), { discard: true })
      const exit = yield* Fiber.join(fiber)
      const elapsed = performance.now() - started
      assert.strictEqual((failureOf(exit) as LockLost).reason, "NotHeld")
      // The extension at half the ttl (~1 s) hears it, well before the deadline (~1.98 s).
      assert.isTrue(elapsed > 900 && elapsed < 1900, `lost after ${Math.round(elapsed)} ms`)
    }))

  it.scoped("maxExtensions stops automatic extension; the body is then cut off", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* redisManager(fleet.nodes, { maxExtensions: 3 })
      const started = performance.now()
      const exit = yield* Effect.exit(Effect.never.pipe(
        Redlock.withLock("r", { ttl: "500 millis", autoExtend: true }),
        Effect.provideService(Redlock.Redlock, redlock)
      ))
      const elapsed = performance.now() - started
      assert.strictEqual((failureOf(exit) as LockLost).reason, "Expired")
      // Three extensions about every 250 ms, then the last validity of ~490 ms runs out (~1.2 s).
      assert.isTrue(elapsed > 900 && elapsed < 4000, `lost after ${Math.round(elapsed)} ms`)
    }))

  it.scoped("a release after the lock expired answers NotHeld at once and leaves nothing behind", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* redisManager(fleet.nodes)
      const lock = yield* redlock.acquire("r", { ttl: "100 millis" })
      yield* Effect.sleep("150 millis")
      const started = performance.now()
      const result = yield* redlock.release(lock)
      const elapsed = performance.now() - started
      assert.strictEqual(result.status, "NotHeld")
      assert.isBelow(elapsed, 500, `release took ${Math.round(elapsed)} ms (no retries, no waiting)`)
      yield* expectEmpty(fleet)
      // It was lost before it was released: the reason says so (and the lost-lock metric counts it).
      const extended = yield* Effect.exit(redlock.extend(lock))
      assert.strictEqual((failureOf(extended) as LockLost).reason, "Expired")
    }))

  it.scoped("extend on real nodes sets the new ttl everywhere", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* redisManager(fleet.nodes)
      // A node timeout of its own: the derived 10 ms ran out on a loaded machine (this test is about the ttl).
      const lock = yield* redlock.acquire("r", { ttl: "1 second", nodeTimeout: "500 millis" })
      yield* redlock.extend(lock, "30 seconds")
      for (const server of fleet.servers) {
        const pttl = Number(yield* server.call("PTTL", "redlock:r"))
        assert.isTrue(pttl > 29_000 && pttl <= 30_000, `pttl ${pttl}`)
      }
      assert.strictEqual(lock.extensions, 1)
      const view = yield* redlock.inspect("r")
      assert.deepStrictEqual(view.holder, Option.some(lock.value))
    }))
})
