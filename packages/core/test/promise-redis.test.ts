/**
 * The promise API on 5 real redis-servers, as core ships it (the Effect
 * packages re-export it; what they add, their layers and Schedules, is the
 * shared Effect suite promiseHost.ts): what one acquisition sends, plain
 * values, permits and read-write holds from promise code, bad input, close()
 * with acquisitions waiting or still out, the undo of a refused attempt,
 * contending managers, the default and plain retries, and the manager's
 * setup (its options, the warnings it writes, the locks it lets go of).
 */
import { afterAll, assert, beforeAll, beforeEach, describe, it, vi } from "vitest"
import { type LocalFleet, startLocalFleet } from "@effect-redlock/fleet/fleet.js"
import { freePort } from "@effect-redlock/fleet/freePort.js"
import { eventually } from "@effect-redlock/fleet/servers.js"
import { createClient } from "redis"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import {
  type AcquireOptions,
  InvalidOptions,
  LockLost,
  LockNotAcquired,
  makeRedlock,
  ManagerClosed,
  memoryNodes,
  noRetry,
  type PromiseOptions,
  type PromiseRedlock,
  retry,
  SettingConflict
} from "../src/Promise.js"

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))
/** How a promise ended: "acquired", or its rejection. */
const outcome = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(() => "acquired", (error: unknown) => error)
/** A retry that never comes within a test: only a wake can explain an acquisition. */
const slowRetry = retry({ delay: 10_000, times: 5, jitter: { min: 1, max: 1 } })

let fleet: LocalFleet
/** Every manager a test made, closed after it (a test that failed half-way leaves none open). */
const opened: Array<PromiseRedlock> = []

/** A manager over the fleet, closed after the test. */
const manager = async (options?: PromiseOptions): Promise<PromiseRedlock> => {
  const redlock = await makeRedlock(fleet.nodes, { restartQuarantine: false, ...options })
  opened.push(redlock)
  return redlock
}

/** How many servers hold `key`. */
const keyCount = async (key: string): Promise<number> =>
  (await Promise.all(fleet.servers.map((server) => server.call("EXISTS", key)))).reduce(
    (sum: number, count) => sum + Number(count),
    0
  )

/** How many keys match `pattern` over all servers. */
const keysMatching = async (pattern: string): Promise<number> =>
  (await Promise.all(fleet.servers.map((server) => server.call("KEYS", pattern) as Promise<Array<string>>))).flat()
    .length

/** Until no server holds a key (a release returns at a quorum; the others' deletes land just after), at most 2 s. */
const expectEmpty = () =>
  eventually(
    async () => {
      const sizes = await fleet.dbsizes()
      if (sizes.some((size) => size > 0)) throw new Error(`DBSIZE ${sizes.join(",")}`)
    },
    2_000,
    20
  )

