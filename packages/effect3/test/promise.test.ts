/**
 * The promise facade (effect-redlock/Promise) against 5 real redis-servers:
 * the first attempt and release, the waiting, `using` and its signal,
 * aborting, auto-extension; and over in-memory nodes (the same engine).
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { createClient } from "redis"
import { freePort } from "@effect-redlock/fleet/freePort.js"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import { makeRedlock, noRetry, type PromiseRedlock, retry } from "../src/Promise.js"
import * as RedisNode from "../src/RedisNode.js"
import type * as Redlock from "../src/Redlock.js"
import { InvalidOptions, LockLost, LockNotAcquired, ManagerClosed, SettingConflict } from "../src/RedlockError.js"
import * as Util from "node:util"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { vi } from "vitest"
import { aclUser, expectEmpty, overlaps, type Section, slowRetry } from "./support.js"

/** A facade over the fleet, closed when the test's scope closes. */
const facade = (fleet: RedisFleet.Fleet, options?: Redlock.Options) =>
  Effect.acquireRelease(
    Effect.promise(() => makeRedlock(fleet.nodes, { restartQuarantine: false, ...options })),
    (redlock) => Effect.promise(() => redlock.close())
  )

const keyCount = (fleet: RedisFleet.Fleet, key: string) =>
  Effect.map(Effect.forEach(fleet.servers, (server) => server.call("EXISTS", key)), (counts) =>
    counts.reduce((sum: number, count) => sum + Number(count), 0))

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** How a promise ended: "acquired", or its rejection. */
const outcome = (promise: Promise<unknown>) => promise.then(() => "acquired", (error: unknown) => error)

