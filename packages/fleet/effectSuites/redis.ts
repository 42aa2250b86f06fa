/**
 * The lock manager against 5 real redis-server processes on 127.0.0.1, with
 * faults made by signals (SIGSTOP/SIGCONT, SIGKILL) and Redis commands.
 *
 * One suite, run by both Effect lines (each package's test/redis.test.ts).
 */
import {
  assert,
  atMost,
  captureLogs,
  Duration,
  Effect,
  Fiber,
  fork,
  layer,
  layerFleet,
  Redacted,
  RedisFleet,
  RedisNode,
  Redlock,
  RedlockError,
  Schedule
} from "@effect-redlock/line"
import {
  expectEmpty,
  invalidOf,
  overlaps,
  recordSection,
  redisManager,
  refusalOf,
  type Section,
  seededRandom
} from "./support.js"

const tags = (outcomes: ReadonlyArray<RedisNode.NodeOutcome>) => outcomes.map((outcome) => outcome._tag)

/** At least a quorum answered Held and none granted; the rest may not have been awaited. */
const assertRefusedByHolder = (error: RedlockError.LockNotAcquired) => {
  const answered = tags(error.outcomes)
  assert.isAtLeast(answered.filter((tag) => tag === "Held").length, 3, answered.join())
  assert.notInclude(answered, "Ok")
}

