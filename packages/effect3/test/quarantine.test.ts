/**
 * Restart quarantine on in-memory nodes with the TestClock: a node that
 * restarted empty less than maxTtl ago does not count toward any quorum.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Duration, Effect, Fiber, Layer, Logger, TestClock } from "effect"
import * as Quarantine from "@effect-redlock/core/engine/quarantine.js"
import type { Connection, ConnectionEvents } from "@effect-redlock/core/nodes/connection.js"
import * as ServerRun from "@effect-redlock/core/nodes/serverRun.js"
import * as Redlock from "../src/Redlock.js"
import * as RedisNode from "../src/RedisNode.js"
import { FencingTokenUnavailable, InvalidOptions, LockNotAcquired, LockNotExtended } from "../src/RedlockError.js"
import { failureOf, memory } from "./support.js"

const tags = (outcomes: ReadonlyArray<RedisNode.NodeOutcome>) => outcomes.map((outcome) => outcome._tag)

/** 10 s plus the drift allowance: ceil(10 000 * 0.01) + 2. */
const quarantineMillis = 10_102

/**
 * The hazard: a holder has nodes 0-2 of 5 (3 and 4 were down); node 2 restarts
 * empty and 3, 4 come back. Counting node 2 would give a second client 3 of 5.
 */
const holderThenRestart = Effect.gen(function*() {
  const control = yield* RedisNode.MemoryNodes
  const holder = yield* Redlock.Redlock
  yield* control.setDown(3, true)
  yield* control.setDown(4, true)
  const fiber = yield* Effect.fork(holder.acquire("r", { ttl: "10 seconds", nodeTimeout: "20 millis" }))
  yield* TestClock.adjust("20 millis")
  const lock = yield* Fiber.join(fiber)
  assert.deepStrictEqual(tags(lock.outcomes).slice(0, 3), ["Ok", "Ok", "Ok"])
  yield* control.setDown(3, false)
  yield* control.setDown(4, false)
  yield* TestClock.adjust("1 second")
  yield* control.restart(2)
  return lock
})

