/**
 * Kleppmann's clock jump (docs/safety.md): a server whose wall clock leaps
 * forward expires a held key early and may grant the resource again. What a
 * node reads of its server's clock (src/nodes/serverClock.ts), and the
 * scenario on five durable servers (AOF, appendfsync always: the restart
 * quarantine is not in play), one of them with its clock shifted at run time
 * by the test fleet's shim, through the promise API over ioredis and over
 * GLIDE nodes.
 */
import { assert, beforeAll, describe, it } from "vitest"
import { Logger } from "@valkey/valkey-glide"
import type { LocalFleet } from "@effect-redlock/fleet/fleet.js"
import { ServerClock } from "../src/nodes/serverClock.js"
import { LockNotAcquired, makeRedlock, noRetry, type PromiseRedlock } from "../src/Promise.js"
import { Cleanup, drivers, localFleet, openNodes, rejectionOf, sleep } from "./driverSuite.js"

Logger.setLoggerConfig("off")

type Resources = string | readonly [string, ...Array<string>]

describe("a server's clock, read with each vote", () => {
  const reading = (serverMillis: number, sentAtMillis: number, answeredAtMillis = sentAtMillis + 1) => ({
    serverMillis,
    sentAtMillis,
    answeredAtMillis
  })

  it("a forward jump beyond what the local clock allows is told with its size; a step back is told apart", () => {
    const clock = new ServerClock()
    assert.isUndefined(clock.read(reading(1_000_000, 0)), "the first reading is the baseline")
    assert.isUndefined(clock.read(reading(1_001_000, 1_000)), "in step")
    const jump = clock.read(reading(1_022_000, 2_000))
    assert.strictEqual(jump?._tag, "Forward")
    assert.approximately(jump!.byMillis, 20_000, 30)
    const back = clock.read(reading(1_018_000, 3_000))
    assert.strictEqual(back?._tag, "Back")
    clock.forget()
    assert.isUndefined(clock.read(reading(5, 4_000)), "after forget: a baseline again")
  })

  it("a clock 0.5% fast or slow, read every second for an hour, is never taken for a jump", () => {
    for (const rate of [1.005, 0.995]) {
      const clock = new ServerClock()
      for (let second = 0; second < 3_600; second++) {
        // The server's reading is taken somewhere within its command's round trip.
        const sentAt = second * 1_000
        const jump = clock.read(reading(1e12 + (sentAt + 0.5) * rate, sentAt, sentAt + 1))
        assert.isUndefined(jump, `rate ${rate}, at ${second} s`)
      }
    }
  })
})

describe("Kleppmann's clock jump on 5 durable servers, one of them with its clock shifted", () => {
  const fleetOf = localFleet(5, { persistence: true, shiftableClocks: true })
  let fleet: LocalFleet
  beforeAll(() => void (fleet = fleetOf()))

  const quiet = { warn: () => {} }
  const once = { ttl: 10_000, retry: noRetry, nodeTimeout: 200 }

  /**
   * Holder 1 takes `resource` while D and E are down (A, B, C grant it; D and E
   * never get its key), D and E come back, C's clock leaps 20 s forward (its
   * copy expires at once); then `holder2`, made before the jump, asks.
   */
  const scenario = async (resource: Resources, holder2: PromiseRedlock) => {
    await fleet.reset()
    fleet.shiftClock(2, 0)
    // Holder 2 has read every server's clock before the jump (its votes and its readings between them).
    await holder2.release(await holder2.acquire(`${resource}:warm-up`, once))
    const [firstKey] = typeof resource === "string" ? [resource] : resource
    const [, , c, d, e] = fleet.servers
    await Promise.all([d.kill(), e.kill()])
    const holder1 = await makeRedlock(fleet.nodes, { logger: quiet })
    Cleanup.add(() => holder1.close(), undefined)
    const held = await holder1.acquire(resource, once)
    assert.strictEqual(Number(await c.call("EXISTS", `redlock:${firstKey}`)), 1)
    await Promise.all([d.start(), e.start()])
    // Holder 2's connections to D and E are back (and their servers identified).
    await sleep(1_500)
    // Right before holder 2 asks: the jump is seen by its vote's own reading (the one each second most likely comes after).
    fleet.shiftClock(2, 20_000)
    assert.strictEqual(Number(await c.call("EXISTS", `redlock:${firstKey}`)), 0, "C's copy expired at the jump")
    return { held, holder1 }
  }

  // A lock of one resource is voted by a native SET NX PX (a TIME behind it), one of two by a script (timed).
  for (
    const [name, nodesOf, resources] of [
      ["ioredis nodes", async () => fleet.nodes, (name: string) => name],
      [
        "ioredis nodes, a lock of two resources",
        async () => fleet.nodes,
        (name: string): Resources => [`${name} 1`, `${name} 2`]
      ],
      ["Valkey GLIDE nodes", async () => openNodes(await drivers.glide(), fleet.nodes), (name: string) => name]
    ] as const
  ) {
    it(`${name}: a manager that read C before the jump is refused while holder 1 holds (C abstains), and says why`, async () => {
      const warnings: Array<string> = []
      const holder2 = await makeRedlock(await nodesOf() as never, {
        logger: { warn: (line) => void warnings.push(line) }
      })
      Cleanup.add(() => holder2.close(), undefined)
      const { held } = await scenario(resources(`jump ${name}`), holder2)
      assert.isAbove(held.remaining(), 5_000, "holder 1 still holds it")
      for (let attempt = 0; attempt < 2; attempt++) {
        const refused = await rejectionOf(holder2.acquire(resources(`jump ${name}`), once))
        assert.instanceOf(refused, LockNotAcquired)
        assert.match((refused as LockNotAcquired).message, /clock jumped forward 2\d\.\d s/)
      }
      // Said once, naming the server.
      assert.strictEqual(warnings.length, 1, warnings.join("\n"))
      assert.match(
        warnings[0],
        /^effect-redlock: 127\.0\.0\.1:\d+'s clock jumped forward 2\d\.\d s: keys it holds may have expired early/
      )
    })
  }

  it("watchClock: false: no clock is read, and the jump goes unseen (granted); a watchClock that is no boolean is InvalidOptions", async () => {
    const unwatched = await makeRedlock(fleet.nodes.map((node) => ({ ...node, watchClock: false })), { logger: quiet })
    Cleanup.add(() => unwatched.close(), undefined)
    const { held } = await scenario("unwatched", unwatched)
    const granted = await unwatched.acquire("unwatched", once)
    assert.isAbove(held.remaining(), 0)
    assert.deepStrictEqual(granted.resources, ["unwatched"])
    const invalid = await rejectionOf(makeRedlock([{ ...fleet.nodes[0], watchClock: "yes" as never }]))
    assert.strictEqual((invalid as { readonly option?: unknown }).option, "watchClock")
  })

  it("a manager made after the jump, with no earlier reading of C, is granted: the case only fencing tokens cover", async () => {
    const before = await makeRedlock(fleet.nodes, { logger: quiet })
    Cleanup.add(() => before.close(), undefined)
    const { held } = await scenario("jump after", before)
    const after = await makeRedlock(fleet.nodes, { logger: quiet })
    Cleanup.add(() => after.close(), undefined)
    const granted = await after.acquire("jump after", once)
    assert.isAbove(held.remaining(), 0, "while holder 1 still holds it: a double grant")
    assert.deepStrictEqual(granted.resources, ["jump after"])
  })
})