export const redisSuite = () => {
  layer(layerFleet(5), { timeout: 60_000, excludeTestServices: true })("5 redis-servers", (it) => {
    it.effect("separate Redlock instances contending for one key never overlap", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const sections: Array<Section> = []
        const retry = Schedule.spaced("2 millis").pipe(Schedule.jittered, atMost(2000))
        const worker = (name: string) =>
          Effect.gen(function*() {
            const redlock = yield* redisManager(fleet.nodes)
            for (let i = 0; i < 15; i++) {
              yield* Effect.scoped(Effect.flatMap(
                redlock.acquire("shared", { ttl: "2 seconds", retry }),
                (lock) => recordSection(name, lock, Effect.sleep("2 millis"), sections)
              ))
            }
          })
        yield* Effect.forEach(["w1", "w2", "w3", "w4"], worker, { concurrency: "unbounded", discard: true })
        assert.strictEqual(sections.length, 60)
        assert.deepStrictEqual(overlaps(sections), [])
        for (const section of sections) assert.isBelow(section.end, section.validUntil, "finished within validity")
        yield* expectEmpty(fleet)
      }).pipe(Effect.scoped))

    it.effect("2 of 5 nodes paused: acquired within the per-node timeout", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const redlock = yield* redisManager(fleet.nodes)
        yield* Effect.forEach([1, 3], (i) => fleet.servers[i].pause)
        const started = performance.now()
        // A long per-node timeout: acquiring well before it shows the paused nodes were not waited for.
        const lock = yield* Effect.scoped(
          redlock.acquire("r", { ttl: "10 seconds", nodeTimeout: "2 seconds" }).pipe(
            Effect.ensuring(Effect.forEach([1, 3], (i) => fleet.servers[i].resume))
          )
        )
        const elapsed = performance.now() - started
        assert.isBelow(elapsed, 1000, `acquired in ${elapsed} ms`)
        assert.deepStrictEqual(tags(lock.outcomes).filter((tag) => tag === "Ok").length, 3)
        assert.notInclude(tags([lock.outcomes[1], lock.outcomes[3]]), "Ok")
        yield* expectEmpty(fleet)
      }).pipe(Effect.scoped))

    it.effect("3 of 5 nodes paused: not acquired, with each node's outcome, and no key left", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const redlock = yield* redisManager(fleet.nodes)
        yield* Effect.forEach([0, 2, 4], (i) => fleet.servers[i].pause)
        const started = performance.now()
        const exit = yield* Effect.exit(Effect.scoped(
          redlock.acquire("r", { ttl: "10 seconds", nodeTimeout: "100 millis", retry: Redlock.noRetry })
        ))
        const elapsed = performance.now() - started
        yield* Effect.forEach([0, 2, 4], (i) => fleet.servers[i].resume)
        const notAcquired = refusalOf(exit)
        assert.strictEqual(notAcquired.reason, "NoQuorum")
        assert.deepStrictEqual(tags(notAcquired.outcomes), ["TimedOut", "Ok", "TimedOut", "Ok", "TimedOut"])
        assert.include(notAcquired.message, `${fleet.nodes[0].host}:${fleet.nodes[0].port}=TimedOut`)
        // One per-node timeout for the attempt, then the release decides without the paused nodes.
        assert.isTrue(elapsed >= 100 && elapsed < 2000, `gave up in ${elapsed} ms`)
        yield* expectEmpty(fleet)
      }).pipe(Effect.scoped))

    it.effect("3 of 5 nodes paused during the hold: the scope's release is logged as a warning naming the unanswered nodes", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const redlock = yield* redisManager(fleet.nodes)
        const logs: Array<string> = []

        yield* Effect.scoped(Effect.gen(function*() {
          yield* redlock.acquire("r", { ttl: "10 seconds", nodeTimeout: "100 millis" })
          yield* Effect.forEach([0, 2, 4], (i) => fleet.servers[i].pause)
        })).pipe(Effect.provide(captureLogs(logs, { withLevel: true })))
        yield* Effect.forEach([0, 2, 4], (i) => fleet.servers[i].resume)
        assert.strictEqual(logs.length, 1, logs.join("\n"))
        assert.match(
          logs[0],
          /^WARN effect-redlock: release of r did not reach 3 node\(s\); their keys expire within 10s/
        )
        yield* Effect.forEach(fleet.servers, (server) => server.call("DEL", "redlock:r"))
        yield* expectEmpty(fleet)
      }).pipe(Effect.scoped))

    it.effect("a refused attempt undoes a node's late yes when it comes: no key is left", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const redlock = yield* redisManager(fleet.nodes)
        // Another holder on nodes 0-2; nodes 3 and 4 are free but answer late.
        yield* Effect.forEach([0, 1, 2], (i) => fleet.servers[i].call("SET", "redlock:r", "holder", "PX", 60_000))
        yield* Effect.forEach([3, 4], (i) => fleet.servers[i].pause)
        const exit = yield* Effect.exit(Effect.scoped(
          redlock.acquire("r", { ttl: "10 seconds", nodeTimeout: "2 seconds", retry: Redlock.noRetry })
        ))
        yield* Effect.forEach([3, 4], (i) => fleet.servers[i].resume)
        assert.deepStrictEqual(tags(refusalOf(exit).outcomes), ["Held", "Held", "Held", "NotAwaited", "NotAwaited"])
        // Nodes 3 and 4 set the key when they resumed; it is undone once their answer comes.
        yield* Effect.forEach([0, 1, 2], (i) => fleet.servers[i].call("DEL", "redlock:r"))
        yield* expectEmpty(fleet)
      }).pipe(Effect.scoped))

    it.effect("a refused waiter keeps its place in every line, on nodes that answered late too", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const redlock = yield* redisManager(fleet.nodes)
        const lineSizes = (servers = fleet.servers) =>
          Effect.forEach(servers, (server) => Effect.map(server.call("ZCARD", "redlock:q\u0000queue"), Number))
        yield* Effect.forEach(fleet.servers, (server) => server.call("SET", "redlock:q", "holder", "PX", 60_000))
        yield* Effect.forEach([3, 4], (i) => fleet.servers[i].pause)
        const waiter = yield* fork(
          redlock.acquire("q", { ttl: "10 seconds", nodeTimeout: "2 seconds", retry: Schedule.spaced("5 seconds") })
        )
        // The first attempt is refused by nodes 0-2, where the waiter joined the line.
        yield* Effect.retry(
          Effect.flatMap(
            lineSizes(fleet.servers.slice(0, 3)),
            (sizes) => sizes.every((size) => size === 1) ? Effect.void : Effect.fail(`in line: ${sizes.join(",")}`)
          ),
          { schedule: Schedule.spaced("10 millis"), times: 200 }
        )
        yield* Effect.sleep("100 millis")
        // Nodes 3 and 4 run the attempt now: the waiter joins there too, and stays.
        yield* Effect.forEach([3, 4], (i) => fleet.servers[i].resume)
        yield* Effect.sleep("300 millis")
        assert.deepStrictEqual(yield* lineSizes(), [1, 1, 1, 1, 1])
        // Interrupted, it leaves every line.
        yield* Fiber.interrupt(waiter)
        assert.deepStrictEqual(yield* lineSizes(), [0, 0, 0, 0, 0])
        yield* Effect.forEach(fleet.servers, (server) => server.call("DEL", "redlock:q"))
        yield* expectEmpty(fleet)
      }).pipe(Effect.scoped))

    it.effect("interruption at random points of acquire leaves no key on any node", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const redlock = yield* redisManager(fleet.nodes)
        const holder = yield* redisManager(fleet.nodes)
        const random = seededRandom(42)
        for (let i = 0; i < 60; i++) {
          // Every third round contends with a holder (interrupted mid-retry); every fourth runs with a node paused.
          const contended = i % 3 === 0
          const paused = i % 4 === 1
          yield* Effect.scoped(Effect.gen(function*() {
            if (contended) {
              yield* holder.acquire(`r${i}`, { ttl: "10 seconds" })
              // The holder is granted on a majority; its last votes may still be on their way (and a node paused
              // below would then run them after the waiter's), so its key is awaited on every node.
              yield* Effect.retry(
                Effect.flatMap(
                  Effect.forEach(fleet.servers, (server) => server.call("EXISTS", `redlock:r${i}`)),
                  (exists) => exists.every((n) => Number(n) === 1) ? Effect.void : Effect.fail(`held on ${exists}`)
                ),
                { schedule: Schedule.spaced("5 millis"), times: 200 }
              )
            }
            if (paused) yield* fleet.servers[i % 5].pause
            const fiber = yield* fork(redlock.acquire(`r${i}`, { ttl: "10 seconds", nodeTimeout: "50 millis" }))
            yield* Effect.sleep(Duration.millis(random() * 4))
            yield* Fiber.interrupt(fiber)
            if (paused) yield* fleet.servers[i % 5].resume
            if (contended) {
              const exists = yield* Effect.forEach(fleet.servers, (server) => server.call("EXISTS", `redlock:r${i}`))
              assert.deepStrictEqual(exists, [1, 1, 1, 1, 1], "the holder's key survives the waiter's interruption")
            }
          }))
          yield* expectEmpty(fleet)
        }
      }).pipe(Effect.scoped))

    it.effect("a release after the key expired and was taken by another client leaves the other's key", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const first = yield* redisManager(fleet.nodes)
        const second = yield* redisManager(fleet.nodes)
        // The release's answers are read within 70 ms (the default for a 150 ms ttl is 10 ms, which a loaded machine misses).
        const stale = yield* first.acquire("r", { ttl: "150 millis", nodeTimeout: "70 millis" })
        yield* Effect.sleep("250 millis")
        const current = yield* second.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry })
        const result = yield* first.release(stale)
        assert.strictEqual(result.released, 0)
        // A majority confirmed the key is not ours; the rest may not have been awaited.
        assert.isAtLeast(tags(result.outcomes).filter((tag) => tag === "Held").length, 3)
        assert.notInclude(tags(result.outcomes), "Ok")
        for (const server of fleet.servers) assert.strictEqual(yield* server.call("GET", "redlock:r"), current.value)
      }).pipe(Effect.scoped))

    it.effect("multi-resource locks are all or nothing", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const redlock = yield* redisManager(fleet.nodes)
        for (const server of fleet.servers) yield* server.call("SET", "redlock:b", "someone", "PX", 10_000)
        const exit = yield* Effect.exit(Effect.scoped(
          redlock.acquire(["a", "b", "c"], { ttl: "10 seconds", retry: Redlock.noRetry })
        ))
        assertRefusedByHolder(refusalOf(exit))
        assert.deepStrictEqual(yield* fleet.dbsizes, [1, 1, 1, 1, 1])
        yield* Effect.scoped(Effect.gen(function*() {
          const lock = yield* redlock.acquire(["a", "c"], { ttl: "10 seconds" })
          for (const server of fleet.servers) {
            assert.deepStrictEqual(yield* server.call("MGET", "redlock:a", "redlock:c"), [lock.value, lock.value])
          }
        }))
        assert.deepStrictEqual(yield* fleet.dbsizes, [1, 1, 1, 1, 1])
      }).pipe(Effect.scoped))

    it.effect("N = 1: one node is its own quorum", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const redlock = yield* redisManager([fleet.nodes[0]])
        assert.strictEqual(redlock.quorum, 1)
        yield* Effect.scoped(Effect.gen(function*() {
          const lock = yield* redlock.acquire("r", { ttl: "1 second" })
          assert.strictEqual(yield* fleet.servers[0].call("GET", "redlock:r"), lock.value)
          const refused = yield* Effect.exit(redlock.acquire("r", { ttl: "1 second", retry: Redlock.noRetry }))
          assert.deepStrictEqual(tags(refusalOf(refused).outcomes), ["Held"])
        }))
        assert.strictEqual(yield* fleet.servers[0].call("DBSIZE"), 0)
      }).pipe(Effect.scoped))

    it.effect("bad options from JavaScript are InvalidOptions naming the value given, and nothing reaches the servers", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const redlock = yield* redisManager(fleet.nodes)
        const commands = () =>
          Effect.forEach(
            fleet.servers,
            (server) =>
              Effect.map(server.call("INFO", "commandstats"), (reply) =>
                /cmdstat_evalsha:calls=(\d+)/.exec(String(reply))?.[1] ?? "0")
          )
        const before = yield* commands()
        const cases: ReadonlyArray<[unknown, string, RegExp]> = [
          [{ ttl: NaN }, "ttl", /got NaN$/],
          [{ ttl: -5 }, "ttl", /got -5$/],
          [{ ttl: "1 second", retry: 3 }, "retry", /must be a Schedule, got 3$/]
        ]
        for (const [options, option, detail] of cases) {
          const error = invalidOf(
            yield* Effect.exit(Effect.scoped(redlock.acquire("r", options as Redlock.AcquireOptions)))
          )
          assert.strictEqual(error.option, option)
          assert.match(error.detail, detail)
        }
        const invalidManager = yield* Effect.exit(
          redisManager(fleet.nodes, { retry: "200ms" as unknown as Redlock.RetrySchedule })
        )
        assert.strictEqual(invalidOf(invalidManager).option, "retry")
        assert.deepStrictEqual(yield* commands(), before, "no script ran on any server")
      }).pipe(Effect.scoped))

    it.effect("a key holding a list: not acquired, each node says WrongType naming the type, the list is intact", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const redlock = yield* redisManager(fleet.nodes)
        for (const server of fleet.servers) yield* server.call("RPUSH", "redlock:r", "precious")
        for (const retry of [Redlock.noRetry, Schedule.recurs(1)]) {
          const exit = yield* Effect.exit(Effect.scoped(redlock.acquire("r", { ttl: "1 second", retry })))
          const error = refusalOf(exit)
          const answers = error.outcomes.map((o) => o._tag === "Failed" ? o.error.reason : o._tag)
          // Decided once a majority failed: the rest may not be awaited.
          assert.isAtLeast(answers.filter((answer) => answer === "WrongType").length, 3, answers.join())
          assert.deepStrictEqual(answers.filter((answer) => answer !== "WrongType" && answer !== "NotAwaited"), [])
          assert.match(error.message, /WRONGTYPE lock key redlock:r holds a list, not a lock value/)
        }
        for (const server of fleet.servers) {
          assert.deepStrictEqual(yield* server.call("LRANGE", "redlock:r", 0, -1), ["precious"])
        }
      }).pipe(Effect.scoped))

    it.effect("READONLY and OOM replies become typed per-node outcomes", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const redlock = yield* redisManager(fleet.nodes)
        const [s0, s1, s2] = fleet.servers
        // A replica of a master that does not exist refuses writes with READONLY.
        yield* s0.call("REPLICAOF", "127.0.0.1", "1")
        yield* s1.call("REPLICAOF", "127.0.0.1", "1")
        yield* s2.call("CONFIG", "SET", "maxmemory", "1")
        const restore = Effect.all([
          s0.call("REPLICAOF", "NO", "ONE"),
          s1.call("REPLICAOF", "NO", "ONE"),
          s2.call("CONFIG", "SET", "maxmemory", "0")
        ]).pipe(Effect.orDie)
        const exit = yield* Effect.exit(
          Effect.scoped(redlock.acquire("r", { ttl: "1 second", retry: Redlock.noRetry }))
        )
          .pipe(Effect.ensuring(restore))
        const error = refusalOf(exit)
        const reasons = error.outcomes.map((o) => o._tag === "Failed" ? o.error.reason : o._tag)
        assert.deepStrictEqual(reasons.slice(0, 3), ["ReadOnly", "ReadOnly", "OutOfMemory"])
        assert.notInclude(reasons.slice(3), "Failed") // Ok, or not awaited once three failures decided the attempt
        assert.include(error.message, "Failed(ReadOnly: READONLY")
        yield* expectEmpty(fleet)
      }).pipe(Effect.scoped))

    it.effect("scripts flushed from a node (NOSCRIPT) are loaded again", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const redlock = yield* redisManager(fleet.nodes)
        yield* Effect.scoped(redlock.acquire(["a", "b"], { ttl: "1 second" }))
        yield* Effect.forEach(fleet.servers, (server) => server.call("SCRIPT", "FLUSH"))
        const lock = yield* redlock.acquire(["a", "b"], { ttl: "1 second" })
        const result = yield* redlock.release(lock)
        assert.isAtLeast(result.released, 3)
        yield* expectEmpty(fleet)
      }).pipe(Effect.scoped))

    it.effect("a killed node fails fast; after its restart it takes part again", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const redlock = yield* redisManager(fleet.nodes)
        yield* fleet.servers[0].kill
        const started = performance.now()
        const lock = yield* Effect.scoped(redlock.acquire("r", { ttl: "10 seconds", nodeTimeout: "3 seconds" }))
        assert.isBelow(performance.now() - started, 1000, "the killed node answered at once instead of timing out")
        assert.notStrictEqual(lock.outcomes[0]._tag, "Ok")
        yield* fleet.servers[0].start
        // Node 0 takes part once it takes the key of a new lock. Its answer may
        // come after the decision at quorum (NotAwaited, as on a loaded
        // machine), so the server's key tells, not the lock's outcomes.
        const rejoined = yield* Effect.scoped(Effect.flatMap(
          redlock.acquire("r", { ttl: "10 seconds" }),
          (lock) =>
            Effect.flatMap(fleet.servers[0].call("GET", "redlock:r").pipe(Effect.timeout("1 second")), (value) =>
              value === lock.value
                ? Effect.succeed(value)
                : Effect.fail(`node 0 not back yet (its outcome: ${lock.outcomes[0]._tag})`))
        )).pipe(Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 50 }))
        assert.isString(rejoined)
        yield* expectEmpty(fleet)
      }).pipe(Effect.scoped))
  })

  layer(layerFleet(1, { password: "s3cret" }), { timeout: 30_000, excludeTestServices: true })(
    "a redis-server that requires a password",
    (it) => {
      it.effect("a wrong or missing password is an Auth outcome; the right one works", () =>
        Effect.gen(function*() {
          const fleet = yield* RedisFleet
          const node = fleet.nodes[0]
          for (const password of [undefined, "wrong"]) {
            const redlock = yield* redisManager([{
              ...node,
              password: password === undefined ? undefined : Redacted.make(password)
            }])
            // A 10 s ttl gives 100 ms node timeouts: a loaded machine still hears the refusal before its timeout.
            const exit = yield* Effect.exit(
              Effect.scoped(redlock.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry }))
            )
            const [outcome] = refusalOf(exit).outcomes
            assert.strictEqual(outcome._tag, "Failed")
            if (outcome._tag === "Failed") {
              assert.strictEqual(outcome.error.reason, "Auth", outcome.error.detail)
              assert.notInclude(outcome.error.message, "s3cret")
            }
          }
          const redlock = yield* redisManager([node])
          const lock = yield* redlock.acquire("r", { ttl: "10 seconds" })
          assert.deepStrictEqual(tags(lock.outcomes), ["Ok"])
        }).pipe(Effect.scoped))
    }
  )
}
