/**
 * The test fleet itself: servers start on free ports, fault controls act on
 * the right process, and every process it started is gone when it stops.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import { isRunning as alive } from "@effect-redlock/fleet/servers.js"
import * as Redlock from "../src/Redlock.js"
import { redis } from "@effect-redlock/effect-suites/support.js"

/** Wait (bounded) until a process has exited: the OS reaps it shortly after SIGKILL. */
const gone = (pid: number | undefined) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100 && alive(pid); i++) yield* Effect.sleep("20 millis")
    return !alive(pid)
  })

describe("local redis-server fleet as an Effect 3 layer", () => {
  // The fleet's own behaviour is tested plainly in packages/fleet/test/fleet.test.ts.
  it.live("its controls are effects of that server, and closing the layer's scope ends every process, a paused one too", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const fleet = Context.get(yield* Layer.buildWithScope(RedisFleet.layerLocal(2), scope), RedisFleet.RedisFleet)
      const [first, second] = fleet.servers
      yield* first.call("SET", "k", "v")
      yield* first.kill
      yield* first.start
      assert.deepStrictEqual(yield* fleet.dbsizes, [0, 0], "a restart without persistence loses every key")
      const pids = [first.pid(), second.pid()]
      assert.isTrue(pids.every(alive))
      yield* first.pause
      const paused = yield* Effect.exit(first.call("PING").pipe(Effect.timeout("200 millis")))
      assert.isTrue(Exit.isFailure(paused), "a paused server does not answer")
      yield* Scope.close(scope, Exit.void)
      assert.isTrue(yield* gone(pids[0]))
      assert.isTrue(yield* gone(pids[1]))
    }))
})

const engine = await Effect.runPromise(RedisFleet.containerEngineAvailable)
if (!engine) {
  console.warn(
    "fleet.test.ts: no container engine answers, so the testcontainers fleet is skipped; " +
      "the local redis-server fleet runs every suite."
  )
}

describe("testcontainers fleet", () => {
  it.live.skipIf(!engine)(
    "the same fleet from containers: lock, pause a node, kill and start it",
    () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const redlock = Context.get(yield* Layer.build(redis(fleet.nodes)), Redlock.Redlock)
        yield* fleet.servers[0].pause
        const lock = yield* redlock.acquire("r", { ttl: "5 seconds", nodeTimeout: "100 millis" })
        assert.strictEqual(lock.outcomes.filter((o) => o._tag === "Ok").length, 2)
        yield* fleet.servers[0].resume
        yield* redlock.release(lock)
        yield* fleet.servers[1].kill
        yield* fleet.servers[1].start
        assert.strictEqual(yield* fleet.servers[1].call("DBSIZE"), 0)
      }).pipe(Effect.scoped, Effect.provide(RedisFleet.layerContainers(3))),
    120_000
  )
})