layer(RedisFleet.layerLocal(5), { timeout: 60_000, excludeTestServices: true })("promise facade, 5 redis-servers", (it) => {
  it.scoped("acquire sets the key on every node, release deletes it; a second release says so", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* facade(fleet)
      yield* Effect.forEach(fleet.servers, (server) => server.call("CONFIG", "RESETSTAT"))
      const lock = yield* Effect.promise(() => redlock.acquire("p:one", { ttl: 10_000 }))
      // A free resource costs one native SET NX PX per node, no script (the probe, see acquisition.ts).
      const stats = yield* Effect.forEach(fleet.servers, (server) => server.call("INFO", "commandstats"))
      for (const info of stats) {
        assert.match(String(info), /cmdstat_set:calls=1,/)
        assert.notMatch(String(info), /cmdstat_evalsha/)
      }
      assert.deepStrictEqual(lock.resources, ["p:one"])
      assert.strictEqual(lock.outcomes.filter((outcome) => outcome._tag === "Ok").length >= 3, true)
      // A release returns at a quorum; the other nodes' sets landed before it on their connection.
      assert.isAtLeast(yield* keyCount(fleet, "redlock:p:one"), 3)
      const released = yield* Effect.promise(() => redlock.release(lock))
      assert.strictEqual(released.status, "Released")
      assert.isAtLeast(released.released, 3)
      assert.strictEqual((yield* Effect.promise(() => redlock.release(lock))).status, "AlreadyReleased")
      yield* expectEmpty(fleet)
    }))

  it.scoped("node-redis clients of the user's, alone or beside ioredis options: each node goes through its own driver", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const clients = yield* Effect.acquireRelease(
        Effect.promise(() =>
          Promise.all(fleet.servers.slice(0, 3).map(async (server) => {
            const client = createClient({ socket: { host: "127.0.0.1", port: server.port } })
            client.on("error", () => {})
            return client.connect()
          }))
        ),
        (clients) => Effect.promise(() => Promise.all(clients.map((client) => client.close().catch(() => {}))))
      )
      for (const nodes of [clients.map((client) => ({ client })), [...clients.map((client) => ({ client })), ...fleet.nodes.slice(3)]]) {
        const redlock = yield* Effect.acquireRelease(
          Effect.promise(() => makeRedlock(nodes, { restartQuarantine: false })),
          (redlock) => Effect.promise(() => redlock.close())
        )
        const lock = yield* Effect.promise(() => redlock.acquire("p:node-redis", { ttl: 10_000 }))
        assert.isAtLeast(lock.outcomes.filter((outcome) => outcome._tag === "Ok").length, Math.floor(nodes.length / 2) + 1)
        // Every node set it (the last may answer after the quorum decided).
        yield* keyCount(fleet, "redlock:p:node-redis").pipe(
          Effect.filterOrFail((count) => count === nodes.length, (count) => `${count} of ${nodes.length} nodes hold it`),
          Effect.retry(Schedule.spaced("10 millis").pipe(Schedule.upTo("2 seconds")))
        )
        assert.strictEqual((yield* Effect.promise(() => redlock.release(lock))).status, "Released")
        yield* Effect.promise(() => redlock.close())
        assert.isTrue(clients.every((client) => client.isReady), "the user's clients stay open")
      }
      yield* expectEmpty(fleet)
    }))

  it.scoped("plain values: times in ms, null for nothing, remaining() and fencingToken() as methods, a plain-string password", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      yield* aclUser(fleet, "facade-user", "plain-secret")
      const nodes = fleet.nodes.map(({ host, port }) => ({ host, port, username: "facade-user", password: "plain-secret" }))
      const redlock = yield* Effect.acquireRelease(
        Effect.promise(() => makeRedlock(nodes, { restartQuarantine: false })),
        (redlock) => Effect.promise(() => redlock.close())
      )
      const lock = yield* Effect.promise(() => redlock.acquire("p:plain", { ttl: 10_000, retry: noRetry }))
      assert.strictEqual(lock.ttlMillis, 10_000)
      assert.isTrue(lock.validityMillis > 9_000 && lock.validityMillis < 10_000, `${lock.validityMillis}`)
      const remaining = lock.remaining()
      assert.isTrue(typeof remaining === "number" && remaining > 9_000 && remaining <= lock.validityMillis, `${remaining}`)
      const first = yield* Effect.promise(() => lock.fencingToken())
      assert.strictEqual(typeof first, "bigint")
      assert.strictEqual(yield* Effect.promise(() => lock.fencingToken()), first, "one token per hold")
      const held = yield* Effect.promise(() => redlock.inspect("p:plain"))
      assert.strictEqual(held.holder, lock.value)
      assert.isTrue(typeof held.ttlMillis === "number" && held.ttlMillis > 9_000)
      assert.strictEqual(held.nodes.length, 5)
      const free = yield* Effect.promise(() => redlock.inspect("p:nobody"))
      assert.isNull(free.holder)
      assert.isNull(free.ttlMillis)
      assert.deepStrictEqual(free.nodes.map((node) => "value" in node ? node.value : "unreadable"), [null, null, null, null, null])
      assert.strictEqual((yield* Effect.promise(() => redlock.release(lock))).status, "Released")
      const next = yield* Effect.promise(() => redlock.acquire("p:plain", { ttl: 10_000, retry: noRetry }))
      assert.isTrue((yield* Effect.promise(() => next.fencingToken())) > first, "the next hold's token is larger")
      yield* Effect.promise(() => redlock.release(next))
      assert.strictEqual(yield* keyCount(fleet, "redlock:p:plain"), 0, "released (the fence counters stay, by design)")
    }))

  it.scoped("semaphore permits and read-write holds from promise code: limits kept, released by release or using", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* facade(fleet)
      const a = yield* Effect.promise(() => redlock.acquirePermit("p:pool", { limit: 2, ttl: 10_000 }))
      const b = yield* Effect.promise(() => redlock.acquirePermit("p:pool", { limit: 2, ttl: 10_000 }))
      assert.notStrictEqual(a.resources[0], b.resources[0], "two slots")
      const third = yield* Effect.promise(() =>
        redlock.acquirePermit("p:pool", { limit: 2, ttl: 10_000, retry: noRetry }).then(() => undefined, (error: unknown) => error)
      )
      assert.instanceOf(third, LockNotAcquired)
      assert.strictEqual((third as LockNotAcquired).reason, "Held")
      assert.strictEqual((yield* Effect.promise(() => redlock.release(a))).status, "Released")
      const inUsing = yield* Effect.promise(() =>
        redlock.usingPermit("p:pool", { limit: 2, ttl: 10_000, retry: noRetry }, async (permit) => permit.remaining() > 0)
      )
      assert.isTrue(inUsing)
      yield* Effect.promise(() => redlock.release(b))

      const reader = yield* Effect.promise(() => redlock.acquireRead("p:doc", { ttl: 10_000, maxReaders: 2 }))
      const writerRefused = yield* Effect.promise(() =>
        redlock.acquireWrite("p:doc", { ttl: 10_000, maxReaders: 2, retry: noRetry }).then(() => undefined, (error: unknown) => error)
      )
      assert.instanceOf(writerRefused, LockNotAcquired)
      const secondReader = yield* Effect.promise(() =>
        redlock.usingRead("p:doc", { ttl: 10_000, maxReaders: 2, retry: noRetry }, async () => "read")
      )
      assert.strictEqual(secondReader, "read")
      yield* Effect.promise(() => redlock.release(reader))
      const written = yield* Effect.promise(() =>
        redlock.usingWrite("p:doc", { ttl: 10_000, maxReaders: 2, retry: noRetry }, async (hold) => hold.resources.length)
      )
      assert.strictEqual(written, 2, "a writer holds every read slot")
      // A writer waits behind a reader, and is woken by the reader's release.
      const reading = yield* Effect.promise(() => redlock.acquireRead("p:doc", { ttl: 10_000, maxReaders: 2 }))
      const slow = Schedule.spaced("10 seconds").pipe(Schedule.intersect(Schedule.recurs(3)))
      const writing = redlock.acquireWrite("p:doc", { ttl: 10_000, maxReaders: 2, retry: slow })
      yield* Effect.promise(() => sleep(200))
      const releasedAt = performance.now()
      yield* Effect.promise(() => redlock.release(reading))
      const writer = yield* Effect.promise(() => writing)
      assert.isBelow(performance.now() - releasedAt, 2_000, "woken by the reader's release")
      assert.strictEqual(writer.resources.length, 2)
      yield* Effect.promise(() => redlock.release(writer))
      // A permit and a read left held are released by close().
      yield* Effect.promise(() => redlock.acquirePermit("p:left", { limit: 1, ttl: 10_000 }))
      yield* Effect.promise(() => redlock.acquireRead("p:left-read", { ttl: 10_000 }))
      yield* Effect.promise(() => redlock.close())
      yield* expectEmpty(fleet)
    }))

  it.scoped("a permit from promise code (no fiber): the waiter woken by a release, another limit refused, an aborted wait leaves the line", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* facade(fleet)
      const other = yield* facade(fleet)
      const queued = Effect.map(
        Effect.forEach(fleet.servers, (server) => server.call("KEYS", "redlock:p:perm*queue")),
        (found) => found.flat().length
      )
      const held = yield* Effect.promise(() => redlock.acquirePermit("p:perm", { limit: 1, ttl: 10_000 }))
      // A waiter on a 10 s schedule: only the release can wake it sooner.
      const slow = Schedule.spaced("10 seconds").pipe(Schedule.intersect(Schedule.recurs(3)))
      const waiting = other.acquirePermit("p:perm", { limit: 1, ttl: 10_000, retry: slow })
      yield* Effect.promise(() => sleep(300))
      const released = performance.now()
      yield* Effect.promise(() => redlock.release(held))
      const woken = yield* Effect.promise(() => waiting)
      assert.isBelow(performance.now() - released, 2_000, "woken by the release, not by its schedule")
      assert.strictEqual(woken.resources[0], "p:perm\u0000permit0", "its slot, named as the Effect API names it")

      const conflict = yield* Effect.promise(() =>
        redlock.acquirePermit("p:perm", { limit: 2, ttl: 10_000, retry: slow }).then(() => undefined, (error: unknown) => error)
      )
      assert.instanceOf(conflict, SettingConflict)
      assert.deepInclude(conflict as SettingConflict, { resource: "p:perm", setting: "limit", requested: 2, recorded: 1 })

      const controller = new AbortController()
      const aborted = redlock.acquirePermit("p:perm", { limit: 1, ttl: 10_000, retry: slow, signal: controller.signal })
        .then(() => "acquired", (error: unknown) => error)
      yield* Effect.promise(() => sleep(200))
      assert.isAtLeast(yield* queued, 3, "the waiter stands in the permits' line")
      controller.abort(new Error("gave up"))
      assert.strictEqual(((yield* Effect.promise(() => aborted)) as Error).message, "gave up")
      assert.strictEqual(yield* queued, 0)
      yield* Effect.promise(() => other.release(woken))
      yield* expectEmpty(fleet)
    }))

  it.scoped("a held lock: noRetry rejects with LockNotAcquired at once; bad options reject with InvalidOptions", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* facade(fleet)
      const lock = yield* Effect.promise(() => redlock.acquire("p:held", { ttl: 10_000 }))
      const refused = yield* Effect.promise(() =>
        redlock.acquire("p:held", { ttl: 10_000, retry: Schedule.stop }).then(() => undefined, (error: unknown) => error)
      )
      assert.instanceOf(refused, LockNotAcquired)
      assert.strictEqual((refused as LockNotAcquired).reason, "Held")
      assert.strictEqual((refused as LockNotAcquired).attempts, 1)
      const invalid = yield* Effect.promise(() =>
        redlock.acquire("p:bad", { ttl: -5 }).then(() => undefined, (error: unknown) => error)
      )
      assert.instanceOf(invalid, InvalidOptions)
      assert.strictEqual(yield* keyCount(fleet, "redlock:p:bad"), 0)
      // The same options object, checked again once a field changed (the manager keeps the last options it checked).
      const options: { ttl: number; retry: typeof Schedule.stop } = { ttl: 10_000, retry: Schedule.stop }
      yield* Effect.promise(() => redlock.using("p:same", options, async () => undefined))
      options.ttl = -5
      const changed = yield* Effect.promise(() =>
        redlock.using("p:same", options, async () => undefined).then(() => undefined, (error: unknown) => error)
      )
      assert.instanceOf(changed, InvalidOptions)
      // A lock of another manager is a programmer error, told by a rejected promise (not a throw).
      const other = yield* facade(fleet)
      const foreign = yield* Effect.promise(() => other.release(lock).then(() => undefined, (error: unknown) => error))
      assert.instanceOf(foreign, TypeError)
      yield* Effect.promise(() => redlock.release(lock))
      yield* expectEmpty(fleet)
    }))

  it.scoped("options that are no object, a body that is no function, a signal that is no AbortSignal: InvalidOptions before anything is sent", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* facade(fleet)
      // Held, so that a signal that is no AbortSignal would reach the waiting (which once threw in a callback, uncaught).
      const lock = yield* Effect.promise(() => redlock.acquire("p:input", { ttl: 10_000 }))
      yield* Effect.forEach(fleet.servers, (server) => server.call("CONFIG", "RESETSTAT"))
      const body = async () => "ran"
      const cases: ReadonlyArray<[string, () => Promise<unknown>]> = [
        ["options", () => redlock.acquire("p:input", null as unknown as Redlock.AcquireOptions)],
        ["options", () => redlock.using("p:input", undefined as unknown as Redlock.AcquireOptions, body)],
        ["options", () => redlock.acquirePermit("p:input", null as unknown as { limit: number; ttl: number })],
        ["options", () => redlock.acquireRead("p:input", null as unknown as { ttl: number })],
        ["options", () => redlock.acquireWrite("p:input", undefined as unknown as { ttl: number })],
        ["body", () => redlock.using("p:input", { ttl: 1_000 }, undefined as unknown as typeof body)],
        ["body", () => redlock.usingPermit("p:input", { limit: 1, ttl: 1_000 }, "run" as unknown as typeof body)],
        ["body", () => redlock.usingWrite("p:input", { ttl: 1_000 }, {} as unknown as typeof body)],
        ["signal", () => redlock.acquire("p:input", { ttl: 1_000, signal: 5 as unknown as AbortSignal })],
        ["signal", () => redlock.using("p:input", { ttl: 1_000, signal: {} as AbortSignal }, body)],
        ["signal", () => redlock.acquirePermit("p:input", { limit: 1, ttl: 1_000, signal: "stop" as unknown as AbortSignal })]
      ]
      for (const [option, call] of cases) {
        const error = yield* Effect.promise(() => call().then(() => undefined, (e: unknown) => e))
        assert.instanceOf(error, InvalidOptions, option)
        assert.strictEqual((error as InvalidOptions).option, option)
      }
      for (const info of yield* Effect.forEach(fleet.servers, (server) => server.call("INFO", "commandstats"))) {
        assert.notMatch(String(info), /cmdstat_(evalsha|set|get):/, "nothing was sent")
      }
      yield* Effect.promise(() => redlock.release(lock))
      yield* expectEmpty(fleet)
    }))

  it.scoped("close(): a waiting acquisition leaves its line and rejects with ManagerClosed; every call after it rejects so at once", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const holder = yield* facade(fleet)
      const redlock = yield* Effect.promise(() => makeRedlock(fleet.nodes, { restartQuarantine: false }))
      const queued = (pattern: string) =>
        Effect.map(Effect.forEach(fleet.servers, (server) => server.call("KEYS", pattern)), (found) => found.flat().length)
      const lock = yield* Effect.promise(() => holder.acquire("p:close", { ttl: 10_000 }))
      const permit = yield* Effect.promise(() => holder.acquirePermit("p:close-pool", { limit: 1, ttl: 10_000 }))
      const own = yield* Effect.promise(() => redlock.acquirePermit("p:close-own", { limit: 1, ttl: 10_000 }))
      yield* Effect.promise(() => redlock.acquire("p:close-lock", { ttl: 10_000 }))
      // A body still running when close() releases its lock: its signal aborts with LockLost (Released).
      const running = redlock.using("p:close-using", { ttl: 10_000 }, (_, signal) =>
        new Promise((resolve) => signal.addEventListener("abort", () => resolve(signal.reason), { once: true })))
      const waiting = [
        outcome(redlock.acquire("p:close", { ttl: 10_000, retry: slowRetry })),
        outcome(redlock.usingPermit("p:close-pool", { limit: 1, ttl: 10_000, retry: slowRetry }, async () => "ran"))
      ]
      yield* Effect.promise(() => sleep(200))
      assert.isAtLeast(yield* queued("redlock:p:close*queue"), 6, "both wait in their lines")
      const closing = redlock.close()
      assert.strictEqual(redlock.close(), closing, "a second close is the same close")
      const ended = yield* Effect.promise(() => Promise.all(waiting))
      for (const error of ended) {
        assert.instanceOf(error, ManagerClosed)
        assert.strictEqual((error as ManagerClosed)._tag, "ManagerClosed")
      }
      // They left their lines before rejecting; what it held was released by close().
      assert.strictEqual(yield* queued("redlock:p:close*queue"), 0)
      yield* Effect.promise(() => closing)
      const aborted = yield* Effect.promise(() => running)
      assert.instanceOf(aborted, LockLost)
      assert.strictEqual((aborted as LockLost).reason, "Released")
      for (const key of ["redlock:p:close-own\u0000permit0", "redlock:p:close-lock", "redlock:p:close-using"]) {
        assert.strictEqual(yield* keyCount(fleet, key), 0, key)
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
      for (const call of after) assert.instanceOf(yield* Effect.promise(() => outcome(call())), ManagerClosed)
      assert.strictEqual(yield* keyCount(fleet, "redlock:p:after"), 0)
      yield* Effect.promise(() => holder.release(lock))
      yield* Effect.promise(() => holder.release(permit))
      yield* expectEmpty(fleet)
    }))

  it.scoped("close() called while first attempts are out: it waits for them; the granted are released, the refused leave their lines", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const holder = yield* facade(fleet)
      const redlock = yield* Effect.promise(() => makeRedlock(fleet.nodes, { restartQuarantine: false }))
      const lock = yield* Effect.promise(() => holder.acquire("p:racing-held", { ttl: 10_000 }))
      // In the same tick as close(): every first attempt is still out when it is called.
      const racing = [
        ...["p:racing-a", "p:racing-b"].map((resource) => outcome(redlock.acquire(resource, { ttl: 10_000 }))),
        outcome(redlock.acquirePermit("p:racing-pool", { limit: 2, ttl: 10_000 })),
        ...[1, 2].map(() => outcome(redlock.acquire("p:racing-held", { ttl: 10_000, retry: slowRetry })))
      ]
      const closing = redlock.close()
      yield* Effect.promise(() => closing)
      // Nothing of this manager is left on any server the moment close() is done.
      assert.strictEqual(yield* fleet.dbsizes.pipe(Effect.map((sizes) => sizes.reduce((a, b) => a + b, 0))), 5, "only the holder's key")
      for (const ended of yield* Effect.promise(() => Promise.all(racing))) assert.instanceOf(ended, ManagerClosed)
      yield* Effect.promise(() => holder.release(lock))
      yield* expectEmpty(fleet)
    }))

  it.scoped("held by another on 3 of 5 nodes: refused, and the 2 keys this attempt set are undone at once", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* facade(fleet)
      yield* Effect.forEach([0, 2, 4], (i) => fleet.servers[i].call("SET", "redlock:p:split", "someone-else", "PX", 10_000))
      const refused = yield* Effect.promise(() =>
        redlock.acquire("p:split", { ttl: 10_000, retry: Schedule.stop }).then(() => undefined, (error: unknown) => error)
      )
      assert.instanceOf(refused, LockNotAcquired)
      const outcomes = (refused as LockNotAcquired).outcomes.map((outcome) => outcome._tag)
      assert.strictEqual(outcomes.filter((tag) => tag === "Held").length, 3, outcomes.join())
      // The undo was sent before the promise rejected, each node's bounded by the node timeout (a loaded
      // machine may see it land just after): only the other holder's keys are left.
      const left = yield* keyCount(fleet, "redlock:p:split").pipe(
        Effect.filterOrFail((count) => count === 3, (count) => count),
        Effect.retry(Schedule.spaced("10 millis").pipe(Schedule.upTo("1 second"))),
        Effect.merge
      )
      assert.strictEqual(left, 3)
      for (const i of [1, 3]) assert.isNull(yield* fleet.servers[i].call("GET", "redlock:p:split"))
      yield* fleet.reset
    }))

  it.scoped("four managers contending with retries never overlap, and every one gets its turns", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const managers: Array<PromiseRedlock> = []
      for (let i = 0; i < 4; i++) managers.push(yield* facade(fleet))
      const sections: Array<Section> = []
      const retry = Schedule.spaced("5 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(2000)))
      const worker = async (redlock: PromiseRedlock, name: string) => {
        for (let i = 0; i < 10; i++) {
          const lock = await redlock.acquire("p:shared", { ttl: 2_000, retry })
          const start = performance.now()
          await sleep(2)
          sections.push({ holder: name, value: lock.value, start, end: performance.now(), validUntil: start + lock.remaining() })
          await redlock.release(lock)
        }
      }
      yield* Effect.promise(() => Promise.all(managers.map((redlock, i) => worker(redlock, `w${i}`))))
      assert.strictEqual(sections.length, 40)
      assert.deepStrictEqual(overlaps(sections), [])
      // Some acquisitions had to wait (the waiting goes on in a fiber): attempts > 1 somewhere.
      yield* expectEmpty(fleet)
    }))

  it.scoped("using: returns the body's result and releases; a body that throws rejects and releases", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* facade(fleet)
      const result = yield* Effect.promise(() =>
        redlock.using("p:using", { ttl: 10_000 }, async (lock, signal) => {
          assert.isFalse(signal.aborted)
          return lock.resources[0]
        })
      )
      assert.strictEqual(result, "p:using")
      yield* expectEmpty(fleet)
      const thrown = yield* Effect.promise(() =>
        redlock.using("p:using", { ttl: 10_000 }, async () => {
          throw new Error("body failed")
        }).then(() => undefined, (error: unknown) => error)
      )
      assert.strictEqual((thrown as Error).message, "body failed")
      yield* expectEmpty(fleet)
    }))

  it.scoped("using: the signal aborts with LockLost once the validity runs out; autoExtend keeps it held", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* facade(fleet)
      const reason = yield* Effect.promise(() =>
        redlock.using("p:short", { ttl: 200 }, (_, signal) =>
          new Promise<unknown>((resolve) => signal.addEventListener("abort", () => resolve(signal.reason))))
      )
      assert.instanceOf(reason, LockLost)
      assert.strictEqual((reason as LockLost).reason, "Expired")
      const extended = yield* Effect.promise(() =>
        redlock.using("p:long", { ttl: 300, autoExtend: true }, async (lock, signal) => {
          await sleep(800)
          return { aborted: signal.aborted, remaining: lock.remaining() }
        })
      )
      assert.isFalse(extended.aborted)
      assert.isAbove(extended.remaining, 0, "extended: a 300 ms ttl still valid after 800 ms")
      yield* expectEmpty(fleet)
    }))

  it.scoped("the default retry, never woken: rejects with the last attempt's LockNotAcquired and leaves the line", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* facade(fleet)
      const lock = yield* Effect.promise(() => redlock.acquire("p:default", { ttl: 10_000 }))
      const error = yield* Effect.promise(() => redlock.acquire("p:default", { ttl: 10_000 }).then(() => undefined, (e: unknown) => e))
      assert.instanceOf(error, LockNotAcquired)
      // The first attempt, one at once when the new subscriptions are ready (a release may have been missed), three retries.
      assert.strictEqual((error as LockNotAcquired).attempts, 5)
      assert.strictEqual(yield* keyCount(fleet, "redlock:p:default\u0000queue"), 0)
      yield* Effect.promise(() => redlock.release(lock))
      yield* expectEmpty(fleet)
    }))

  it.scoped("a retry({ ... }) schedule is stepped as plain code: three retries ~200 ms apart as Math.random draws them", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* facade(fleet)
      const lock = yield* Effect.promise(() => redlock.acquire("p:retry", { ttl: 10_000 }))
      // Math.random draws 0.999: ~200 ms each; stepped as an effect, the Schedule would draw from Effect's Random (20-200 ms).
      const random = vi.spyOn(Math, "random").mockReturnValue(0.999)
      const started = performance.now()
      const error = yield* Effect.promise(() =>
        redlock.acquire("p:retry", { ttl: 10_000, retry: retry({ delay: 200, times: 3, jitter: { min: 0.1, max: 1 } }) })
          .then(() => undefined, (e: unknown) => e)
          .finally(() => random.mockRestore())
      )
      const elapsed = performance.now() - started
      assert.instanceOf(error, LockNotAcquired)
      assert.strictEqual((error as LockNotAcquired).attempts, 5)
      assert.isAtLeast(elapsed, 590, `gave up after ${Math.round(elapsed)} ms`)
      assert.strictEqual(yield* keyCount(fleet, "redlock:p:retry\u0000queue"), 0)
      yield* Effect.promise(() => redlock.release(lock))
      yield* expectEmpty(fleet)
    }))

  it.scoped("aborting a waiting acquire rejects with the signal's reason and leaves the line", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const redlock = yield* facade(fleet)
      const lock = yield* Effect.promise(() => redlock.acquire("p:wait", { ttl: 10_000 }))
      const controller = new AbortController()
      const waiting = redlock.acquire("p:wait", {
        ttl: 10_000,
        retry: Schedule.spaced("20 millis").pipe(Schedule.intersect(Schedule.recurs(1000))),
        signal: controller.signal
      }).then(() => "acquired", (error: unknown) => error)
      yield* Effect.promise(() => sleep(100))
      // The waiter stands in line on the nodes (fair handoff).
      assert.isAtLeast(yield* keyCount(fleet, "redlock:p:wait\u0000queue"), 3)
      controller.abort(new Error("gave up"))
      assert.strictEqual(((yield* Effect.promise(() => waiting)) as Error).message, "gave up")
      assert.strictEqual(yield* keyCount(fleet, "redlock:p:wait\u0000queue"), 0)
      yield* Effect.promise(() => redlock.release(lock))
      yield* expectEmpty(fleet)
    }))
})