describe("restart quarantine", () => {
  it.effect("a node that restarted empty does not give a second client a quorum while the holder is valid", () =>
    Effect.gen(function*() {
      const lock = yield* holderThenRestart
      const other = yield* Redlock.make({ maxTtl: "10 seconds" })
      const error = failureOf(
        yield* Effect.exit(Effect.scoped(other.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry })))
      ) as LockNotAcquired
      assert.instanceOf(error, LockNotAcquired)
      assert.strictEqual(error.reason, "NoQuorum")
      // Decided once three nodes said no: the last two may not have been awaited.
      assert.deepStrictEqual(tags(error.outcomes).slice(0, 3), ["Held", "Held", "Abstained"])
      const abstained = error.outcomes[2]
      assert.isTrue(abstained._tag === "Abstained" && abstained.detail.includes("restart quarantine"), error.message)
      assert.include(error.message, "memory-2=Abstained(server started 0.0 s ago, votes again in 10.1 s")
      assert.isAbove(Duration.toMillis(yield* lock.remaining), 0, "the first holder is still valid")
      const control = yield* RedisNode.MemoryNodes
      assert.deepStrictEqual(yield* control.keys(3), [], "the failed attempt released what it set")
    }).pipe(Effect.scoped, Effect.provide(memory(5, { maxTtl: "10 seconds" }))))

  it.effect("without quarantine the same schedule gives two holders at once (the hazard it prevents)", () =>
    Effect.gen(function*() {
      const lock = yield* holderThenRestart
      const other = yield* Redlock.make({ maxTtl: "10 seconds", restartQuarantine: false })
      const second = yield* other.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry })
      assert.deepStrictEqual(tags(second.outcomes), ["Held", "Held", "Ok", "Ok", "Ok"])
      assert.isAbove(Duration.toMillis(yield* lock.remaining), 0)
      assert.isAbove(Duration.toMillis(yield* second.remaining), 0)
    }).pipe(Effect.scoped, Effect.provide(memory(5, { maxTtl: "10 seconds" }))))

  it.effect("the restarted node votes again once maxTtl plus the drift allowance has passed", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      yield* control.restart(0)
      yield* control.setDown(1, true)
      const attempt = Effect.fork(Redlock.acquire("r", { ttl: "1 second", nodeTimeout: "10 millis", retry: Redlock.noRetry }))
      yield* TestClock.adjust(Duration.millis(quarantineMillis - 20))
      const early = yield* attempt
      yield* TestClock.adjust("10 millis")
      assert.deepStrictEqual(tags((failureOf(yield* Fiber.await(early)) as LockNotAcquired).outcomes), [
        "Abstained",
        "TimedOut",
        "Ok"
      ])
      yield* TestClock.adjust("10 millis")
      const late = yield* attempt
      const lock = yield* Fiber.join(late)
      assert.deepStrictEqual(tags(lock.outcomes), ["Ok", "NotAwaited", "Ok"], "decided by two yes votes")
    }).pipe(Effect.scoped, Effect.provide(memory(3, { maxTtl: "10 seconds" }))))

  it.effect("an extension does not count a quarantined node's yes", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      yield* control.restart(0)
      const lock = yield* Redlock.acquire("r", { ttl: "1 second", nodeTimeout: "10 millis" })
      assert.deepStrictEqual(tags(lock.outcomes), ["Abstained", "Ok", "Ok"])
      yield* control.setDown(1, true)
      const fiber = yield* Effect.fork(Effect.exit(Redlock.extend(lock)))
      yield* TestClock.adjust("10 millis")
      const error = failureOf(yield* Fiber.join(fiber))
      assert.instanceOf(error, LockNotExtended)
      assert.deepStrictEqual(tags((error as LockNotExtended).outcomes), ["Abstained", "TimedOut", "Ok"])
      yield* control.setDown(1, false)
    }).pipe(Effect.scoped, Effect.provide(memory(3, { maxTtl: "10 seconds" }))))

  it.effect("fencing rounds do not count a quarantined node (its counters were lost with the restart)", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      yield* control.restart(0)
      const lock = yield* Redlock.acquire("r", { ttl: "1 second", nodeTimeout: "10 millis" })
      yield* control.setDown(2, true)
      const fiber = yield* Effect.fork(Effect.exit(lock.fencingToken))
      yield* TestClock.adjust("10 millis")
      const error = failureOf(yield* Fiber.join(fiber))
      assert.instanceOf(error, FencingTokenUnavailable)
      assert.deepStrictEqual(tags((error as FencingTokenUnavailable).outcomes), ["Abstained", "Ok", "TimedOut"])
      yield* control.setDown(2, false)
    }).pipe(Effect.scoped, Effect.provide(memory(3, { maxTtl: "10 seconds" }))))

  it.effect("a durable node keeps its keys across a restart and votes at once: the holder keeps its lock", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      yield* control.setDurable(2, true)
      const lock = yield* holderThenRestart
      assert.deepStrictEqual(yield* control.keys(2), ["redlock:r"], "the key survived the restart")
      const other = yield* Redlock.make({ maxTtl: "10 seconds" })
      const error = failureOf(
        yield* Effect.exit(Effect.scoped(other.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry })))
      ) as LockNotAcquired
      assert.deepStrictEqual(tags(error.outcomes).slice(0, 3), ["Held", "Held", "Held"], error.message)
      assert.isAbove(Duration.toMillis(yield* lock.remaining), 0)
      // And on a free resource, its vote counts at once (no Abstained), 0.0 s after its restart.
      const free = yield* other.acquire("s", { ttl: "1 second" })
      assert.notInclude(tags(free.outcomes), "Abstained")
      assert.strictEqual(free.outcomes[2]._tag, "Ok")
    }).pipe(Effect.scoped, Effect.provide(memory(5, { maxTtl: "10 seconds" }))))

  it.effect("a manager that starts while nodes abstain says so once: which nodes, why, when they vote", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      yield* control.restart(0)
      yield* control.restart(1)
      yield* TestClock.adjust("2 seconds")
      const logged: Array<string> = []
      const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void logged.push(String(message))))
      yield* Redlock.make({ maxTtl: "10 seconds" }).pipe(Effect.provide(capture))
      assert.strictEqual(logged.length, 1)
      assert.match(logged[0], /^effect-redlock: 2 of 3 nodes do not vote yet \(memory-0: server started 2\.0 s ago, votes again in 8\.1 s/)
      assert.include(logged[0], "1 vote, 2 needed: acquisitions fail until then")
      assert.include(logged[0], "appendonly yes, appendfsync always")
      // Durable nodes, or nodes up for maxTtl, make no notice.
      yield* control.setDurable(0, true)
      yield* control.setDurable(1, true)
      yield* Redlock.make({ maxTtl: "10 seconds" }).pipe(Effect.provide(capture))
      yield* Redlock.make({ maxTtl: "10 seconds", restartQuarantine: false }).pipe(Effect.provide(capture))
      assert.strictEqual(logged.length, 1)
    }).pipe(Effect.provide(RedisNode.layerMemory(3))))

  it.effect("a release still deletes the key a quarantined node holds", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      yield* control.restart(0)
      const lock = yield* Redlock.acquire("r", { ttl: "1 second" })
      assert.deepStrictEqual(yield* control.keys(0), ["redlock:r"])
      yield* Redlock.release(lock)
      assert.deepStrictEqual(yield* control.keys(0), [])
    }).pipe(Effect.scoped, Effect.provide(memory(3, { maxTtl: "10 seconds" }))))
})

