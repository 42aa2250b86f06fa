/**
 * Restart quarantine against 5 real redis-servers: the client learns each
 * server's run from INFO server on every connection, and a server that
 * restarted empty does not count until maxTtl has passed.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Option, Redacted, Schedule } from "effect"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Lock from "../src/Lock.js"
import * as Redlock from "../src/Redlock.js"
import type * as RedisNode from "../src/RedisNode.js"
import { LockNotAcquired } from "../src/RedlockError.js"
import { failureOf, redisManager } from "./support.js"

const tags = (outcomes: ReadonlyArray<RedisNode.NodeOutcome>) => outcomes.map((outcome) => outcome._tag)

/** Every node's run, once each node is connected to a server whose run it knows (and, where given, a newer one than `than`). */
const knownRuns = (redlock: Redlock.RedlockService, than?: ReadonlyArray<RedisNode.NodeRun>) =>
  Effect.sync(() => redlock.nodes.map((node) => node.run())).pipe(
    Effect.filterOrFail(
      (runs) => runs.every((run, i) => run._tag === "Known" && (than === undefined || run.id !== (than[i] as typeof run).id)),
      (runs) => JSON.stringify(runs)
    ),
    Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("5 seconds")))
  )

layer(RedisFleet.layerLocal(5), { timeout: 60_000, excludeTestServices: true })("restart quarantine on 5 redis-servers", (it) => {
  it.scoped("servers restarted empty under a holder abstain; without quarantine a second client gets the lock", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const holder = yield* redisManager(fleet.nodes, { maxTtl: "10 seconds", restartQuarantine: false })
      const guarded = yield* redisManager(fleet.nodes, { maxTtl: "10 seconds", restartQuarantine: true })
      const unguarded = yield* redisManager(fleet.nodes, { maxTtl: "10 seconds", restartQuarantine: false })
      const runsBefore = yield* knownRuns(guarded)

      const lock = yield* holder.acquire("r", { ttl: "10 seconds" })
      // Three of five servers crash and come straight back, empty.
      const killedAt = yield* Lock.monotonicMillis
      for (const server of fleet.servers.slice(0, 3)) {
        yield* server.kill
        yield* server.start
      }
      const runsAfter = yield* knownRuns(guarded).pipe(
        Effect.filterOrFail(
          (runs) => runs.slice(0, 3).every((run, i) => run._tag === "Known" && run.id !== (runsBefore[i] as typeof run).id),
          () => "not reconnected to the new runs yet"
        ),
        Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("5 seconds")))
      )
      for (let i = 0; i < 5; i++) {
        const [before, after] = [runsBefore[i], runsAfter[i]]
        assert.isTrue(before._tag === "Known" && after._tag === "Known")
        if (before._tag === "Known" && after._tag === "Known") {
          assert.strictEqual(after.id === before.id, i >= 3, `server ${i}: a new run id exactly when restarted`)
          // Uptime comes in whole seconds; the start taken from it is never before the real one.
          if (i < 3) assert.isAtLeast(after.startedAtMillis, killedAt)
        }
      }

      const refused = failureOf(
        yield* Effect.exit(Effect.scoped(guarded.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry })))
      ) as LockNotAcquired
      assert.instanceOf(refused, LockNotAcquired)
      const answered = tags(refused.outcomes)
      assert.notInclude(answered, "Ok", answered.join())
      assert.isAtLeast(answered.slice(0, 3).filter((tag) => tag === "Abstained").length, 1, refused.message)
      assert.include(refused.message, "restart quarantine")

      // The refused attempt's clean-up returns at a majority; the rest of it lands on the
      // other servers right after. Another client's connections may overtake it: wait for it.
      yield* Effect.forEach(fleet.servers.slice(0, 3), (server) =>
        server.call("EXISTS", "redlock:r").pipe(
          Effect.filterOrFail((exists) => exists === 0, () => "the clean-up has not landed yet"),
          Effect.retry(Schedule.spaced("10 millis").pipe(Schedule.upTo("2 seconds")))
        ))
      // The hazard itself: without quarantine the restarted servers hand the lock to a second client.
      const second = yield* unguarded.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry })
      assert.deepStrictEqual(tags(second.outcomes).slice(0, 3), ["Ok", "Ok", "Ok"])
      assert.isAbove(Duration.toMillis(yield* lock.remaining), 0, "while the first holder is still valid")
      assert.isAbove(Duration.toMillis(yield* second.remaining), 0)
    }))

  it.scoped("a restarted server abstains for maxTtl after its start, then votes again", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      // One node, so that its answer is always awaited (with five, a quorum of the others may decide first).
      const redlock = yield* redisManager([fleet.nodes[0]], { maxTtl: "1 second", restartQuarantine: true })
      // A node timeout well above a loaded machine's round trip: the first answer of a server just restarted
      // must be read (Abstained), not given up on (the default for a 1 s ttl is 10 ms).
      const attempt = Effect.scoped(redlock.acquire("r", { ttl: "1 second", nodeTimeout: "500 millis", retry: Redlock.noRetry }))
      const untilServer0Votes = Effect.retry(attempt, Schedule.spaced("50 millis").pipe(Schedule.upTo("5 seconds")))
      // The fleet itself was just started: wait until it is out of quarantine.
      yield* untilServer0Votes
      const restartedAt = performance.now()
      yield* fleet.servers[0].kill
      yield* fleet.servers[0].start
      yield* knownRuns(redlock)
      const during = failureOf(yield* Effect.exit(attempt)) as LockNotAcquired
      assert.deepStrictEqual(tags(during.outcomes), ["Abstained"], "the restarted server does not count")
      yield* untilServer0Votes
      // Never sooner than maxTtl (plus drift) after the restart; INFO's whole
      // seconds may add up to two more.
      const abstainedFor = performance.now() - restartedAt
      assert.isAtLeast(abstainedFor, 1000)
      assert.isBelow(abstainedFor, 4500)
      // Release returns at a quorum; the other nodes' deletes land right after.
      const sizes = yield* fleet.dbsizes.pipe(
        Effect.filterOrFail((sizes) => sizes.every((size) => size === 0), (sizes) => sizes),
        Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("2 seconds"))),
        Effect.orElseSucceed(() => "keys left behind")
      )
      assert.deepStrictEqual(sizes, [0, 0, 0, 0, 0], "every attempt released its keys, counted or not")
    }))
})