describe("the promise API, 5 redis-servers", () => {
  beforeAll(async () => {
    fleet = await startLocalFleet(5)
  })
  afterAll(() => fleet?.stop())
  beforeEach(async () => {
    await Promise.all(opened.splice(0).map((redlock) => redlock.close()))
    await fleet.reset()
  })

  it("a free resource costs one SET per node and no script; release deletes it, and a second release says so", async () => {
    const redlock = await manager()
    await Promise.all(fleet.servers.map((server) => server.call("CONFIG", "RESETSTAT")))
    const lock = await redlock.acquire("p:one", { ttl: 10_000 })
    for (const info of await Promise.all(fleet.servers.map((server) => server.call("INFO", "commandstats")))) {
      assert.match(String(info), /cmdstat_set:calls=1,/)
      assert.notMatch(String(info), /cmdstat_evalsha/)
    }
    assert.deepStrictEqual(lock.resources, ["p:one"])
    assert.isAtLeast(lock.outcomes.filter((outcome) => outcome._tag === "Ok").length, 3)
    assert.isAtLeast(await keyCount("redlock:p:one"), 3)
    const released = await redlock.release(lock)
    assert.strictEqual(released.status, "Released")
    assert.isAtLeast(released.released, 3)
    assert.strictEqual((await redlock.release(lock)).status, "AlreadyReleased")
    await expectEmpty()
  })

  it("node-redis clients of the user's, alone or beside connection options: each node goes through its own driver", async () => {
    const clients = await Promise.all(
      fleet.servers.slice(0, 3).map(async (server) => {
        const client = createClient({ socket: { host: "127.0.0.1", port: server.port } })
        client.on("error", () => {})
        return client.connect()
      })
    )
    try {
      for (
        const nodes of [clients.map((client) => ({ client })), [
          ...clients.map((client) => ({ client })),
          ...fleet.nodes.slice(3)
        ]]
      ) {
        const redlock = await makeRedlock(nodes, { restartQuarantine: false })
        const lock = await redlock.acquire("p:node-redis", { ttl: 10_000 })
        assert.isAtLeast(
          lock.outcomes.filter((outcome) => outcome._tag === "Ok").length,
          Math.floor(nodes.length / 2) + 1
        )
        // Every node set it (the last may answer after the quorum decided).
        await eventually(
          async () => {
            const count = await keyCount("redlock:p:node-redis")
            if (count !== nodes.length) throw new Error(`${count} of ${nodes.length} nodes hold it`)
          },
          2_000,
          10
        )
        assert.strictEqual((await redlock.release(lock)).status, "Released")
        await redlock.close()
        assert.isTrue(clients.every((client) => client.isReady), "the user's clients stay open")
      }
    } finally {
      await Promise.all(clients.map((client) => client.close().catch(() => {})))
    }
    await expectEmpty()
  })

  it("plain values: times in ms, null for nothing, remaining() and fencingToken() as methods, a plain-string password", async () => {
    await Promise.all(
      fleet.servers.map((server) =>
        server.call("ACL", "SETUSER", "promise-user", "on", ">plain-secret", "~*", "&*", "+@all")
      )
    )
    try {
      const nodes = fleet.nodes.map(({ host, port }) => ({
        host,
        port,
        username: "promise-user",
        password: "plain-secret"
      }))
      const redlock = await makeRedlock(nodes, { restartQuarantine: false })
      opened.push(redlock)
      const lock = await redlock.acquire("p:plain", { ttl: 10_000, retry: noRetry })
      assert.strictEqual(lock.ttlMillis, 10_000)
      assert.isTrue(lock.validityMillis > 9_000 && lock.validityMillis < 10_000, `${lock.validityMillis}`)
      const remaining = lock.remaining()
      assert.isTrue(remaining > 9_000 && remaining <= lock.validityMillis, `${remaining}`)
      const first = await lock.fencingToken()
      assert.strictEqual(typeof first, "bigint")
      assert.strictEqual(await lock.fencingToken(), first, "one token per hold")
      const held = await redlock.inspect("p:plain")
      assert.strictEqual(held.holder, lock.value)
      assert.isTrue(typeof held.ttlMillis === "number" && held.ttlMillis > 9_000)
      assert.strictEqual(held.nodes.length, 5)
      const free = await redlock.inspect("p:nobody")
      assert.isNull(free.holder)
      assert.isNull(free.ttlMillis)
      assert.deepStrictEqual(free.nodes.map((node) => "value" in node ? node.value : "unreadable"), [
        null,
        null,
        null,
        null,
        null
      ])
      assert.strictEqual((await redlock.release(lock)).status, "Released")
      const next = await redlock.acquire("p:plain", { ttl: 10_000, retry: noRetry })
      assert.isTrue((await next.fencingToken()) > first, "the next hold's token is larger")
      await redlock.release(next)
      await eventually(async () => assert.strictEqual(await keyCount("redlock:p:plain"), 0), 2_000, 10)
    } finally {
      await Promise.all(fleet.servers.map((server) => server.call("ACL", "DELUSER", "promise-user")))
    }
  })

  it("semaphore permits and read-write holds from promise code: limits kept, released by release, using or close()", async () => {
    const redlock = await manager()
    const a = await redlock.acquirePermit("p:pool", { limit: 2, ttl: 10_000 })
    const b = await redlock.acquirePermit("p:pool", { limit: 2, ttl: 10_000 })
    assert.notStrictEqual(a.resources[0], b.resources[0], "two slots")
    const third = await outcome(redlock.acquirePermit("p:pool", { limit: 2, ttl: 10_000, retry: noRetry }))
    assert.instanceOf(third, LockNotAcquired)
    assert.strictEqual((third as LockNotAcquired).reason, "Held")
    assert.strictEqual((await redlock.release(a)).status, "Released")
    assert.isTrue(
      await redlock.usingPermit(
        "p:pool",
        { limit: 2, ttl: 10_000, retry: noRetry },
        async (permit) => permit.remaining() > 0
      )
    )
    await redlock.release(b)

    const reader = await redlock.acquireRead("p:doc", { ttl: 10_000, maxReaders: 2 })
    assert.instanceOf(
      await outcome(redlock.acquireWrite("p:doc", { ttl: 10_000, maxReaders: 2, retry: noRetry })),
      LockNotAcquired
    )
    assert.strictEqual(
      await redlock.usingRead("p:doc", { ttl: 10_000, maxReaders: 2, retry: noRetry }, async () => "read"),
      "read"
    )
    await redlock.release(reader)
    const written = await redlock.usingWrite(
      "p:doc",
      { ttl: 10_000, maxReaders: 2, retry: noRetry },
      async (hold) => hold.resources.length
    )
    assert.strictEqual(written, 2, "a writer holds every read slot")
    // A writer waits behind a reader, and is woken by the reader's release.
    const reading = await redlock.acquireRead("p:doc", { ttl: 10_000, maxReaders: 2 })
    const writing = redlock.acquireWrite("p:doc", { ttl: 10_000, maxReaders: 2, retry: slowRetry })
    await sleep(200)
    const releasedAt = performance.now()
    await redlock.release(reading)
    const writer = await writing
    assert.isBelow(performance.now() - releasedAt, 2_000, "woken by the reader's release")
    assert.strictEqual(writer.resources.length, 2)
    await redlock.release(writer)
    // A permit and a read left held are released by close().
    await redlock.acquirePermit("p:left", { limit: 1, ttl: 10_000 })
    await redlock.acquireRead("p:left-read", { ttl: 10_000 })
    await redlock.close()
    await expectEmpty()
  })

  it("a permit's waiter is woken by a release; another limit is SettingConflict; an aborted wait leaves the line", async () => {
    const redlock = await manager()
    const other = await manager()
    const held = await redlock.acquirePermit("p:perm", { limit: 1, ttl: 10_000 })
    const waiting = other.acquirePermit("p:perm", { limit: 1, ttl: 10_000, retry: slowRetry })
    await sleep(300)
    const released = performance.now()
    await redlock.release(held)
    const woken = await waiting
    assert.isBelow(performance.now() - released, 2_000, "woken by the release, not by its schedule")
    assert.strictEqual(woken.resources[0], "p:perm\u0000permit0", "its slot, named as the Effect API names it")

    const conflict = await outcome(redlock.acquirePermit("p:perm", { limit: 2, ttl: 10_000, retry: slowRetry }))
    assert.instanceOf(conflict, SettingConflict)
    assert.deepInclude(conflict as SettingConflict, { resource: "p:perm", setting: "limit", requested: 2, recorded: 1 })

    const controller = new AbortController()
    const aborted = outcome(
      redlock.acquirePermit("p:perm", { limit: 1, ttl: 10_000, retry: slowRetry, signal: controller.signal })
    )
    await sleep(200)
    assert.isAtLeast(await keysMatching("redlock:p:perm*queue"), 3, "the waiter stands in the permits' line")
    controller.abort(new Error("gave up"))
    assert.strictEqual(((await aborted) as Error).message, "gave up")
    assert.strictEqual(await keysMatching("redlock:p:perm*queue"), 0)
    await other.release(woken)
    await expectEmpty()
  })

  it("a held lock: noRetry rejects with LockNotAcquired after 1 attempt; bad options, checked again once changed, reject with InvalidOptions", async () => {
    const redlock = await manager()
    const lock = await redlock.acquire("p:held", { ttl: 10_000 })
    const refused = await outcome(redlock.acquire("p:held", { ttl: 10_000, retry: noRetry }))
    assert.instanceOf(refused, LockNotAcquired)
    assert.strictEqual((refused as LockNotAcquired).reason, "Held")
    assert.strictEqual((refused as LockNotAcquired).attempts, 1)
    assert.instanceOf(await outcome(redlock.acquire("p:bad", { ttl: -5 })), InvalidOptions)
    assert.strictEqual(await keyCount("redlock:p:bad"), 0)
    // The same options object, checked again once a field changed (the manager keeps the last options it checked).
    const options: { ttl: number; retry: typeof noRetry } = { ttl: 10_000, retry: noRetry }
    await redlock.using("p:same", options, async () => undefined)
    options.ttl = -5
    assert.instanceOf(await outcome(redlock.using("p:same", options, async () => undefined)), InvalidOptions)
    // A lock of another manager is a programmer error, told by a rejected promise (not a throw).
    const other = await manager()
    assert.instanceOf(await outcome(other.release(lock)), TypeError)
    await redlock.release(lock)
    await expectEmpty()
  })

  it("options that are no object, a body that is no function, a signal that is no AbortSignal: InvalidOptions before anything is sent", async () => {
    const redlock = await manager()
    // Held, so that a signal that is no AbortSignal would reach the waiting (which once threw in a callback, uncaught).
    const lock = await redlock.acquire("p:input", { ttl: 10_000 })
    await Promise.all(fleet.servers.map((server) => server.call("CONFIG", "RESETSTAT")))
    const body = async () => "ran"
    const cases: ReadonlyArray<[string, () => Promise<unknown>]> = [
      ["options", () => redlock.acquire("p:input", null as unknown as AcquireOptions)],
      ["options", () => redlock.using("p:input", undefined as unknown as AcquireOptions, body)],
      ["options", () => redlock.acquirePermit("p:input", null as unknown as { limit: number; ttl: number })],
      ["options", () => redlock.acquireRead("p:input", null as unknown as { ttl: number })],
      ["options", () => redlock.acquireWrite("p:input", undefined as unknown as { ttl: number })],
      ["body", () => redlock.using("p:input", { ttl: 1_000 }, undefined as unknown as typeof body)],
      ["body", () => redlock.usingPermit("p:input", { limit: 1, ttl: 1_000 }, "run" as unknown as typeof body)],
      ["body", () => redlock.usingWrite("p:input", { ttl: 1_000 }, {} as unknown as typeof body)],
      ["signal", () => redlock.acquire("p:input", { ttl: 1_000, signal: 5 as unknown as AbortSignal })],
      ["signal", () => redlock.using("p:input", { ttl: 1_000, signal: {} as AbortSignal }, body)],
      [
        "signal",
        () => redlock.acquirePermit("p:input", { limit: 1, ttl: 1_000, signal: "stop" as unknown as AbortSignal })
      ]
    ]
    for (const [option, call] of cases) {
      const error = await outcome(call())
      assert.instanceOf(error, InvalidOptions, option)
      assert.strictEqual((error as InvalidOptions).option, option)
    }
    for (const info of await Promise.all(fleet.servers.map((server) => server.call("INFO", "commandstats")))) {
      assert.notMatch(String(info), /cmdstat_(evalsha|set|get):/, "nothing was sent")
    }
    await redlock.release(lock)
    await expectEmpty()
  })

  it("close(): a waiting acquisition leaves its line and rejects with ManagerClosed; every call after it rejects so at once", async () => {
    const holder = await manager()
    const redlock = await makeRedlock(fleet.nodes, { restartQuarantine: false })
    const lock = await holder.acquire("p:close", { ttl: 10_000 })
    const permit = await holder.acquirePermit("p:close-pool", { limit: 1, ttl: 10_000 })
    const own = await redlock.acquirePermit("p:close-own", { limit: 1, ttl: 10_000 })
    await redlock.acquire("p:close-lock", { ttl: 10_000 })
    // A body still running when close() releases its lock: its signal aborts with LockLost (Released).
    const running = redlock.using(
      "p:close-using",
      { ttl: 10_000 },
      (_, signal) =>
        new Promise((resolve) => signal.addEventListener("abort", () => resolve(signal.reason), { once: true }))
    )
    const waiting = [
      outcome(redlock.acquire("p:close", { ttl: 10_000, retry: slowRetry })),
      outcome(redlock.usingPermit("p:close-pool", { limit: 1, ttl: 10_000, retry: slowRetry }, async () => "ran"))
    ]
    await sleep(200)
    assert.isAtLeast(await keysMatching("redlock:p:close*queue"), 6, "both wait in their lines")
    const closing = redlock.close()
    assert.strictEqual(redlock.close(), closing, "a second close is the same close")
    for (const error of await Promise.all(waiting)) {
      assert.instanceOf(error, ManagerClosed)
      assert.strictEqual((error as ManagerClosed)._tag, "ManagerClosed")
    }
    // They left their lines before rejecting; what it held was released by close().
    assert.strictEqual(await keysMatching("redlock:p:close*queue"), 0)
    await closing
    const aborted = await running
    assert.instanceOf(aborted, LockLost)
    assert.strictEqual((aborted as LockLost).reason, "Released")
    for (const key of ["redlock:p:close-own\u0000permit0", "redlock:p:close-lock", "redlock:p:close-using"]) {
      assert.strictEqual(await keyCount(key), 0, key)
    }
    const after: ReadonlyArray<() => Promise<unknown>> = [
      () => redlock.acquire("p:after", { ttl: 1_000 }),
      () => redlock.using("p:after", { ttl: 1_000 }, async () => "ran"),
      () => redlock.acquirePermit("p:after", { limit: 1, ttl: 1_000 }),
      () => redlock.usingRead("p:after", { ttl: 1_000 }, async () => "ran"),
      () => redlock.inspect("p:after"),
      () => redlock.extend(own, 10_000),
      () => own.fencingToken()
    ]
    for (const call of after) assert.instanceOf(await outcome(call()), ManagerClosed)
    assert.strictEqual(await keyCount("redlock:p:after"), 0)
    await holder.release(lock)
    await holder.release(permit)
    await expectEmpty()
  })

  it("close() called while first attempts are out: it waits for them; the granted are released, the refused leave their lines", async () => {
    const holder = await manager()
    const redlock = await makeRedlock(fleet.nodes, { restartQuarantine: false })
    const lock = await holder.acquire("p:racing-held", { ttl: 10_000 })
    // In the same tick as close(): every first attempt is still out when it is called.
    const racing = [
      ...["p:racing-a", "p:racing-b"].map((resource) => outcome(redlock.acquire(resource, { ttl: 10_000 }))),
      outcome(redlock.acquirePermit("p:racing-pool", { limit: 2, ttl: 10_000 })),
      ...[1, 2].map(() => outcome(redlock.acquire("p:racing-held", { ttl: 10_000, retry: slowRetry })))
    ]
    await redlock.close()
    // Nothing of this manager is left on any server the moment close() is done.
    assert.strictEqual((await fleet.dbsizes()).reduce((a, b) => a + b, 0), 5, "only the holder's key")
    for (const ended of await Promise.all(racing)) assert.instanceOf(ended, ManagerClosed)
    await holder.release(lock)
    await expectEmpty()
  })

  it("held by another on 3 of 5 nodes: refused, and the 2 keys this attempt set are undone at once", async () => {
    const redlock = await manager()
    await Promise.all(
      [0, 2, 4].map((i) => fleet.servers[i].call("SET", "redlock:p:split", "someone-else", "PX", 10_000))
    )
    const refused = await outcome(redlock.acquire("p:split", { ttl: 10_000, retry: noRetry }))
    assert.instanceOf(refused, LockNotAcquired)
    const outcomes = (refused as LockNotAcquired).outcomes.map((outcome) => outcome._tag)
    assert.strictEqual(outcomes.filter((tag) => tag === "Held").length, 3, outcomes.join())
    // The undo was sent before the promise rejected, each node's bounded by the node timeout (a loaded
    // machine may see it land just after): only the other holder's keys are left.
    await eventually(async () => assert.strictEqual(await keyCount("redlock:p:split"), 3), 1_000, 10)
    for (const i of [1, 3]) assert.isNull(await fleet.servers[i].call("GET", "redlock:p:split"))
  })

  it("four managers contending with retries never overlap, and every one gets its turns", async () => {
    const managers = await Promise.all([0, 1, 2, 3].map(() => manager()))
    let holding = 0
    let overlaps = 0
    const turns = [0, 0, 0, 0]
    const contending = retry({ delay: 5, times: 2_000 })
    await Promise.all(managers.map(async (redlock, index) => {
      for (let i = 0; i < 10; i++) {
        const lock = await redlock.acquire("p:shared", { ttl: 2_000, retry: contending })
        if (++holding > 1) overlaps++
        await sleep(2)
        holding--
        turns[index]++
        await redlock.release(lock)
      }
    }))
    assert.strictEqual(overlaps, 0, "never two holders at once")
    assert.deepStrictEqual(turns, [10, 10, 10, 10])
    await expectEmpty()
  })

  it("the default retry, never woken: rejects after 5 attempts (the first, one on its line's subscription, 3 retries) and leaves the line", async () => {
    const redlock = await manager()
    const lock = await redlock.acquire("p:default", { ttl: 10_000 })
    const error = await outcome(redlock.acquire("p:default", { ttl: 10_000 }))
    assert.instanceOf(error, LockNotAcquired)
    assert.strictEqual((error as LockNotAcquired).attempts, 5)
    assert.strictEqual(await keyCount("redlock:p:default\u0000queue"), 0)
    await redlock.release(lock)
    await expectEmpty()
  })

  it("retry({ delay, times, jitter }) is stepped with Math.random's draws: three retries ~200 ms apart", async () => {
    const redlock = await manager()
    const lock = await redlock.acquire("p:retry", { ttl: 10_000 })
    const random = vi.spyOn(Math, "random").mockReturnValue(0.999)
    const started = performance.now()
    const error = await outcome(
      redlock.acquire("p:retry", { ttl: 10_000, retry: retry({ delay: 200, times: 3, jitter: { min: 0.1, max: 1 } }) })
        .finally(() => random.mockRestore())
    )
    const elapsed = performance.now() - started
    assert.instanceOf(error, LockNotAcquired)
    assert.strictEqual((error as LockNotAcquired).attempts, 5)
    assert.isAtLeast(elapsed, 590, `gave up after ${Math.round(elapsed)} ms`)
    assert.strictEqual(await keyCount("redlock:p:retry\u0000queue"), 0)
    await redlock.release(lock)
    await expectEmpty()
  })

  it("invalid manager options, node-redlock's settings and nodes that are no list reject makeRedlock with InvalidOptions", async () => {
    const node = fleet.nodes[0]
    assert.instanceOf(await outcome(makeRedlock([node], { driftFactor: 2 })), InvalidOptions)
    // node-redlock's settings, given as they were: said where they go, not ignored.
    const migrated = await outcome(makeRedlock([node], { retryCount: -1, retryDelay: 200 } as PromiseOptions))
    assert.instanceOf(migrated, InvalidOptions)
    assert.strictEqual((migrated as InvalidOptions).option, "retryCount")
    assert.include((migrated as InvalidOptions).message, "docs/migrating-from-node-redlock.md")
    // Per acquisition too, also right after the same options without it were taken (the manager keeps them checked).
    const redlock = await manager()
    await redlock.release(await redlock.acquire("migrated", { ttl: 1000 }))
    const once = await outcome(redlock.acquire("migrated", { ttl: 1000, retryCount: 0 } as AcquireOptions))
    assert.strictEqual((once as InvalidOptions).option, "retryCount")
    // Nodes that are no list, or a list entry that is no object: InvalidOptions naming the nodes, not a TypeError.
    const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
      ["redis://127.0.0.1", /got "redis:\/\/127\.0\.0\.1" \(a URL goes as \{ url \}\)$/],
      [[null], /node 0 .* got null$/],
      // A URL's password is not shown back.
      [
        ["redis://app:s3cret@127.0.0.1:6379"],
        /^node 0 .* got "redis:\/\/\*\*\*@127\.0\.0\.1:6379" \(a URL goes as \{ url \}\)$/
      ],
      [[node, { ...node, db: 2 }], /^nodes 0 and 1 are one server \(127\.0\.0\.1:\d+\)/]
    ]
    for (const [nodes, detail] of cases) {
      const refused = await outcome(makeRedlock(nodes as never))
      assert.instanceOf(refused, InvalidOptions)
      assert.strictEqual((refused as InvalidOptions).option, "nodes")
      assert.match((refused as InvalidOptions).detail, detail)
      assert.notInclude((refused as InvalidOptions).message, "s3cret")
    }
    // A URL (or user@host) as the host: refused, not a node that waits for a connection that never comes.
    for (const host of ["redis://app:s3cret@127.0.0.1", "app@127.0.0.1"]) {
      const refused = await outcome(makeRedlock([{ host, port: node.port }]))
      assert.instanceOf(refused, InvalidOptions, host)
      assert.strictEqual((refused as InvalidOptions).option, "host")
      assert.include((refused as InvalidOptions).detail, "must be a host name or an IP address")
      assert.notInclude((refused as InvalidOptions).message, "s3cret")
    }
  })
})

