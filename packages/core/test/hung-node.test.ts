/**
 * A node that stops answering (SIGSTOP: its connection stays open, nothing
 * comes back) while locks go on over the others: what waits for it stays
 * bounded. A soak bounded in time and in request rate.
 */
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { Redis } from "ioredis"
import * as V8 from "node:v8"
import * as Vm from "node:vm"
import { type LocalFleet, startLocalFleet } from "@effect-redlock/fleet/fleet.js"
import * as ReleaseSubscriber from "../src/nodes/ioredis/releaseSubscriber.js"
import { defaultMaxPendingCommands } from "../src/nodes/nodeOptions.js"
import { makeRedlock, retry } from "../src/Promise.js"
import { sleep } from "./driverSuite.js"

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

describe("a hung node", () => {
  let fleet: LocalFleet
  beforeAll(async () => {
    fleet = await startLocalFleet(3)
  })
  afterAll(() => fleet?.stop())

  it(`paused for ${soakSeconds} s under steady traffic: heap and pending commands stay flat, locks go on`, async () => {
    // Clients the test owns, set up as the library sets up its own, so that their queues can be read.
    const clients = fleet.nodes.map((node) =>
      new Redis({
        host: node.host,
        port: node.port,
        enableOfflineQueue: false,
        autoResendUnfulfilledCommands: false,
        maxRetriesPerRequest: 0
      })
    )
    clients.forEach((client) => client.on("error", () => {}))
    const hung = 2
    // Releases that miss the hung node may be said as warnings: counted here, not printed by the thousand.
    let warnings = 0
    const redlock = await makeRedlock(clients.map((client) => ({ client })), {
      restartQuarantine: false,
      logger: { warn: () => void warnings++ }
    })
    try {
      // Six loops over twenty keys, each at most ~50 locks a second: contention makes waiters, which subscribe.
      let granted = 0
      let running = true
      const turns = retry({ delay: 5, times: 20 })
      const loop = async () => {
        while (running) {
          const key = `soak:${Math.floor(Math.random() * 20)}`
          await redlock.using(key, { ttl: 2_000, retry: turns }, () => sleep(2)).then(() => void granted++, () => {})
          await sleep(20)
        }
      }
      const loops = Array.from({ length: 6 }, loop)
      // Hung once waiters have subscribed on it: its subscriber connection stays open, unanswered.
      await sleep(3_000)
      await fleet.servers[hung].pause()
      try {
        const sample = () => ({
          heap: heapMegabytes(),
          pending: pendingOf(clients[hung]),
          subscriber: ReleaseSubscriber.pendingCommands(clients[hung]) ?? 0,
          granted
        })
        await sleep(sampleAtSeconds * 1_000)
        const early = sample()
        await sleep((soakSeconds - sampleAtSeconds) * 1_000)
        const late = sample()
        running = false
        await Promise.all(loops)
        console.log(
          `hung node soak: at ${sampleAtSeconds} s ${JSON.stringify(early)}; at ${soakSeconds} s ${
            JSON.stringify(late)
          }; ${warnings} warnings`
        )

        assert.isAbove(late.granted - early.granted, 1000, "locks went on over the two live nodes")
        assert.isAtMost(late.pending, defaultMaxPendingCommands, "commands waiting on the hung node")
        assert.isAtMost(late.pending, early.pending + 50, "no growth after the first seconds")
        assert.isAtMost(late.subscriber, 40, "at most a SUBSCRIBE and an UNSUBSCRIBE per key on the hung server")
        assert.isBelow(late.heap - early.heap, 8, "heap (MB, after a full GC) grew by less than 8 MB")
      } finally {
        running = false
        await fleet.servers[hung].resume()
      }
    } finally {
      await redlock.close()
      clients.forEach((client) => client.disconnect())
    }
  }, (soakSeconds + 30) * 1000)
})