layer(RedisFleet.layerLocal(3, { persistence: true }), { timeout: 60_000, excludeTestServices: true })(
  "restart quarantine on 3 redis-servers with AOF, appendfsync always",
  (it) => {
    it.scoped("servers that keep their keys vote at once after a restart, and the holder keeps its lock", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        const holder = yield* redisManager(fleet.nodes, { maxTtl: "10 seconds", restartQuarantine: true })
        const other = yield* redisManager(fleet.nodes, { maxTtl: "10 seconds", restartQuarantine: true })
        const before = yield* knownRuns(other)
        for (const run of before) {
          assert.deepStrictEqual(run._tag === "Known" && run.persistence, { keepsKeys: true, detail: "AOF, appendfsync always" })
        }
        // The fleet was just started: without the persistence rule every node would abstain for 10 s.
        const lock = yield* holder.acquire("r", { ttl: "10 seconds" })
        assert.notInclude(tags(lock.outcomes), "Abstained")
        // The grant was decided at a quorum: a read of every node, on the same connections, lands after
        // the last node's SET (found once on a loaded machine: killed before it ran, that node said Ok).
        const seen = yield* holder.inspect("r")
        assert.deepStrictEqual(
          seen.nodes.map((node) => node._tag === "Read" ? Option.getOrUndefined(node.state.value) : node._tag),
          fleet.nodes.map(() => lock.value)
        )
        for (const server of fleet.servers) {
          yield* server.kill
          yield* server.start
        }
        yield* knownRuns(other, before)
        const refused = failureOf(
          yield* Effect.exit(Effect.scoped(other.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry })))
        ) as LockNotAcquired
        assert.instanceOf(refused, LockNotAcquired)
        assert.notInclude(tags(refused.outcomes), "Ok", "the holder's keys came back with the servers")
        assert.notInclude(tags(refused.outcomes), "Abstained", refused.message)
        assert.isAbove(Duration.toMillis(yield* lock.remaining), 0)
        const free = yield* Effect.scoped(other.acquire("s", { ttl: "1 second", retry: Redlock.noRetry }))
        assert.notInclude(tags(free.outcomes), "Abstained", "restarted 0 s ago, and counted")
      }))

    it.scoped("weaker persistence (appendfsync everysec) or a refused CONFIG GET keeps the quarantine, and says so", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        const [s0, s1, s2] = fleet.servers
        // A user that may not read the configuration: persistence unknown unless declared.
        for (const server of fleet.servers) {
          yield* server.call("ACL", "SETUSER", "locker", "on", ">secret", "~*", "&*", "+@all", "-config")
        }
        yield* s0.call("CONFIG", "SET", "appendfsync", "everysec")
        const login = { username: "locker", password: Redacted.make("secret") }
        const nodes = fleet.nodes.map((node, i) => ({ ...node, ...(i === 0 ? {} : login), durable: i === 2 }))
        const redlock = yield* redisManager(nodes, { maxTtl: "10 seconds", restartQuarantine: true })
        const runs = yield* knownRuns(redlock)
        const persistence = runs.map((run) => run._tag === "Known" ? run.persistence : undefined)
        assert.deepStrictEqual(persistence.map((p) => p?.keepsKeys), [false, false, true])
        assert.include(persistence[0]?.detail, "appendfsync everysec")
        assert.include(persistence[1]?.detail, "persistence unknown: AOF on, CONFIG GET appendfsync refused: NOPERM")
        assert.include(persistence[2]?.detail, "declared durable")
        // The servers started moments ago: 0 and 1 abstain, saying why (2 would count, but 1 of 3 is no quorum).
        const refused = failureOf(
          // A node timeout well above a loaded machine's answer time: the test reads every node's answer.
          yield* Effect.exit(Effect.scoped(redlock.acquire("r", { ttl: "1 second", nodeTimeout: "500 millis", retry: Redlock.noRetry })))
        ) as LockNotAcquired
        assert.deepStrictEqual(tags(refused.outcomes).slice(0, 2), ["Abstained", "Abstained"], refused.message)
        assert.include(refused.message, "restart quarantine; AOF, appendfsync everysec")
        assert.include(refused.message, "restart quarantine; persistence unknown")
        yield* s0.call("CONFIG", "SET", "appendfsync", "always")
        for (const server of [s0, s1, s2]) yield* server.call("ACL", "DELUSER", "locker")
      }))
  }
)
