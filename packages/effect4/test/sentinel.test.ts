/**
 * A Sentinel-managed master as one node on this line (issue 33, item 3): a
 * master, its replica and a Sentinel. The master is killed under a holder:
 * the node follows the failover, the lock granted with `waitForReplicas`
 * survives on the promoted replica, and a manager that keeps the restart
 * quarantine does not count the new master's vote yet, saying why.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { Redlock } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import { layerLocal, RedisFleet } from "./fleet.js"

/** A lock manager over the nodes, open until the test's scope closes. */
const managerOver = (nodes: ReadonlyArray<Ioredis.NodeOptions>, options: Redlock.Options) =>
  Effect.map(Layer.build(Redlock.layer(options).pipe(Layer.provide(Ioredis.layer(nodes)))), (context) =>
    Context.get(context, Redlock.Redlock))

describe("a Sentinel-managed master as one node", () => {
  it.live("the node follows a failover; the lock granted with waitForReplicas survives; the new master abstains for the quarantine", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet
      const [master] = fleet.servers
      const [replica] = fleet.replicas
      while ((yield* Effect.promise(() => master.admin.wait(1, 100))) < 1) yield* Effect.sleep("100 millis")
      const sentinel = { master: "fleet-0", sentinels: fleet.sentinels.map((port) => ({ host: "127.0.0.1", port })) }
      // The fleet was started a moment ago: the quarantine would keep the first master from voting, for the holder only.
      const holder = yield* managerOver([{ sentinel, waitForReplicas: { replicas: 1, timeout: "200 millis" } }], { restartQuarantine: false })
      // Its node waits for no replica: the promoted master will have none.
      const guarded = yield* managerOver([{ sentinel }], { maxTtl: "10 seconds" })
      assert.strictEqual(holder.nodes[0].name, "fleet-0 (sentinel)")
      const before = holder.nodes[0].run()
      const lock = yield* holder.acquire("failover", { ttl: "10 seconds", nodeTimeout: "1 second" })
      assert.strictEqual(yield* Effect.promise(() => replica.admin.get("redlock:failover")), lock.value)

      yield* master.kill
      yield* Effect.sync(() => [holder.nodes[0].run(), guarded.nodes[0].run()]).pipe(
        Effect.filterOrFail(
          (runs) => runs.every((run) => run._tag === "Known" && before._tag === "Known" && run.id !== before.id),
          (runs) => new Error(`not on the new master yet: ${JSON.stringify(runs)}`)
        ),
        Effect.retry(Schedule.max([Schedule.spaced("100 millis"), Schedule.recurs(200)]))
      )
      const refused = yield* Effect.flip(Effect.scoped(holder.acquire("failover", { ttl: "1 second", retry: Redlock.noRetry })))
      assert.strictEqual(refused._tag, "LockNotAcquired")
      const abstained = yield* Effect.flip(Effect.scoped(guarded.acquire("other", { ttl: "1 second", retry: Redlock.noRetry })))
      assert.strictEqual(abstained._tag, "LockNotAcquired")
      const outcome = abstained._tag === "LockNotAcquired" ? abstained.outcomes[0] : undefined
      assert.strictEqual(outcome?._tag, "Abstained", JSON.stringify(outcome))
      assert.include((outcome as { readonly detail: string }).detail, "another server than before")
    }).pipe(Effect.scoped, Effect.provide(layerLocal(1, { replicas: true, sentinels: true }))), 60_000)
})
