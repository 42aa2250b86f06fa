/**
 * A node that stops answering (SIGSTOP: its connection stays open, nothing
 * comes back) while locks go on over the others: what waits for it stays
 * bounded. A soak of one minute, bounded in time and in request rate.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Logger, Random, Schedule } from "effect"
import { Redis } from "ioredis"
import * as V8 from "node:v8"
import * as Vm from "node:vm"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Redlock from "../src/Redlock.js"
import * as Ioredis from "../src/RedisNode/Ioredis.js"
import * as ReleaseSubscriber from "@effect-redlock/core/nodes/ioredis/releaseSubscriber.js"

V8.setFlagsFromString("--expose-gc")
const gc = Vm.runInNewContext("gc") as () => void

/** Commands a client sent or queued that have not been answered (ioredis's own queues). */
const pendingOf = (client: Redis) => {
  const queues = client as unknown as { commandQueue: { length: number }; offlineQueue: { length: number } }
  return queues.commandQueue.length + queues.offlineQueue.length
}

const heapMegabytes = () => {
  gc()
  return process.memoryUsage().heapUsed / 2 ** 20
}

// Well under a minute: vitest's worker gives up on its own messages to the runner after 60 s
// without an answer, which a loaded CI machine running a longer test once reached.
const soakSeconds = 30
const sampleAtSeconds = 10

layer(RedisFleet.layerLocal(3), { timeout: 30_000, excludeTestServices: true })("a hung node", (it) => {
  it.scoped(
    `paused for ${soakSeconds} s under steady traffic: heap and pending commands stay flat, locks go on`,
    () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        // Clients the test owns, set up as the library sets up its own, so that their queues can be read.
        const clients = yield* Effect.forEach(fleet.nodes, (node) =>
          Effect.acquireRelease(
            Effect.sync(() =>
              new Redis({
                host: node.host!,
                port: node.port!,
                enableOfflineQueue: false,
                autoResendUnfulfilledCommands: false,
                maxRetriesPerRequest: 0
              })
            ),
            (client) => Effect.sync(() => client.disconnect())
          ))
        const context = yield* Layer.build(
          Redlock.layer({ restartQuarantine: false }).pipe(
            Layer.provide(Ioredis.layer(clients.map((client) => ({ client }))))
          )
        )
        const redlock = Context.get(context, Redlock.Redlock)
        const hung = 2

        // Six loops over twenty keys, each at most ~50 locks a second: contention makes waiters, which subscribe.
        let granted = 0
        // Releases that miss the hung node are logged as warnings: counted here, not printed by the
        // thousand (on a loaded machine the live nodes also time out now and then, and each says so).
        let warnings = 0
        const countWarnings = Logger.replace(Logger.defaultLogger, Logger.make(() => void warnings++))
        const retry = Schedule.spaced("5 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(20)))
        const loop = Effect.gen(function*() {
          const key = `soak:${yield* Random.nextIntBetween(0, 20)}`
          yield* Effect.scoped(
            Effect.tap(redlock.acquire(key, { ttl: "2 seconds", retry }), () => Effect.sleep("2 millis"))
          ).pipe(Effect.tap(() => void granted++), Effect.ignore)
          yield* Effect.sleep("20 millis")
        }).pipe(Effect.forever, Effect.provide(countWarnings))
        const loops = yield* Effect.forEach(Array.from({ length: 6 }), () => Effect.fork(loop))
        // Hung once waiters have subscribed on it: its subscriber connection stays open, unanswered.
        yield* Effect.sleep("3 seconds")
        yield* fleet.servers[hung].pause
        yield* Effect.addFinalizer(() => fleet.servers[hung].resume)

        const sample = Effect.sync(() => ({
          heap: heapMegabytes(),
          pending: pendingOf(clients[hung]),
          subscriber: ReleaseSubscriber.pendingCommands(clients[hung]) ?? 0,
          granted
        }))
        yield* Effect.sleep(`${sampleAtSeconds} seconds`)
        const early = yield* sample
        yield* Effect.sleep(`${soakSeconds - sampleAtSeconds} seconds`)
        const late = yield* sample
        yield* Effect.forEach(loops, Fiber.interrupt)
        console.log(
          `hung node soak: at ${sampleAtSeconds} s ${JSON.stringify(early)}; at ${soakSeconds} s ${
            JSON.stringify(late)
          }; ${warnings} log lines`
        )

        assert.isAbove(late.granted - early.granted, 1000, "locks went on over the two live nodes")
        assert.isAtMost(late.pending, Ioredis.defaultMaxPendingCommands, "commands waiting on the hung node")
        assert.isAtMost(late.pending, early.pending + 50, "no growth after the first seconds")
        assert.isAtMost(late.subscriber, 40, "at most a SUBSCRIBE and an UNSUBSCRIBE per key on the hung server")
        assert.isBelow(late.heap - early.heap, 8, "heap (MB, after a full GC) grew by less than 8 MB")
      }),
    { timeout: (soakSeconds + 30) * 1000 }
  )
})
