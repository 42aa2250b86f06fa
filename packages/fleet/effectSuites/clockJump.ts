/**
 * Kleppmann's clock jump through the Effect API, on five durable servers
 * (AOF, appendfsync always: the restart quarantine is not in play), one of
 * them with its wall clock shifted by the test fleet's shim: a manager that
 * read the server before its clock leapt forward is refused the resource
 * while the first holder still holds it. The nodes' readings themselves are
 * core's (packages/core/test/clock-jump.test.ts).
 *
 * One suite, run by both Effect lines (each package's test/clockJump.test.ts).
 */
import { assert, Duration, Effect, layer, layerFleet, RedisFleet, Redlock, RedlockError } from "@effect-redlock/line"
import { redisManager } from "./support.js"

export const clockJumpSuite = () => {
  layer(layerFleet(5, { persistence: true, shiftableClocks: true }), { timeout: 60_000, excludeTestServices: true })(
    "Kleppmann's clock jump on 5 durable servers, one with its clock shifted",
    (it) => {
      it.effect("a manager that read C before its clock leapt 20 s forward is refused while holder 1 holds; C abstains, saying why", () =>
        Effect.gen(function*() {
          const fleet = yield* RedisFleet
          yield* fleet.reset
          const once = { ttl: "10 seconds", retry: Redlock.noRetry, nodeTimeout: "200 millis" } as const
          // The quarantine on (the servers are durable: they vote at once); a jump makes a node sit it out.
          const holder2 = yield* redisManager(fleet.nodes, { restartQuarantine: true })
          // Holder 2 reads every server's clock before the jump (a vote's reading, and one a second).
          yield* Effect.scoped(holder2.acquire("jump:warm-up", once))
          const [, , c, d, e] = fleet.servers
          yield* Effect.all([d.kill, e.kill], { concurrency: "unbounded" })
          const holder1 = yield* redisManager(fleet.nodes, { restartQuarantine: true })
          const lock = yield* holder1.acquire("jump", once)
          yield* Effect.all([d.start, e.start], { concurrency: "unbounded" })
          fleet.shiftClock(2, 20_000)
          assert.strictEqual(Number(yield* c.call("EXISTS", "redlock:jump")), 0, "C's copy expired at the jump")
          // Holder 2's connections to D and E are back.
          yield* Effect.sleep("1500 millis")
          const refused = yield* Effect.flip(Effect.scoped(holder2.acquire("jump", once)))
          assert.instanceOf(refused, RedlockError.LockNotAcquired)
          assert.match(refused.message, /clock jumped forward 2\d\.\d s/)
          assert.isAbove(Duration.toMillis(yield* lock.remaining), 5_000, "holder 1 still holds it")
          fleet.shiftClock(2, 0)
        }).pipe(Effect.scoped))
    }
  )
}
