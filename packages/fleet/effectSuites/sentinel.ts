/**
 * A Sentinel-managed master as one node (ioredis nodes' `sentinel` option),
 * on real servers: a master, its replica and a Sentinel started by the
 * project's fleet on 127.0.0.1. The master is killed under a holder: the
 * node follows the failover to the promoted replica, which keeps the lock a
 * grant with `waitForReplicas` put there, and which sits out the restart
 * quarantine (it may lack keys granted without waiting for replicas). (core's
 * contract.test.ts runs the node contract over such a node.)
 *
 * One suite, run by both Effect lines (each package's test/sentinel.test.ts).
 */
import {
  assert,
  Context,
  Duration,
  Effect,
  Ioredis,
  Layer,
  layer,
  layerFleet,
  masterName,
  NodeRedis,
  RedisFleet,
  Redlock,
  Schedule
} from "@effect-redlock/line"
import { Redis } from "ioredis"
import { invalidOf, refusalOf } from "./support.js"

const manager = (nodes: ReadonlyArray<Ioredis.NodeOptions>, options: Redlock.Options) =>
  Effect.map(
    Layer.build(Redlock.layer(options).pipe(Layer.provide(Ioredis.layer(nodes)))),
    (context) => Context.get(context, Redlock.Redlock)
  )

export const sentinelSuite = () => {
  layer(layerFleet(1, { replicas: true, sentinels: true }), { timeout: 60_000, excludeTestServices: true })(
    "a Sentinel-managed master as one node",
    (it) => {
      it.effect("the node follows a failover; the new master keeps a lock granted with waitForReplicas, and abstains for the quarantine", () =>
        Effect.gen(function*() {
          const fleet = yield* RedisFleet
          const sentinel = {
            master: masterName(0),
            sentinels: fleet.sentinels.map(({ port }) => ({ host: "127.0.0.1", port }))
          }
          yield* fleet.replicasInSync
          const node: Ioredis.NodeOptions = { sentinel, waitForReplicas: { replicas: 1, timeout: "200 millis" } }
          // The fleet was started a moment ago: the quarantine would keep the first master from voting, for this test only.
          const holder = yield* manager([node], { restartQuarantine: false })
          // Its nodes wait for no replica: the promoted master will have none.
          const guarded = yield* manager([{ sentinel }], { maxTtl: "10 seconds" })
          assert.strictEqual(holder.nodes[0].name, "fleet-0 (sentinel)")
          const before = holder.nodes[0].run()
          assert.strictEqual(before._tag, "Known")
          const lock = yield* holder.acquire("failover", { ttl: "10 seconds", nodeTimeout: "1 second" })
          assert.strictEqual(
            yield* fleet.replicas[0].call("GET", "redlock:failover"),
            lock.value,
            "on the replica when granted"
          )

          yield* fleet.servers[0].kill
          // The Sentinel sees the master down after 1 s and promotes the replica; the node reconnects through it.
          yield* Effect.retry(
            Effect.suspend(() => {
              const runs = [holder.nodes[0].run(), guarded.nodes[0].run()]
              return runs.every((run) => run._tag === "Known" && before._tag === "Known" && run.id !== before.id)
                ? Effect.void
                : Effect.fail(`not on the new master yet: ${JSON.stringify(runs)}`)
            }),
            { schedule: Schedule.spaced("100 millis"), times: 200 }
          )
          assert.strictEqual(
            yield* fleet.replicas[0].call("ROLE").pipe(Effect.map((role) => (role as Array<unknown>)[0])),
            "master"
          )

          // The lock survived: another client is refused while it is valid.
          refusalOf(
            yield* Effect.exit(Effect.scoped(holder.acquire("failover", { ttl: "1 second", retry: Redlock.noRetry })))
          )
          assert.isAbove(Duration.toMillis(yield* lock.remaining), 0, "and it is still valid")
          // A manager that keeps the quarantine does not count the new master's vote yet, and says why.
          // Its node is given a second to answer: the 10 ms default for a 1 s ttl times out on a loaded machine.
          const abstained = refusalOf(
            yield* Effect.exit(
              Effect.scoped(
                guarded.acquire("other", { ttl: "5 seconds", nodeTimeout: "1 second", retry: Redlock.noRetry })
              )
            )
          )
          const outcome = abstained.outcomes[0]
          assert.strictEqual(outcome._tag, "Abstained", JSON.stringify(outcome))
          assert.include((outcome as { readonly detail: string }).detail, "another server than before")
          yield* holder.release(lock)
        }).pipe(Effect.scoped))

      it.effect("a sentinel option that is malformed, or given to nodes that cannot follow one, is InvalidOptions", () =>
        Effect.gen(function*() {
          for (
            const sentinel of [{ master: "", sentinels: [{ host: "127.0.0.1", port: 1 }] }, {
              master: "m",
              sentinels: []
            }, { master: "m", sentinels: [{ host: "h", port: 0 }] }]
          ) {
            const error = invalidOf(yield* Effect.exit(Layer.build(Ioredis.layer([{ sentinel }]))))
            assert.include(error.message, "sentinel")
          }
          const unsupported = {
            sentinel: { master: "m", sentinels: [{ host: "127.0.0.1", port: 1 }] }
          } as unknown as NodeRedis.NodeOptions
          const error = invalidOf(yield* Effect.exit(Layer.build(NodeRedis.layer([unsupported]))))
          assert.include(error.message, "use ioredis or iovalkey nodes")
        }).pipe(Effect.scoped))
    }
  )

  // A user's client of a Sentinel-managed master (a fleet of its own: the test above fails its master over).
  layer(layerFleet(1, { replicas: true, sentinels: true }), { timeout: 60_000, excludeTestServices: true })(
    "a Sentinel-managed master as one node: a user's client",
    (it) => {
      it.effect("a user's client of a Sentinel's master is named by the master, not by ioredis's default host", () =>
        Effect.gen(function*() {
          const fleet = yield* RedisFleet
          const client = yield* Effect.acquireRelease(
            Effect.sync(() =>
              new Redis({
                name: masterName(0),
                sentinels: fleet.sentinels.map(({ port }) => ({ host: "127.0.0.1", port }))
              })
            ),
            (client) => Effect.sync(() => client.disconnect())
          )
          const redlock = yield* manager([{ client }], { restartQuarantine: false })
          assert.strictEqual(redlock.nodes[0].name, `${masterName(0)} (sentinel)`)
          const lock = yield* redlock.acquire("named", { ttl: "10 seconds" })
          assert.strictEqual(yield* fleet.servers[0].call("GET", "redlock:named"), lock.value)
          yield* redlock.release(lock)
        }).pipe(Effect.scoped))
    }
  )
}