describe("maxTtl", () => {
  it.effect("acquire and extend reject a ttl above maxTtl before any node is asked", () =>
    Effect.gen(function*() {
      const control = yield* RedisNode.MemoryNodes
      const error = failureOf(yield* Effect.exit(Redlock.acquire("r", { ttl: "11 seconds" }))) as InvalidOptions
      assert.instanceOf(error, InvalidOptions)
      assert.strictEqual(error.option, "ttl")
      assert.include(error.message, "above the manager's maxTtl of 10000 ms")
      assert.strictEqual(yield* control.operations(0), 0)
      const lock = yield* Redlock.acquire("r", { ttl: "10 seconds" })
      const extended = failureOf(yield* Effect.exit(Redlock.extend(lock, "10001 millis"))) as InvalidOptions
      assert.strictEqual(extended.option, "ttl")
      assert.strictEqual(yield* control.operations(0), 1)
    }).pipe(Effect.scoped, Effect.provide(memory(3, { maxTtl: "10 seconds" }))))

  it.effect("invalid maxTtl or restartQuarantine fail the manager with InvalidOptions", () =>
    Effect.gen(function*() {
      for (
        const [options, option] of [
          [{ maxTtl: 0 }, "maxTtl"],
          [{ maxTtl: "forever" }, "maxTtl"],
          [{ maxTtl: "400 days" }, "maxTtl"],
          [{ restartQuarantine: "yes" }, "restartQuarantine"]
        ] as const
      ) {
        const error = failureOf(yield* Effect.exit(Redlock.make(options as Redlock.Options))) as InvalidOptions
        assert.instanceOf(error, InvalidOptions)
        assert.strictEqual(error.option, option)
      }
    }).pipe(Effect.provide(RedisNode.layerMemory(1))))
})

describe("options from configuration", () => {
  it.effect("Redlock.layerConfig reads REDLOCK_* variables; missing ones keep their defaults", () =>
    Effect.gen(function*() {
      const provider = ConfigProvider.fromMap(new Map([["REDLOCK_MAX_TTL", "2 seconds"], ["REDLOCK_KEY_PREFIX", "app:"]]))
      const context = yield* Layer.build(Redlock.layerConfig()).pipe(Effect.withConfigProvider(provider))
      const redlock = Context.get(context, Redlock.Redlock)
      const error = failureOf(yield* Effect.exit(redlock.acquire("r", { ttl: "3 seconds" }))) as InvalidOptions
      assert.include(error.message, "maxTtl of 2000 ms")
      yield* redlock.acquire("r", { ttl: "2 seconds" })
      const control = yield* RedisNode.MemoryNodes
      assert.deepStrictEqual(yield* control.keys(0), ["app:r"])
      const invalid = ConfigProvider.fromMap(new Map([["REDLOCK_DRIFT_FACTOR", "2"]]))
      const refused = failureOf(yield* Effect.exit(Layer.build(Redlock.layerConfig()).pipe(Effect.withConfigProvider(invalid))))
      assert.instanceOf(refused, InvalidOptions)
    }).pipe(Effect.scoped, Effect.provide(RedisNode.layerMemory(3))))
})