describe("the promise API's manager, on its own", () => {
  it("a lock left to expire is not kept for close(): the manager lets go of it once past its validity", async () => {
    v8.setFlagsFromString("--expose-gc")
    const gc = vm.runInNewContext("gc") as () => void
    const redlock = await makeRedlock(memoryNodes(1), { logger: { warn: () => {} } })
    const held = await redlock.acquire("left-to-expire", { ttl: 20 }).then((lock) => new WeakRef(lock))
    await sleep(60)
    // Enough locks still held to make the manager look over the ones it keeps for close().
    for (let index = 0; index < 70; index++) await redlock.acquire(`later-${index}`, { ttl: 10_000 })
    // deref() keeps its target alive to the end of the current job: collect in jobs of their own.
    for (let round = 0; round < 3; round++) {
      gc()
      await sleep(10)
    }
    assert.isUndefined(held.deref(), "the expired lock was let go")
    await redlock.close()
  })

  it("warnings go to the logger given, as plain lines, and say what is true: a server not reachable yet; a logger of the wrong kind is InvalidOptions", async () => {
    const port = await freePort()
    const warned: Array<string> = []
    const redlock = await makeRedlock([{ host: "127.0.0.1", port, connectTimeout: 50 }], {
      logger: { warn: (line) => void warned.push(line) }
    })
    await redlock.close()
    assert.deepStrictEqual(warned, [
      `effect-redlock: 1 of 1 nodes do not vote yet (127.0.0.1:${port}: not reachable yet); 0 vote, 1 needed: acquisitions fail until then`
    ])
    const refused = await outcome(makeRedlock(memoryNodes(1), { logger: { warn: "stderr" } as never }))
    assert.instanceOf(refused, InvalidOptions)
    assert.strictEqual((refused as InvalidOptions).option, "logger")
  })

  it("without a logger, warnings are one plain line each on stderr, and nothing on stdout", async () => {
    const port = await freePort()
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true)
    const stdout = vi.spyOn(process.stdout, "write")
    try {
      const redlock = await makeRedlock([{ host: "127.0.0.1", port, connectTimeout: 50 }])
      await redlock.close()
      const lines = stderr.mock.calls.map(([chunk]) => String(chunk)).filter((line) =>
        line.startsWith("effect-redlock:")
      )
      assert.deepStrictEqual(lines, [
        `effect-redlock: 1 of 1 nodes do not vote yet (127.0.0.1:${port}: not reachable yet); 0 vote, 1 needed: acquisitions fail until then\n`
      ])
      assert.isFalse(
        stdout.mock.calls.some(([chunk]) => String(chunk).includes("effect-redlock")),
        "nothing of ours on stdout"
      )
    } finally {
      stderr.mockRestore()
      stdout.mockRestore()
    }
  })
})
