/**
 * The node-redlock entry (`effect-redlock/node-redlock`) as node-redlock's
 * users call it, written from node-redlock's README and types: its 5.0 API
 * and 4.x's, over users' ioredis and node-redis clients on local servers,
 * plain and each a one-node cluster; what a node-redlock program relies on
 * (attempts counted, every attempt's votes, its messages, `using`'s signal
 * and extensions, `quit()`), and what this library adds (waiting woken by
 * the release, `maxTtl` with the restart quarantine, fencing tokens).
 */
import Bluebird from "bluebird"
import { Cluster, Redis, type RedisOptions } from "ioredis"
import { createClient } from "redis"
import { GlideClient, Logger } from "@valkey/valkey-glide"
import { afterEach, assert, describe, it } from "vitest"
import RedlockDefault, {
  type Client,
  ExecutionError,
  type ExecutionStats,
  Lock,
  LockError,
  Redlock,
  type RedlockAbortSignal,
  ResourceLockedError
} from "../src/NodeRedlock.js"
import { memoryNodes } from "../src/Promise.js"
import { Cleanup, localFleet, settled, sleep } from "./driverSuite.js"

// Beyond the 30 s maxTtl of this library's other front ends, as node-redlock's users give.
const long = 10 * 60_000

const ioredisOf = (port: number, options: RedisOptions = {}): Redis => {
  const client = new Redis(port, "127.0.0.1", options)
  return Cleanup.add(async () => void (client.status === "end" ? undefined : client.disconnect()), client)
}

const clientsOf = (ports: ReadonlyArray<number>): Array<Redis> => ports.map((port) => ioredisOf(port))

const votes = (error: unknown): Promise<Array<ExecutionStats>> => {
  assert.instanceOf(error, ExecutionError)
  return Promise.all((error as ExecutionError).attempts)
}

const againstMessages = (
  stats: ReadonlyArray<ExecutionStats>
): Array<string> => [
  ...new Set(
    stats.flatMap((attempt) => [...attempt.votesAgainst.values()].map((error) => `${error.name}: ${error.message}`))
  )
]

const unreachablePort = 1 // nothing listens there; connecting is refused at once

