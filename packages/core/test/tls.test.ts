/**
 * Locks over servers that speak TLS only (the fleet's `tls`: its own
 * certificate for 127.0.0.1, signed by a CA of its own), as managed Redis services do: nodes
 * of each driver that trust the certificate lock, and their waiters hear
 * releases over TLS subscribers; a node that does not trust it, or speaks
 * plain TCP to a TLS port, fails at once with a typed reason, never hangs.
 */
import { assert, beforeAll, describe, it } from "vitest"
import type { LocalFleet } from "@effect-redlock/fleet/fleet.js"
import type { RedisNodeError } from "../src/manager/errors.js"
import { Logger } from "@valkey/valkey-glide"
import { drivers, localFleet, managerOver, openNodes, rejectionOf, sleep, wokenAfterRelease } from "./driverSuite.js"

// GLIDE's core logs every server error to the console by default: its users set their own level.
Logger.setLoggerConfig("off")

/** Each driver, and what its nodes say of a certificate they do not trust and of a port that speaks TLS to plain TCP. */
const named = [
  ["ioredis", drivers.ioredis, /^not connected: self-signed certificate in certificate chain$/, /^not connected: /],
  ["iovalkey", drivers.iovalkey, /^not connected: self-signed certificate in certificate chain$/, /^not connected: /],
  [
    "node-redis",
    drivers.nodeRedis,
    /^not connected: self-signed certificate in certificate chain$/,
    /^not connected: /
  ],
  // GLIDE tells only that no connection was made in time, not why.
  ["Valkey GLIDE", drivers.glide, /^not connected/, /^not connected/]
] as const

describe("servers that speak TLS only", () => {
  const fleetOf = localFleet(3, { tls: true })
  let fleet: LocalFleet
  beforeAll(() => void (fleet = fleetOf()))

  for (const [name, driverOf, untrustedDetail, plainDetail] of named) {
    it(`${name} nodes that trust the certificate: a lock and a permit, and a waiter woken by the release over a TLS subscriber`, async () => {
      const driver = await driverOf()
      // Two managers, each with connections (and a subscriber) of its own: the release reaches the waiter over the channel.
      const holder = await managerOver(await openNodes(driver, fleet.nodes))
      const waiter = await managerOver(await openNodes(driver, fleet.nodes))
      const lock = await holder.acquire(`tls ${name}`, { ttl: 10_000 })
      assert.strictEqual(await fleet.servers[0].call("GET", `redlock:tls ${name}`), lock.value)
      await holder.release(lock)
      const permit = await holder.acquirePermit(`tls permits ${name}`, { ttl: 10_000, limit: 2 })
      await holder.release(permit)
      const woken = await wokenAfterRelease(holder, waiter, `tls wake ${name}`)
      assert.isBelow(woken, 1_000, `woken ${Math.round(woken)} ms after the release`)
    })

    it(`${name} nodes that do not trust the certificate, or speak plain TCP to a TLS port: Unavailable at once, typed`, async () => {
      const driver = await driverOf()
      const port = fleet.servers[0].port
      const untrusted = [{ url: `rediss://127.0.0.1:${port}` }, { host: "127.0.0.1", port, tls: true }]
      const plain = { host: "127.0.0.1", port, connectTimeout: 300 }
      // The server drops a plain connection's first bytes (the reset is what the client sees).
      const cases = [...untrusted.map((options) => [options, untrustedDetail] as const), [plain, plainDetail] as const]
      for (const [options, detail] of cases) {
        const [node] = await openNodes(driver, [options])
        const started = performance.now()
        const error = await rejectionOf(Promise.race([
          node.promises.acquire(["k"], "v", 1_000),
          sleep(5_000).then(() => "no answer within 5 s")
        ])) as RedisNodeError
        assert.isBelow(performance.now() - started, 2_000, JSON.stringify(options))
        assert.strictEqual(error.reason, "Unavailable", JSON.stringify(error))
        assert.match(error.detail, detail)
      }
    })
  }
})