describe("abstention rule", () => {
  const known = (id: string, startedAtMillis: number): RedisNode.NodeRun => ({ _tag: "Known", id, startedAtMillis })

  it("counts a vote exactly when the same known run started at least the quarantine before the command", () => {
    assert.isUndefined(Quarantine.abstention(known("a", 0), known("a", 0), 1000, 1000))
    assert.include(Quarantine.abstention(known("a", 1), known("a", 1), 1000, 1000), "votes again in 0.0 s")
    assert.include(Quarantine.abstention(known("a", 0), known("b", 0), 5000, 1000), "restarted while the command")
    const unknown: RedisNode.NodeRun = { _tag: "Unknown", detail: "reconnecting" }
    assert.include(Quarantine.abstention(unknown, known("a", 0), 5000, 1000), "unknown (reconnecting)")
    assert.include(Quarantine.abstention(known("a", 0), unknown, 5000, 1000), "unknown (reconnecting)")
  })

  it("the start-up notice says a server not reached is not reachable, by the run's tag, not by its detail's words", () => {
    const node = (run: RedisNode.NodeRun) => ({ name: "a:1", run: () => run })
    const notice = (run: RedisNode.NodeRun) => Quarantine.startupNotice([node(run)], 1, 1000, 5000)
    assert.include(notice({ _tag: "Unknown", detail: "not connected yet", unreached: "NotConnected" }), "a:1: not reachable yet")
    assert.include(notice({ _tag: "Unknown", detail: "reconnecting", unreached: "Reconnecting" }), "a:1: not reachable (reconnecting)")
    // A node of the user's own whose run is unknown for another reason says so, whatever its detail reads.
    assert.include(notice({ _tag: "Unknown", detail: "reconnecting" }), "a:1: its server run is unknown (reconnecting)")
    assert.isUndefined(notice({ _tag: "Known", id: "x", startedAtMillis: 0 }))
  })

  it("a server that keeps its keys votes at once after a restart; any other says why it waits", () => {
    const durable = { keepsKeys: true, detail: "AOF, appendfsync always" }
    const everysec = { keepsKeys: false, detail: "AOF, appendfsync everysec: a crash may lose the last writes" }
    const run = (persistence: RedisNode.Persistence): RedisNode.NodeRun => ({ _tag: "Known", id: "a", startedAtMillis: 900, persistence })
    assert.isUndefined(Quarantine.abstention(run(durable), run(durable), 1000, 1000))
    assert.include(Quarantine.abstention(run(everysec), run(everysec), 1000, 1000), "(restart quarantine; AOF, appendfsync everysec")
    // Still: a restart in flight, or an unknown run, never counts.
    const restarted: RedisNode.NodeRun = { _tag: "Known", id: "b", startedAtMillis: 900, persistence: durable }
    assert.include(Quarantine.abstention(run(durable), restarted, 1000, 1000), "restarted while the command")
  })

  it("persistence is durable only for AOF with appendfsync always, or as declared where the server cannot be read", () => {
    const aofOn = "# Persistence\r\nloading:0\r\naof_enabled:1\r\n"
    const aofOff = "# Persistence\r\nloading:0\r\naof_enabled:0\r\n"
    const noPerm = new Error("NOPERM this user has no permissions to run the 'config|get' command")
    const cases: ReadonlyArray<[string | Error, string | undefined | Error, boolean, boolean, string]> = [
      [aofOn, "always", false, true, "AOF, appendfsync always"],
      [aofOn, "everysec", false, false, "appendfsync everysec"],
      [aofOn, "everysec", true, false, "declared durable, but the server says otherwise"],
      [aofOn, "no", false, false, "appendfsync no"],
      [aofOff, "always", false, false, "no AOF"],
      [aofOff, "always", true, false, "no AOF: a restart loses keys (declared durable, but"],
      [aofOn, noPerm, false, false, "persistence unknown: AOF on, CONFIG GET appendfsync refused: NOPERM"],
      [aofOn, noPerm, true, true, "declared durable; AOF on, CONFIG GET appendfsync refused: NOPERM"],
      [noPerm, noPerm, false, false, "persistence unknown: INFO persistence failed"],
      [noPerm, noPerm, true, true, "declared durable; INFO persistence failed"],
      [aofOn, undefined, false, false, "CONFIG GET appendfsync gave nothing"]
    ]
    for (const [info, appendfsync, declared, keepsKeys, detail] of cases) {
      const persistence = ServerRun.persistenceOf(info, appendfsync, declared)
      assert.strictEqual(persistence.keepsKeys, keepsKeys, persistence.detail)
      assert.include(persistence.detail, detail)
    }
  })

  it("reads run_id and uptime from INFO server, and refuses a reply without them", () => {
    const reply = "# Server\r\nredis_version:7.0.15\r\nrun_id:4f1c2e\r\ntcp_port:6379\r\nuptime_in_seconds:42\r\n"
    assert.deepStrictEqual(ServerRun.parseInfo(reply), { id: "4f1c2e", uptimeSeconds: 42 })
    assert.isUndefined(ServerRun.parseInfo("# Server\r\nrun_id:4f1c2e\r\n"))
    assert.isUndefined(ServerRun.parseInfo("uptime_in_seconds:42\r\n"))
    assert.isUndefined(ServerRun.parseInfo("run_id:x\r\nuptime_in_seconds:-1\r\n"))
  })

  it("reads from INFO memory whether a server may evict keys: a maxmemory with any policy but noeviction", () => {
    const memory = (maxmemory: number, policy: string) =>
      `# Memory\r\nused_memory:1000\r\nmaxmemory:${maxmemory}\r\nmaxmemory_human:100.00M\r\nmaxmemory_policy:${policy}\r\n`
    assert.strictEqual(
      ServerRun.evictionOf(memory(104_857_600, "volatile-ttl")),
      "maxmemory 100.00M with maxmemory-policy volatile-ttl: it may evict a held lock key"
    )
    assert.include(ServerRun.evictionOf(memory(104_857_600, "allkeys-lru")), "allkeys-lru")
    assert.isUndefined(ServerRun.evictionOf(memory(104_857_600, "noeviction")))
    assert.isUndefined(ServerRun.evictionOf(memory(0, "allkeys-lru")), "no maxmemory: nothing is evicted")
    assert.isUndefined(ServerRun.evictionOf("# Memory\r\nused_memory:1000\r\n"))
    assert.isUndefined(ServerRun.evictionOf(new Error("NOPERM")))
  })

  it("a server already running while the node talked to another (a failover) counts as started when it first answers, keeping no keys; a restarted one by its uptime", async () => {
    // One connection whose server the test swaps, on a clock the test sets (ms); every server runs AOF, appendfsync always.
    let clock = 0
    let server = { id: "a", startedAt: 0 }
    let events: ConnectionEvents | undefined
    const connection: Connection = {
      isReady: () => false,
      follow: (followed) => {
        events = followed
        return () => {}
      },
      info: (section) =>
        Promise.resolve(
          section === "server"
            ? `run_id:${server.id}\r\nuptime_in_seconds:${Math.floor((clock - server.startedAt) / 1000)}\r\n`
            : "aof_enabled:1\r\n"
        ),
      configGet: () => Promise.resolve("always"),
      evalsha: () => Promise.reject(new Error("unused")),
      eval: () => Promise.reject(new Error("unused")),
      loadScript: () => Promise.reject(new Error("unused")),
      setIfAbsent: () => Promise.reject(new Error("unused")),
      waitForReplicas: () => Promise.reject(new Error("unused")),
      beforeSend: () => {}
    }
    const watcher = ServerRun.watch(connection, false, () => clock)
    const connectAt = async (at: number) => {
      clock = at
      events!.ready()
      await watcher.identified()
      return watcher.current() as Extract<RedisNode.NodeRun, { _tag: "Known" }>
    }
    const first = await connectAt(100_000)
    assert.deepStrictEqual([first.id, first.startedAtMillis, first.persistence?.keepsKeys], ["a", 1_000, true])
    // Failover: the connection drops at 200 s; the replica promoted in its place has run since 50 s.
    clock = 200_000
    events!.closed()
    server = { id: "b", startedAt: 50_000 }
    const promoted = await connectAt(205_000)
    assert.deepStrictEqual([promoted.id, promoted.startedAtMillis, promoted.persistence?.keepsKeys], ["b", 205_000, false])
    assert.include(promoted.persistence?.detail, "another server than before")
    // Reconnected to the same new master later: still new since it first answered.
    clock = 210_000
    events!.closed()
    const again = await connectAt(211_000)
    assert.deepStrictEqual([again.startedAtMillis, again.persistence?.keepsKeys], [205_000, false])
    // A restart: the new process started after the connection dropped; its uptime and persistence are believed.
    clock = 300_000
    events!.closed()
    server = { id: "c", startedAt: 301_000 }
    const restarted = await connectAt(303_000)
    assert.deepStrictEqual([restarted.id, restarted.startedAtMillis, restarted.persistence?.keepsKeys], ["c", 302_000, true])
  })
})