describe("node-redlock's API over users' ioredis clients, 3 redis-servers", () => {
  const fleet = localFleet(3)
  const ports = () => fleet().servers.map((server) => server.port)
  afterEach(() => fleet().reset())

  it("acquires, extends and releases a multi-resource lock: the keys are the resources, their ttl the duration, expiration its validity", async () => {
    const clients = clientsOf(ports())
    const redlock = new Redlock(clients)
    const before = Date.now()
    const lock = await redlock.acquire(["{r}a1", "{r}a2"], long)
    const after = Date.now()
    for (const client of clients) {
      assert.deepStrictEqual(await client.mget("{r}a1", "{r}a2"), [lock.value, lock.value])
      assert.closeTo(await client.pttl("{r}a1"), long, 1000)
    }
    const drift = Math.round(0.01 * long) + 2
    assert.isAtLeast(lock.expiration, before + long - drift - 50)
    assert.isAtMost(lock.expiration, after + long - drift + 50)
    assert.deepStrictEqual(lock.resources, ["{r}a1", "{r}a2"])
    assert.strictEqual(lock.attempts.length, 1)
    // Decided once a quorum answered: a node not awaited is in neither set.
    assert.isAtLeast((await lock.attempts[0])!.votesFor.size, 2)

    const extended = await lock.extend(3 * long)
    assert.notStrictEqual(extended, lock)
    assert.strictEqual(lock.expiration, 0, "the lock extended is replaced")
    assert.strictEqual(extended.value, lock.value)
    assert.isAbove(extended.expiration, Date.now() + 2 * long)
    for (const client of clients) assert.closeTo(await client.pttl("{r}a2"), 3 * long, 1000)

    const released = await extended.release()
    assert.strictEqual(extended.expiration, 0)
    assert.isAtLeast((await released.attempts[0])!.votesFor.size, 2)
    for (const client of clients) assert.strictEqual(await client.exists("{r}a1", "{r}a2"), 0)
  })

  it("a refusal makes retryCount + 1 attempts, each with its votes: another lock's resource is a ResourceLockedError from every client", async () => {
    const clients = clientsOf(ports())
    const redlock = new Redlock(clients, { retryCount: 4, retryDelay: 20, retryJitter: 5 })
    const errors: Array<Error> = []
    redlock.on("error", (error: Error) => errors.push(error))
    const held = await redlock.acquire(["{r}c1", "{r}c2"], long)
    const refused = await settled(redlock.acquire(["{r}c2", "{r}c3"], long))
    const attempts = await votes(refused)
    assert.strictEqual(attempts.length, 5, "retryCount 4: 5 attempts, turns in line and re-checks counted")
    assert.isTrue(
      attempts.every((attempt) =>
        attempt.membershipSize === 3 && attempt.quorumSize === 2 && attempt.votesFor.size === 0
      )
    )
    assert.deepStrictEqual(againstMessages(attempts), [
      "ResourceLockedError: The operation was applied to: 0 of the 2 requested resources."
    ])
    assert.instanceOf([...attempts[0]!.votesAgainst.values()][0], ResourceLockedError)
    assert.strictEqual(
      (refused as Error).message,
      "The operation was unable to achieve a quorum during its retry window."
    )
    await sleep(10)
    const against = attempts.reduce((total, attempt) => total + attempt.votesAgainst.size, 0)
    assert.isAtLeast(against, 5 * 2, "at least a quorum against in each attempt")
    assert.strictEqual(errors.length, against, "an \"error\" event for each vote against")
    for (const client of clients) {
      assert.deepStrictEqual(
        await client.mget("{r}c1", "{r}c2", "{r}c3"),
        [held.value, held.value, null],
        "the holder's keys untouched, the free one left free"
      )
    }
    const once = await votes(await settled(redlock.acquire("{r}c1", long, { retryCount: 0 })))
    assert.strictEqual(once.length, 1, "retryCount 0: one attempt")
    await held.release()
  })

  it("a majority of clients holding other values refuses, and the attempt is undone where it was granted; a minority does not", async () => {
    const clients = clientsOf(ports())
    const redlock = new Redlock(clients, { retryCount: 2, retryDelay: 10 })
    await clients[1]!.set("{r}m", "other1")
    await clients[2]!.set("{r}m", "other2")
    const attempts = await votes(await settled(redlock.acquire(["{r}m"], long)))
    assert.strictEqual(attempts.length, 3)
    assert.isTrue(attempts.every((attempt) => attempt.votesFor.size <= 1 && attempt.votesAgainst.size === 2))
    assert.deepStrictEqual(againstMessages(attempts), [
      "ResourceLockedError: The operation was applied to: 0 of the 1 requested resources."
    ])
    assert.deepStrictEqual(await Promise.all(clients.map((client) => client.get("{r}m"))), [null, "other1", "other2"])

    await clients[1]!.del("{r}m")
    const lock = await redlock.acquire(["{r}m"], long)
    const [granted] = await Promise.all(lock.attempts)
    assert.strictEqual(granted!.votesFor.size, 2)
    assert.deepStrictEqual(await Promise.all(clients.map((client) => client.get("{r}m"))), [
      lock.value,
      lock.value,
      "other2"
    ])
    assert.strictEqual(await clients[2]!.pttl("{r}m"), -1, "the other value's key keeps no ttl")
    await lock.release()
    assert.strictEqual(await clients[2]!.get("{r}m"), "other2")
  })

  it("an unreachable client votes against with its own error in every attempt, and the others grant", async () => {
    const dead = ioredisOf(unreachablePort, { retryStrategy: () => null, maxRetriesPerRequest: 0, lazyConnect: false })
    dead.on("error", () => {})
    const clientErrors: Array<Error> = []
    const alone = new Redlock([dead], { retryCount: 3, retryDelay: 10 })
    alone.on("clientError", (error: Error) => clientErrors.push(error))
    const attempts = await votes(await settled(alone.acquire(["{r}u"], long)))
    assert.strictEqual(attempts.length, 4)
    assert.deepStrictEqual(againstMessages(attempts), ["Error: Connection is closed."])
    await sleep(10)
    assert.strictEqual(clientErrors.length, 4)

    const [a, b] = clientsOf(ports().slice(0, 2))
    const lock = await new Redlock([a!, b!, dead]).acquire(["{r}u"], long)
    const [granted] = await Promise.all(lock.attempts)
    assert.strictEqual(granted!.votesFor.size, 2)
    assert.deepStrictEqual([...granted!.votesAgainst.keys()], [dead])
    await lock.release()
  })

  it("a waiter in line is granted when the holder releases, not at its next retry", async () => {
    const holder = new Redlock(clientsOf(ports()))
    const waiter = new Redlock(clientsOf(ports()), { retryDelay: 5000, retryJitter: 0 })
    const lock = await holder.acquire(["{r}w"], long)
    const waiting = waiter.acquire(["{r}w"], long)
    await sleep(300)
    const releasedAt = performance.now()
    await lock.release()
    const granted = await waiting
    const waited = performance.now() - releasedAt
    assert.isBelow(waited, 1000, `granted ${waited.toFixed(0)} ms after the release, not at the 5 s retry`)
    assert.isAtLeast(granted.attempts.length, 2)
    await granted.release()
  })

  it("an acquisition waiting in line stops when the call's signal aborts: it rejects with the reason and leaves nothing behind", async () => {
    const clients = clientsOf(ports())
    const redlock = new Redlock(clients, { retryCount: -1, retryDelay: 50 })
    const held = await redlock.acquire("s", long)
    const controller = new AbortController()
    const waiting = settled(redlock.acquire("s", long, { signal: controller.signal }))
    await sleep(150)
    controller.abort(new Error("gave up"))
    assert.strictEqual((await waiting as Error).message, "gave up")
    await held.release()
    await sleep(20)
    assert.deepStrictEqual(await fleet().dbsizes(), [0, 0, 0], "no key and no place in line left")
  })

  it("using: the routine gets node-redlock's signal, the lock is extended while it runs and released after; two at once never overlap", async () => {
    const clients = clientsOf(ports())
    const redlock = new Redlock(clients)
    let inside = 0
    const sections: Array<string | null> = []
    const routine = async (signal: RedlockAbortSignal) => {
      assert.strictEqual(++inside, 1, "one routine at a time")
      const value = await clients[0]!.get("{r}x")
      await sleep(700)
      assert.strictEqual(signal.aborted, false)
      assert.strictEqual(signal.error, undefined)
      assert.strictEqual(await clients[0]!.get("{r}x"), value, "extended, not expired and taken")
      sections.push(value)
      inside--
      return value
    }
    const results = await Promise.all([
      redlock.using(["{r}x"], 500, { automaticExtensionThreshold: 200 }, routine),
      redlock.using(["{r}x"], 500, { automaticExtensionThreshold: 200, retryCount: 20 }, routine)
    ])
    assert.notStrictEqual(results[0], results[1])
    assert.isString(results[0])
    assert.deepStrictEqual(sections, results)
    for (const client of clients) assert.strictEqual(await client.get("{r}x"), null, "released")
  })

  it("using: a lock taken from under the routine aborts its signal with the error; the routine's own error is what using rejects with", async () => {
    const clients = clientsOf(ports())
    const redlock = new Redlock(clients)
    const outcome = await settled(
      redlock.using(["{r}lost"], 600, { automaticExtensionThreshold: 300 }, async (signal) => {
        await Promise.all(clients.map((client) => client.set("{r}lost", "someone else")))
        const aborted = await new Promise<boolean>((resolve) => {
          signal.addEventListener("abort", () => resolve(true))
          setTimeout(() => resolve(false), 2000)
        })
        assert.isTrue(aborted, "the signal aborted")
        assert.instanceOf(signal.error, Error)
        throw new Error("stopped: lock lost")
      })
    )
    assert.strictEqual((outcome as Error).message, "stopped: lock lost")
    assert.deepStrictEqual(
      await Promise.all(clients.map((client) => client.get("{r}lost"))),
      Array(3).fill("someone else")
    )
    const tooClose = await settled(
      redlock.using(["{r}t"], 500, { automaticExtensionThreshold: 450 }, async () => "ran")
    )
    assert.strictEqual(
      (tooClose as Error).message,
      "A lock `duration` must be at least 100ms greater than the `automaticExtensionThreshold` setting."
    )
  })

  it("node-redlock 4.x's API: lock, unlock, extend with callbacks or promises, LockError", async () => {
    const redlock = new RedlockDefault(clientsOf(ports()), { retryCount: 1, retryDelay: 10 })
    const lock = await redlock.lock("old:api", long)
    assert.strictEqual(lock.resource, "old:api")
    const extended = await new Promise<Lock>((resolve, reject) =>
      lock.extend(long, (error, next) => error ? reject(error) : resolve(next!))
    )
    const refused = await new Promise<unknown>((resolve) => redlock.lock("old:api", long, (error) => resolve(error)))
    assert.instanceOf(refused, LockError)
    assert.instanceOf(refused, RedlockDefault.LockError)
    await new Promise<void>((resolve, reject) => extended.unlock((error) => error ? reject(error) : resolve()))
    const again = await redlock.lockWithOptions(["old:api"], long, { retryCount: 0 })
    await redlock.unlock(again)
  })

  it("node-redlock 4.x's disposer, with Bluebird's Promise.using: the lock is held in the handler and released after", async () => {
    const clients = clientsOf(ports())
    const redlock = new Redlock(clients)
    const value = await Bluebird.using(redlock.disposer("disposed", long) as Bluebird.Disposer<Lock>, async (lock) => {
      assert.strictEqual(await clients[0]!.get("disposed"), lock.value)
      return lock.value
    })
    assert.isString(value)
    await sleep(20)
    for (const client of clients) assert.strictEqual(await client.get("disposed"), null, "released")
  })

  it("releasing a lock that expired rejects with an ExecutionError; extending it too; a lock of another Redlock is refused", async () => {
    const clients = clientsOf(ports())
    const redlock = new Redlock(clients)
    const lock = await redlock.acquire("short", 100)
    await sleep(150)
    const extended = await settled(lock.extend(1000))
    assert.instanceOf(extended, ExecutionError)
    assert.strictEqual((extended as Error).message, "Cannot extend an already-expired lock.")
    const released = await settled(lock.release())
    assert.instanceOf(released, ExecutionError)
    const other = await new Redlock(clients).acquire("mine", 1000)
    assert.instanceOf(await settled(redlock.release(other)), TypeError)
    await other.release()
  })

  it("durations: any whole number of ms by default; a fraction is refused with node-redlock's message; maxTtl bounds them and turns on the restart quarantine", async () => {
    const clients = clientsOf(ports())
    const fraction = await settled(new Redlock(clients).acquire("d", 1000.5))
    assert.strictEqual((fraction as Error).message, "Duration must be an integer value in milliseconds.")
    assert.strictEqual((fraction as { _tag?: string })._tag, "InvalidOptions")
    const bounded = new Redlock(clients, { maxTtl: 60_000, retryCount: 0 })
    assert.strictEqual((await settled(bounded.acquire("d", 61_000)) as { _tag?: string })._tag, "InvalidOptions")
    // These servers started seconds ago and keep no keys across a restart: with maxTtl, they sit out 60 s.
    const attempts = await votes(await settled(bounded.acquire("d", 1000)))
    assert.match(againstMessages(attempts)[0]!, /its vote does not count \(server started .*restart quarantine/)
    const unquarantined = await new Redlock(clients, { maxTtl: 60_000, restartQuarantine: false }).acquire("d", 1000)
    await unquarantined.release()
  })

  it("fencing tokens grow with each holder", async () => {
    const redlock = new Redlock(clientsOf(ports()))
    const first = await redlock.acquire("fenced", 1000)
    const firstToken = await first.fencingToken()
    await first.release()
    const second = await redlock.acquire("fenced", 1000)
    assert.isTrue((await second.fencingToken()) > firstToken)
    await second.release()
  })

  it("quit() rejects acquisitions still waiting and quits the clients given", async () => {
    const clients = clientsOf(ports())
    const redlock = new Redlock(clients, { retryCount: -1, retryDelay: 50 })
    const held = await new Redlock(clientsOf(ports())).acquire("q", long)
    const waiting = settled(redlock.acquire("q", long))
    await sleep(100)
    await redlock.quit()
    assert.strictEqual((await waiting as { _tag?: string })._tag, "ManagerClosed")
    await sleep(50)
    assert.deepStrictEqual(clients.map((client) => client.status), ["end", "end", "end"])
    await held.release()
  })

  it("quit() does not wait for a client whose server is down: it is disconnected at once, where QUIT would wait out its reconnections", async () => {
    const [up] = clientsOf(ports().slice(0, 1))
    const down = ioredisOf(unreachablePort)
    down.on("error", () => {})
    const redlock = new Redlock([up!, down], { retryCount: 0 })
    assert.instanceOf(await settled(redlock.acquire("q2", 1000)), ExecutionError)
    const started = performance.now()
    await redlock.quit()
    assert.isBelow(performance.now() - started, 1000)
    let reconnections = 0
    down.on("reconnecting", () => reconnections++)
    await sleep(500)
    assert.strictEqual(up!.status, "end")
    // ioredis leaves a client disconnected while reconnecting in that state, but it tries no more.
    assert.strictEqual(reconnections, 0, "the client of the server that is down stopped reconnecting")
  })

  it("a Redlock per task over one client: no listener-leak warning, and the client's listener limit back once they quit", async () => {
    const [shared] = clientsOf(ports().slice(0, 1))
    const warnings: Array<string> = []
    const onWarning = (warning: Error) => void warnings.push(warning.name)
    process.on("warning", onWarning)
    try {
      const before = shared!.getMaxListeners()
      const redlocks = Array.from({ length: 12 }, () => new Redlock([shared!], { retryCount: 0 }))
      for (const redlock of redlocks) await (await redlock.acquire("per-task", 1000)).release()
      assert.isAtLeast(shared!.getMaxListeners(), before + 12, "each Redlock's node raised it for its own listeners")
      await sleep(10)
      assert.notInclude(warnings, "MaxListenersExceededWarning")
      await Promise.all(redlocks.map((redlock) => redlock.quit()))
      assert.strictEqual(shared!.getMaxListeners(), before, "each node's removal lowered it again")
    } finally {
      process.off("warning", onWarning)
    }
  })

  it("bad input: no clients, a setting of the wrong kind, a resource that is none", async () => {
    assert.throws(() => new Redlock([]), /at least one redis client/)
    assert.throws(() => new Redlock(7 as never), /iterable/)
    assert.throws(() => new Redlock(clientsOf(ports()), { retryCount: "10" as never }), /retryCount/)
    const redlock = new Redlock(clientsOf(ports()))
    assert.strictEqual((await settled(redlock.acquire([] as never, 1000)) as { _tag?: string })._tag, "InvalidOptions")
    assert.strictEqual(
      (await settled(redlock.acquire(["a"], 1000, { driftFactor: 0.5 })) as { _tag?: string })._tag,
      "InvalidOptions"
    )
    assert.strictEqual(
      (await settled(redlock.using(["a"], 1000, {} as never)) as { _tag?: string })._tag,
      "InvalidOptions"
    )
  })
})

describe("node-redlock's API over node-redis clients, 3 redis-servers", () => {
  const fleet = localFleet(3)

  it("acquires, refuses with every attempt's votes, releases", async () => {
    const clients = await Promise.all(
      fleet().servers.map(async (server) => {
        const client = createClient({ socket: { host: "127.0.0.1", port: server.port } })
        await client.connect()
        return Cleanup.add(() => client.isOpen ? client.close() : Promise.resolve(), client)
      })
    )
    const redlock = new Redlock(clients as Array<Client>, { retryCount: 2, retryDelay: 10 })
    const lock = await redlock.acquire(["n1", "n2"], long)
    assert.deepStrictEqual(await clients[0]!.mGet(["n1", "n2"]), [lock.value, lock.value])
    assert.strictEqual((await votes(await settled(redlock.acquire("n2", long)))).length, 3)
    await lock.release()
    assert.strictEqual(await clients[2]!.exists(["n1", "n2"]), 0)
    await redlock.quit()
    assert.isFalse(clients[0]!.isOpen)
  })
})

describe("node-redlock's API over Valkey GLIDE clients, 3 redis-servers", () => {
  const fleet = localFleet(3)

  it("acquires, refuses with every attempt's votes, releases; quit() closes the clients", async () => {
    Logger.setLoggerConfig("off")
    const clients = await Promise.all(
      fleet().servers.map(async (server) => {
        const client = await GlideClient.createClient({ addresses: [{ host: "127.0.0.1", port: server.port }] })
        return Cleanup.add(async () => client.close(), client)
      })
    )
    const redlock = new Redlock(clients as Array<Client>, { retryCount: 2, retryDelay: 10 })
    const lock = await redlock.acquire(["g1", "g2"], long)
    assert.deepStrictEqual(await clients[0]!.mget(["g1", "g2"]), [lock.value, lock.value])
    assert.strictEqual((await votes(await settled(redlock.acquire("g2", long)))).length, 3)
    await lock.release()
    assert.strictEqual(await clients[2]!.exists(["g1", "g2"]), 0)
    await redlock.quit()
    assert.instanceOf(await settled(clients[0]!.ping()), Error, "closed by quit()")
  })
})

describe("node-redlock's API over ioredis Cluster clients, 3 redis-servers each a one-node cluster", () => {
  const fleet = localFleet(3, { clusterPerServer: true })

  it("a lock on resources of one hash tag, acquired, refused, extended and released; resources of different slots refused at once", async () => {
    const clusters = fleet().servers.map((server) => {
      const cluster = new Cluster([{ host: "127.0.0.1", port: server.port }])
      return Cleanup.add(async () => cluster.disconnect(), cluster)
    })
    const redlock = new Redlock(clusters, { retryCount: 1, retryDelay: 10 })
    const lock = await redlock.acquire(["{s}a", "{s}b"], long)
    for (const cluster of clusters) {
      assert.deepStrictEqual([await cluster.get("{s}a"), await cluster.get("{s}b")], [lock.value, lock.value])
    }
    const attempts = await votes(await settled(redlock.acquire(["{s}b"], long)))
    assert.deepStrictEqual(againstMessages(attempts), [
      "ResourceLockedError: The operation was applied to: 0 of the 1 requested resources."
    ])
    const extended = await lock.extend(2 * long)
    assert.closeTo(await clusters[0]!.pttl("{s}a"), 2 * long, 1000)
    await extended.release()
    for (const cluster of clusters) assert.strictEqual(await cluster.exists("{s}a", "{s}b"), 0)
    // Redis's CROSSSLOT, told before anything is sent, with the fix.
    const crossSlot = await votes(await settled(redlock.acquire(["slot-a", "slot-b"], long)))
    assert.match(againstMessages(crossSlot)[0]!, /CrossSlot: .* give the resources of one lock a common tag/)
  })
})

describe("node-redlock's API over in-memory nodes", () => {
  it("takes them as clients, for tests", async () => {
    const redlock = new Redlock(memoryNodes(3), { retryCount: 0 })
    const lock = await redlock.acquire("m", 1000)
    assert.strictEqual((await votes(await settled(redlock.acquire("m", 1000)))).length, 1)
    await lock.release()
    await redlock.quit()
  })
})
