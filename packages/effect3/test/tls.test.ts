/**
 * Locks over servers that speak TLS only (the fleet's `tls`: its own
 * self-signed certificate for 127.0.0.1), as managed Redis services do: nodes
 * of each driver that trust the certificate lock, and their waiters hear
 * releases over TLS subscribers; a node that does not trust it, or speaks
 * plain TCP to a TLS port, fails at once with a typed reason, never hangs.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Redlock from "../src/Redlock.js"
import type * as RedisNode from "../src/RedisNode.js"
import * as Ioredis from "../src/RedisNode/Ioredis.js"
import * as NodeRedis from "../src/RedisNode/NodeRedis.js"
import { nodesOf } from "./driverSuite.js"
import { failureOf, wokenAfterRelease } from "./support.js"

const managerOver = (nodes: Layer.Layer<RedisNode.RedisNodes, unknown>) =>
  Effect.map(
    Layer.build(Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(nodes))),
    (context) => Context.get(context, Redlock.Redlock)
  )

layer(RedisFleet.layerLocal(3, { tls: true }), { timeout: 30_000, excludeTestServices: true })("servers that speak TLS only", (it) => {
  for (
    const [driver, nodesLayer] of [
      ["ioredis", (fleet: RedisFleet.Fleet) => Ioredis.layer(fleet.nodes)],
      ["node-redis", (fleet: RedisFleet.Fleet) => NodeRedis.layer(fleet.nodes.map((node) => ({ host: node.host, port: node.port, tls: node.tls })))]
    ] as const
  ) {
    it.scoped(`${driver} nodes that trust the certificate: a lock and a permit, and a waiter woken by the release over a TLS subscriber`, () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        // Two managers, each with connections (and a subscriber) of its own: the release reaches the waiter over the channel.
        const holder = yield* managerOver(nodesLayer(fleet))
        const waiter = yield* managerOver(nodesLayer(fleet))
        const lock = yield* holder.acquire(`tls ${driver}`, { ttl: "10 seconds" })
        assert.strictEqual(yield* fleet.servers[0].call("GET", `redlock:tls ${driver}`), lock.value)
        yield* holder.release(lock)
        const permit = yield* holder.acquirePermit(`tls permits ${driver}`, { ttl: "10 seconds", limit: 2 })
        yield* holder.release(permit)
        const woken = yield* wokenAfterRelease(holder, waiter, `tls wake ${driver}`)
        assert.isBelow(woken, 1_000, `woken ${Math.round(woken)} ms after the release`)
      }))

    it.scoped(`${driver} nodes that do not trust the certificate, or speak plain TCP to a TLS port: Unavailable at once, typed`, () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const port = fleet.servers[0].port
        const untrusted = [{ url: `rediss://127.0.0.1:${port}` }, { host: "127.0.0.1", port, tls: true }] as const
        const plain = { host: "127.0.0.1", port, connectTimeout: "300 millis" } as const
        // The server drops a plain connection's first bytes (the reset is what the client sees).
        for (const [options, detail] of [...untrusted.map((options) => [options, /^not connected: self-signed certificate$/] as const), [plain, /^not connected: /] as const]) {
          const layer = driver === "ioredis" ? Ioredis.layer([options]) : NodeRedis.layer([options])
          const [node] = yield* nodesOf(layer)
          const started = performance.now()
          const error = failureOf(yield* Effect.exit(node.acquire(["k"], "v", 1_000).pipe(Effect.timeout("5 seconds"))))
          assert.isBelow(performance.now() - started, 2_000, JSON.stringify(options))
          assert.strictEqual((error as { readonly reason?: string }).reason, "Unavailable", JSON.stringify(error))
          assert.match((error as { readonly detail: string }).detail, detail)
        }
      }))
  }
})