layer(RedisFleet.layerLocal(1), { timeout: 30_000, excludeTestServices: true })("promise facade, setup", (it) => {
  it.effect("invalid manager options reject makeRedlock with InvalidOptions", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      const error = yield* Effect.promise(() => makeRedlock(fleet.nodes, { driftFactor: 2 }).then(() => undefined, (e: unknown) => e))
      assert.instanceOf(error, InvalidOptions)
      // node-redlock's settings, given as they were: said where they go, not ignored.
      const migrated = yield* Effect.promise(() =>
        makeRedlock(fleet.nodes, { retryCount: -1, retryDelay: 200 } as Parameters<typeof makeRedlock>[1]).then(() => undefined, (e: unknown) => e)
      )
      assert.instanceOf(migrated, InvalidOptions)
      assert.strictEqual((migrated as InvalidOptions).option, "retryCount")
      assert.include((migrated as InvalidOptions).message, "docs/migrating-from-node-redlock.md")
      // Per acquisition too, also right after the same options without it were taken (the manager keeps them checked).
      const redlock = yield* Effect.promise(() => makeRedlock(fleet.nodes, { restartQuarantine: false }))
      yield* Effect.promise(() => redlock.acquire("migrated", { ttl: 1000 }).then((lock) => redlock.release(lock)))
      const once = yield* Effect.promise(() =>
        redlock.acquire("migrated", { ttl: 1000, retryCount: 0 } as Parameters<typeof redlock.acquire>[1]).then(() => undefined, (e: unknown) => e)
      )
      assert.strictEqual((once as InvalidOptions).option, "retryCount")
      yield* Effect.promise(() => redlock.close())
      // Nodes that are no list, or a list entry that is no object: InvalidOptions naming the nodes, not a TypeError.
      const listedTwice = [fleet.nodes[0], { ...fleet.nodes[0], db: 2 }]
      for (
        const [nodes, detail] of [
          ["redis://127.0.0.1", /got "redis:\/\/127\.0\.0\.1" \(a URL goes as \{ url \}\)$/],
          [[null], /node 0 .* got null$/],
          // A URL's password is not shown back.
          [["redis://app:s3cret@127.0.0.1:6379"], /^node 0 .* got "redis:\/\/\*\*\*@127\.0\.0\.1:6379" \(a URL goes as \{ url \}\)$/],
          [listedTwice, /^nodes 0 and 1 are one server \(127\.0\.0\.1:\d+\)/]
        ] as const
      ) {
        const refused = yield* Effect.promise(() =>
          makeRedlock(nodes as unknown as Parameters<typeof makeRedlock>[0]).then(() => undefined, (e: unknown) => e)
        )
        assert.instanceOf(refused, InvalidOptions)
        assert.strictEqual((refused as InvalidOptions).option, "nodes")
        assert.match((refused as InvalidOptions).detail, detail)
        assert.notInclude((refused as InvalidOptions).message, "s3cret")
      }
      // A URL (or user@host) as the host: refused, not a node that waits for a connection that never comes.
      for (const host of ["redis://app:s3cret@127.0.0.1", "app@127.0.0.1"]) {
        const refused = yield* Effect.promise(() =>
          makeRedlock([{ host, port: fleet.servers[0].port }]).then(() => undefined, (e: unknown) => e)
        )
        assert.instanceOf(refused, InvalidOptions, host)
        assert.strictEqual((refused as InvalidOptions).option, "host")
        assert.include((refused as InvalidOptions).detail, "must be a host name or an IP address")
        assert.notInclude((refused as InvalidOptions).message, "s3cret")
      }
    }))

  it.effect("a lock left to expire is not kept for close(): the manager lets go of it once past its validity", () =>
    Effect.promise(async () => {
      v8.setFlagsFromString("--expose-gc")
      const gc = vm.runInNewContext("gc") as () => void
      const redlock = await makeRedlock(RedisNode.layerMemory(1))
      const held = await redlock.acquire("left-to-expire", { ttl: 20 }).then((lock) =>
        new WeakRef(lock)
      )
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
    }))

  it.effect("a lock logs and serializes as plain data: what it is, not the manager's state behind it", () =>
    Effect.promise(async () => {
      const redlock = await makeRedlock(RedisNode.layerMemory(3))
      const lock = await redlock.acquire("plain", { ttl: 1_000 })
      const json = JSON.parse(JSON.stringify(lock)) as Record<string, unknown>
      assert.deepStrictEqual(Object.keys(json), ["resources", "value", "ttlMillis", "validityMillis", "remainingMillis", "attempts", "outcomes"])
      assert.deepStrictEqual(json.resources, ["plain"])
      assert.strictEqual(json.value, lock.value)
      assert.strictEqual(json.ttlMillis, 1_000)
      assert.strictEqual(json.attempts, 1)
      assert.isTrue(typeof json.remainingMillis === "number" && json.remainingMillis > 0 && json.remainingMillis <= lock.validityMillis)
      assert.lengthOf(json.outcomes as Array<unknown>, 3)
      const shown = Util.inspect(lock, { depth: 5 })
      assert.match(shown, /^PromiseLock \{/)
      assert.include(shown, `value: '${lock.value}'`)
      assert.include(shown, "ttlMillis: 1000")
      for (const inside of ["held", "manager", "Duration", "clock", "runPromise", "validUntil"]) assert.notInclude(shown, inside)
      await redlock.release(lock)
      await redlock.close()
    }))

  it.effect("warnings go to the logger given, as plain lines, and say what is true: a server not reachable yet", () =>
    Effect.promise(async () => {
      const port = await freePort()
      const warned: Array<string> = []
      const redlock = await makeRedlock([{ host: "127.0.0.1", port, connectTimeout: 50 }], { logger: { warn: (line) => void warned.push(line) } })
      await redlock.close()
      assert.deepStrictEqual(warned, [`effect-redlock: 1 of 1 nodes do not vote yet (127.0.0.1:${port}: not reachable yet); 0 vote, 1 needed: acquisitions fail until then`])
      const refused = await makeRedlock(RedisNode.layerMemory(1), { logger: { warn: "stderr" } as never }).then(() => undefined, (e: unknown) => e)
      assert.instanceOf(refused, InvalidOptions)
      assert.strictEqual((refused as InvalidOptions).option, "logger")
    }))

  it.effect("without a logger, warnings are one plain line each on stderr, and nothing on stdout", () =>
    Effect.promise(async () => {
      const port = await freePort()
      const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true)
      const stdout = vi.spyOn(process.stdout, "write")
      try {
        const redlock = await makeRedlock([{ host: "127.0.0.1", port, connectTimeout: 50 }])
        await redlock.close()
        const lines = stderr.mock.calls.map(([chunk]) => String(chunk)).filter((line) => line.startsWith("effect-redlock:"))
        assert.deepStrictEqual(lines, [`effect-redlock: 1 of 1 nodes do not vote yet (127.0.0.1:${port}: not reachable yet); 0 vote, 1 needed: acquisitions fail until then\n`])
        assert.isFalse(stdout.mock.calls.some(([chunk]) => String(chunk).includes("effect-redlock")), "nothing of ours on stdout")
      } finally {
        stderr.mockRestore()
        stdout.mockRestore()
      }
    }))

  it.effect("over in-memory nodes (the same engine): acquire, refusal, release", () =>
    Effect.promise(async () => {
      const redlock = await makeRedlock(RedisNode.layerMemory(3))
      const lock = await redlock.acquire("m", { ttl: 1_000 })
      const refused = await redlock.acquire("m", { ttl: 1_000, retry: Schedule.stop }).then(() => undefined, (e: unknown) => e)
      assert.instanceOf(refused, LockNotAcquired)
      assert.strictEqual((await redlock.release(lock)).status, "Released")
      const again = await redlock.acquire("m", { ttl: 1_000, retry: Schedule.stop })
      assert.strictEqual((await redlock.inspect("m")).holder, again.value)
      await redlock.release(again)
      await redlock.close()
    }))
})
