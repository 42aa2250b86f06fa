/**
 * Waiting for a held lock: woken by the release announced on the nodes, at
 * the end of the holder's ttl, or polling on the retry schedule when no
 * announcement comes; served in line; nothing left watching once the wait ends.
 *
 * One suite, run by both Effect lines (each package's test/waiting.test.ts).
 */
import {
  assert,
  atMost,
  Context,
  describe,
  Duration,
  type DurationInput,
  Effect,
  Exit,
  Fiber,
  type Fleet,
  fork,
  Ioredis,
  it,
  Layer,
  layer,
  layerFleet,
  Lock,
  Option,
  poll,
  RedisFleet,
  RedisNode,
  Redlock,
  RedlockError,
  Schedule,
  scheduleDelays,
  steppableClock,
  TestClock,
  withFixedRandom
} from "@effect-redlock/line"
import * as CoreRetry from "@effect-redlock/core/manager/retry.js"
import { effectsOf, memory, redisManager, refusalOf } from "./support.js"

const slowRetry = Schedule.spaced("10 seconds").pipe(atMost(5))

const watchers = Effect.gen(function*() {
  const control = yield* RedisNode.MemoryNodes
  return yield* Effect.forEach([0, 1, 2], (i) => control.releaseWatchers(i))
})

/** A node this client cannot reach (a network partition on its side only): every operation fails at once. */
const unreachable = (node: RedisNode.RedisNode): Effect.Effect<RedisNode.RedisNode> => {
  const fail = Effect.fail(
    new RedlockError.RedisNodeError({ node: node.name, reason: "Unavailable", detail: "partitioned from this client" })
  )
  return RedisNode.fromEffects({
    name: node.name,
    run: node.run,
    acquire: () => fail,
    acquireInTurn: () => fail,
    acquireSlot: () => fail,
    release: () => fail,
    extend: () => fail,
    inspect: () => fail,
    incrementFences: () => fail,
    commitFences: () => fail
  })
}

/** A lock manager over the memory nodes in context that reaches only the nodes listed. */
const managerReaching = (reachable: ReadonlyArray<number>) =>
  Effect.flatMap(RedisNode.RedisNodes, (nodes) =>
    Effect.flatMap(
      Effect.forEach(nodes, (node, index) => reachable.includes(index) ? Effect.succeed(node) : unreachable(node)),
      (reaching) => Effect.provideService(Redlock.make(), RedisNode.RedisNodes, reaching)
    ))

/** PUBSUB NUMSUB of a channel on the fleet's first server, asked again until it is `count` (within `within`). */
const subscribersReach = (fleet: Fleet, channel: string, count: number, within: DurationInput) =>
  Effect.retry(
    Effect.flatMap(fleet.servers[0].call("PUBSUB", "NUMSUB", channel), (reply) =>
      (reply as Array<unknown>)[1] === count ? Effect.succeed(reply) : Effect.fail(`not ${count} subscribers yet`)),
    { schedule: Schedule.spaced("20 millis"), times: Math.ceil(Duration.toMillis(within) / 20) }
  )

export const waitingSuite = () => {
  describe("waking on release (memory nodes, TestClock)", () => {
    it.effect("a waiter takes the lock when the holder releases it, not at its next scheduled attempt", () =>
      Effect.gen(function*() {
        const holder = yield* Redlock.make()
        const waiter = yield* Redlock.make()
        const held = yield* holder.acquire("r", { ttl: "10 seconds" })
        const waiting = yield* fork(
          Effect.flatMap(
            waiter.acquire("r", { ttl: "10 seconds", retry: slowRetry }),
            (lock) => Effect.map(Lock.monotonicMillis, (at) => ({ lock, at }))
          )
        )
        yield* TestClock.adjust("100 millis")
        assert.deepStrictEqual(yield* watchers, [1, 1, 1], "one watcher per node while waiting")
        yield* holder.release(held)
        const { at, lock } = yield* Fiber.join(waiting)
        assert.strictEqual(at, 100, "woken by the release at 100 ms, not at 10 s")
        assert.strictEqual(lock.attempts, 2)
        assert.deepStrictEqual(yield* watchers, [0, 0, 0], "no watcher left once it holds the lock")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("greedy waiters (fairHandoff: false) watch nothing and poll on their schedule: the releaser takes the lock again", () =>
      Effect.gen(function*() {
        const releaser = yield* Redlock.make({ fairHandoff: false })
        const waiter = yield* Redlock.make({ fairHandoff: false })
        const control = yield* RedisNode.MemoryNodes
        const first = yield* releaser.acquire("r", { ttl: "10 seconds" })
        const retry = Schedule.spaced("300 millis").pipe(atMost(10))
        const waiting = yield* fork(
          Effect.andThen(waiter.acquire("r", { ttl: "10 seconds", retry }), Lock.monotonicMillis)
        )
        yield* TestClock.adjust("100 millis")
        assert.deepStrictEqual(
          yield* watchers,
          [0, 0, 0],
          "no watcher: a release names no greedy waiter, and would wake them all"
        )
        const before = yield* control.operations(0)
        yield* releaser.release(first)
        const again = yield* releaser.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry })
        yield* TestClock.adjust("1 millis")
        assert.strictEqual(
          (yield* control.operations(0)) - before,
          2,
          "the release and the releaser's attempt: the waiter sleeps on"
        )
        yield* releaser.release(again)
        // Its next poll (at 300 ms) finds the lock free.
        for (let i = 0; i < 3; i++) yield* TestClock.adjust("100 millis")
        assert.strictEqual(yield* Fiber.join(waiting), 300)
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("one node announcing a release that names nobody (its line was lost) wakes no one; the holder's release does", () =>
      Effect.gen(function*() {
        const holder = yield* Redlock.make()
        const waiter = yield* Redlock.make()
        const nodes = yield* RedisNode.RedisNodes
        const control = yield* RedisNode.MemoryNodes
        const held = yield* holder.acquire("r", { ttl: "10 seconds" })
        const waiting = yield* fork(waiter.acquire("r", { ttl: "10 seconds", retry: slowRetry }))
        yield* TestClock.adjust("100 millis")
        // Node 0 restarts empty (the holder keeps nodes 1-2), then some key of the resource is released there.
        yield* control.restart(0)
        yield* control.putString(0, "redlock:r", "stray", 10_000)
        const before = yield* control.operations(1)
        assert.strictEqual(yield* effectsOf(nodes[0]).release(["redlock:r"], "stray", true), 1)
        yield* TestClock.adjust("100 millis")
        assert.strictEqual(yield* control.operations(1), before, "no attempt for one node's announcement naming nobody")
        yield* holder.release(held)
        const lock = yield* Fiber.join(waiting)
        assert.strictEqual(lock.attempts, 2, "woken once, by the holder's release that named it")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("without a release (the holder's keys expire), the waiter tries when they run out, before its next poll", () =>
      Effect.gen(function*() {
        const holder = yield* Redlock.make()
        const waiter = yield* Redlock.make()
        yield* holder.acquire("r", { ttl: "1 second" })
        const retry = Schedule.spaced("300 millis").pipe(atMost(10))
        const waiting = yield* fork(
          Effect.andThen(waiter.acquire("r", { ttl: "1 second", retry }), Lock.monotonicMillis)
        )
        for (let i = 0; i < 13; i++) yield* TestClock.adjust("100 millis")
        // The first attempt (at 0) read the holder's 1000 ms left; polls would come at 300, 600, 900, 1200.
        assert.strictEqual(yield* Fiber.join(waiting), 1001, "1 ms after the holder's keys ran out")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("a release nobody announced (keys lost without expiry): the waiter polls on its schedule", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        for (let i = 0; i < 3; i++) yield* control.putString(i, "redlock:r", "someone else") // never expires
        const waiter = yield* Redlock.make({ restartQuarantine: false })
        const retry = Schedule.spaced("300 millis").pipe(atMost(10))
        const waiting = yield* fork(
          Effect.andThen(waiter.acquire("r", { ttl: "1 second", retry }), Lock.monotonicMillis)
        )
        yield* TestClock.adjust("450 millis")
        for (let i = 0; i < 3; i++) yield* control.restart(i) // the keys are gone, and nobody said so
        for (let i = 0; i < 3; i++) yield* TestClock.adjust("100 millis")
        // The first attempt's place in line (270 ms) was renewed at 260 ms, a retry brought forward; the next poll, 300 ms on.
        assert.strictEqual(yield* Fiber.join(waiting), 560, "the poll after the keys were lost")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("an interrupted waiter leaves no watcher behind", () =>
      Effect.gen(function*() {
        const holder = yield* Redlock.make()
        yield* holder.acquire("r", { ttl: "10 seconds" })
        const waiting = yield* fork(Redlock.acquire("r", { ttl: "10 seconds", retry: slowRetry }))
        yield* TestClock.adjust("100 millis")
        assert.deepStrictEqual(yield* watchers, [1, 1, 1])
        yield* Fiber.interrupt(waiting)
        assert.deepStrictEqual(yield* watchers, [0, 0, 0])
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("waiters are served in the order they came, each woken by the release before its turn", () =>
      Effect.gen(function*() {
        const holder = yield* Redlock.make()
        const first = yield* holder.acquire("r", { ttl: "10 seconds" })
        const served: Array<string> = []
        const wait = (name: string) =>
          Effect.flatMap(Redlock.make(), (manager) =>
            fork(Effect.scoped(Effect.andThen(
              manager.acquire("r", { ttl: "10 seconds", retry: slowRetry }),
              Effect.andThen(Effect.sync(() => served.push(name)), Effect.sleep("5 millis"))
            ))))
        // Joining in the order c, a, b (10 ms apart); value order plays no part.
        const fibers = []
        for (const name of ["c", "a", "b"]) {
          fibers.push(yield* wait(name))
          yield* TestClock.adjust("10 millis")
        }
        yield* holder.release(first)
        for (let i = 0; i < 4; i++) yield* TestClock.adjust("5 millis")
        yield* Effect.forEach(fibers, Fiber.join)
        assert.deepStrictEqual(served, ["c", "a", "b"])
        const control = yield* RedisNode.MemoryNodes
        assert.deepStrictEqual(yield* control.keys(0), [], "nobody left in line")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("many fibers of one process waiting on one key: a release wakes one of them, not a herd", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const redlock = yield* Redlock.make()
        const first = yield* redlock.acquire("r", { ttl: "10 seconds" })
        const fibers = yield* Effect.forEach(Array.from({ length: 6 }), () =>
          fork(Effect.scoped(Effect.andThen(
            redlock.acquire("r", { ttl: "10 seconds", retry: slowRetry }),
            Effect.sleep("1 second")
          ))))
        yield* TestClock.adjust("100 millis")
        const before = yield* control.operations(0)
        yield* redlock.release(first)
        yield* TestClock.adjust("1 millis")
        assert.strictEqual((yield* control.operations(0)) - before, 2, "the release, then one attempt")
        const holder = (yield* redlock.inspect("r")).holder
        assert.isTrue(Option.isSome(holder) && holder.value !== first.value, "a waiter holds it now")
        yield* Effect.forEach(fibers, Fiber.interrupt)
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("a key that expired (no release, no handover) is free: a newcomer's first attempt, fair or greedy, may take it ahead of the line", () =>
      Effect.gen(function*() {
        const holder = yield* Redlock.make()
        yield* holder.acquire("r", { ttl: "1 second" })
        const waiting = yield* fork(Redlock.acquire("r", { ttl: "10 seconds", retry: slowRetry }))
        // The holder's keys run out at 1000 ms without a release; the waiter, in line
        // all along (it renews its place before its lease ends), tries at 1001 ms.
        yield* TestClock.adjust("1000 millis")
        const fair = yield* holder.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry })
        assert.strictEqual(fair.attempts, 1, "the probe of a fair newcomer found the key free")
        yield* holder.release(fair)
        // Released: the key is handed to the waiter, first in line; a greedy newcomer finds it taken.
        const greedy = yield* Redlock.make({ fairHandoff: false })
        const refused = yield* Effect.exit(greedy.acquire("r", { ttl: "10 seconds", retry: Redlock.noRetry }))
        assert.isTrue(Exit.isFailure(refused), "the released key waits for the first in line")
        yield* TestClock.adjust("1 millis")
        assert.isDefined(yield* poll(waiting), "the waiter, woken by the release, holds it")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("fair handoff: a waiter woken by the release gets the lock; the releaser waits its turn", () =>
      Effect.gen(function*() {
        const releaser = yield* Redlock.make()
        const waiter = yield* Redlock.make()
        const first = yield* releaser.acquire("r", { ttl: "10 seconds" })
        const waiting = yield* fork(waiter.acquire("r", { ttl: "10 seconds", retry: slowRetry }))
        yield* TestClock.adjust("100 millis")
        yield* releaser.release(first)
        const again = yield* fork(releaser.acquire("r", { ttl: "10 seconds", retry: slowRetry }))
        yield* TestClock.adjust("1 millis")
        assert.isDefined(yield* poll(waiting), "the waiter holds it")
        assert.isUndefined(yield* poll(again), "the releaser waits")
        yield* Fiber.interrupt(again)
      }).pipe(Effect.scoped, Effect.provide(memory(3))))
  })

  describe("retry schedules with plain steps (Redlock.retry, the default retry)", () => {
    const draws: [number, ...Array<number>] = [0, 0.25, 0.999]
    const refusal = new RedlockError.LockNotAcquired({
      resources: ["r"],
      reason: "NoQuorum",
      attempts: 1,
      elapsedMillis: 0,
      quorum: 2,
      outcomes: []
    })

    // The delays a Schedule asks for, step by step, until done (at most `steps`), drawing from Effect's Random.
    const scheduledDelays = (schedule: Redlock.RetrySchedule, steps: number) =>
      scheduleDelays(schedule, refusal, steps).pipe(withFixedRandom(draws))

    // The same from its plain steps (the waiting takes these), with the same draws.
    const plainDelays = (schedule: Redlock.RetrySchedule, steps: number) => {
      const plain = CoreRetry.stepsOf(schedule)
      assert.isDefined(plain, "the schedule has plain steps")
      const delays: Array<number | "done"> = []
      let step = 0
      const retry = plain!.start(() => draws[step % draws.length])
      for (; step < steps; step++) {
        let next: number | undefined
        retry.step(
          { refusal: undefined },
          0,
          (delayMillis) => next = delayMillis,
          (cause) => assert.fail(String(cause))
        )
        delays.push(next === undefined ? "done" : next)
        if (next === undefined) break
      }
      return delays
    }

    it.effect("the default retry's plain steps are the Schedule's: the same delay for the same draw, three retries, then done", () =>
      Effect.gen(function*() {
        const scheduled = yield* scheduledDelays(Redlock.defaultRetry, 10)
        assert.deepStrictEqual(scheduled, [100, 125, 200, "done"])
        assert.deepStrictEqual(plainDelays(Redlock.defaultRetry, 10), scheduled)
      }))

    it.effect("Redlock.retry: the plain steps are the Schedule's (jitter 0.8-1.2 by default), `times` retries, then done", () =>
      Effect.gen(function*() {
        const tens = Redlock.retry({ delay: "10 millis", times: 4 })
        const scheduled = yield* scheduledDelays(tens, 10)
        assert.deepStrictEqual(scheduled, [8, 9, 12, 8, "done"])
        assert.deepStrictEqual(plainDelays(tens, 10), scheduled)
        const wide = Redlock.retry({ delay: 1_000, times: 2, jitter: { min: 0.1, max: 2 } })
        assert.deepStrictEqual(yield* scheduledDelays(wide, 10), [100, 575, "done"])
        assert.deepStrictEqual(plainDelays(wide, 10), [100, 575, "done"])
        assert.deepStrictEqual(yield* scheduledDelays(Redlock.retry({ delay: 5, times: 0 }), 10), ["done"])
      }))

    it("Redlock.retry refuses options out of range with InvalidOptions naming the option; a hand-built Schedule has no plain steps", () => {
      const refused = (options: Redlock.RetryOptions) => {
        try {
          Redlock.retry(options)
        } catch (error) {
          assert.instanceOf(error, RedlockError.InvalidOptions)
          return (error as RedlockError.InvalidOptions).option
        }
        return assert.fail(`accepted ${JSON.stringify(options)}`)
      }
      assert.strictEqual(refused({ delay: 0, times: 3 }), "retry.delay")
      assert.strictEqual(refused({ delay: "forever" as never, times: 3 }), "retry.delay")
      assert.strictEqual(refused({ delay: 10, times: -1 }), "retry.times")
      assert.strictEqual(refused({ delay: 10, times: 1.5 }), "retry.times")
      assert.strictEqual(refused({ delay: 10, times: 3, jitter: { min: 1.2, max: 0.8 } }), "retry.jitter")
      assert.strictEqual(refused({ delay: 10, times: 3, jitter: { min: -0.1, max: 1 } }), "retry.jitter")
      assert.strictEqual(refused(undefined as never), "retry")
      assert.isUndefined(CoreRetry.stepsOf(Schedule.spaced("10 millis").pipe(atMost(3))))
    })
  })

  describe("places in line (memory nodes, TestClock)", () => {
    it.effect("waiters that reach only a minority of nodes do not keep a free resource from a client that reaches them all", () =>
      Effect.gen(function*() {
        const holder = yield* Redlock.make()
        const held = yield* holder.acquire("r", { ttl: "10 seconds" })
        // Each reaches two nodes of five, for ever; together they stand first in line on nodes 0-2.
        const forever = Schedule.spaced("100 millis")
        const minorities = yield* Effect.forEach(
          [[0, 1], [1, 2]],
          (reachable) =>
            Effect.flatMap(
              managerReaching(reachable),
              (manager) => fork(manager.acquire("r", { ttl: "10 seconds", retry: forever }))
            )
        )
        yield* TestClock.adjust("50 millis")
        yield* holder.release(held)
        const newcomer = yield* Redlock.make()
        const taking = yield* fork(
          newcomer.acquire("r", { ttl: "10 seconds", retry: Schedule.spaced("30 millis").pipe(atMost(100)) })
        )
        yield* TestClock.adjust("3 seconds")
        const taken = yield* poll(taking)
        yield* Effect.forEach([...minorities, taking], (fiber) => fork(Fiber.interrupt(fiber)))
        yield* TestClock.adjust("1 second") // their leaving, within the node timeout
        assert.isTrue(taken !== undefined && Exit.isSuccess(taken), "the newcomer holds the lock")
      }).pipe(Effect.scoped, Effect.provide(memory(5))))
  })

  describe("waiters that cannot hear releases (memory nodes, TestClock)", () => {
    // The memory nodes, as nodes that cannot announce now (`hearsReleases`), or that have no announcements at all.
    const deafManager = (deafness: "hearsNothing" | "noAnnouncements") =>
      Effect.flatMap(RedisNode.RedisNodes, (nodes) =>
        Effect.provideService(
          Redlock.make(),
          RedisNode.RedisNodes,
          nodes.map((node): RedisNode.RedisNode =>
            deafness === "hearsNothing"
              ? { ...node, hearsReleases: () => false }
              : { ...node, watchReleasesNow: undefined }
          )
        ))
    const lineSizes = Effect.flatMap(
      RedisNode.MemoryNodes,
      (control) =>
        Effect.forEach(
          [0, 1, 2],
          (index) => Effect.map(control.keys(index), (keys) => keys.filter((key) => key.endsWith("\u0000queue")).length)
        )
    )

    for (const deafness of ["hearsNothing", "noAnnouncements"] as const) {
      it.effect(`${deafness}: the waiter takes no place in line, so a released key is free for a newcomer at once`, () =>
        Effect.gen(function*() {
          const holder = yield* Redlock.make()
          const held = yield* holder.acquire("deaf", { ttl: "10 seconds" })
          const deaf = yield* deafManager(deafness)
          const waiting = yield* fork(
            deaf.acquire("deaf", { ttl: "10 seconds", retry: Schedule.spaced("5 seconds").pipe(atMost(3)) })
          )
          yield* TestClock.adjust("100 millis")
          assert.deepStrictEqual(yield* lineSizes, [0, 0, 0], "nobody in line")
          yield* holder.release(held)
          const newcomer = yield* Redlock.make()
          const taken = yield* Effect.exit(newcomer.acquire("deaf", { ttl: "10 seconds", retry: Redlock.noRetry }))
          assert.isTrue(Exit.isSuccess(taken), "the newcomer holds the lock")
          yield* Fiber.interrupt(waiting)
        }).pipe(Effect.scoped, Effect.provide(memory(3))))
    }
  })

  layer(layerFleet(3), { timeout: 60_000, excludeTestServices: true })("waking on release (redis-servers)", (it) => {
    it.effect("a jittered retry schedule (fractional intervals) keeps its place in line: every attempt answered, no error", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const holder = yield* redisManager(fleet.nodes)
        const waiter = yield* redisManager(fleet.nodes)
        yield* holder.acquire("jittered", { ttl: "10 seconds" })
        // The README's own example schedule.
        const retry = Schedule.exponential("20 millis").pipe(Schedule.jittered, atMost(5))
        const error = refusalOf(
          yield* Effect.exit(Effect.scoped(waiter.acquire("jittered", { ttl: "5 seconds", retry })))
        )
        assert.strictEqual(error.reason, "Held")
        assert.isAtLeast(error.attempts, 6)
        const tags = error.outcomes.map((outcome) => outcome._tag)
        assert.notInclude(tags, "Failed", JSON.stringify(error.outcomes))
      }).pipe(Effect.scoped))

    it.effect("a waiter's own late grant, landing after its next attempt was sent, counts for it instead of blocking it", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const [zero, , two] = fleet.servers
        yield* Effect.addFinalizer(() => Effect.all([zero.resume, two.resume]))
        const holder = yield* redisManager(fleet.nodes)
        const waiter = yield* redisManager(fleet.nodes)
        // The holder keeps servers 1 and 2; server 0 is free, and paused.
        const held = yield* holder.acquire("late", { ttl: "10 seconds" })
        yield* zero.call("DEL", "redlock:late")
        yield* zero.pause
        // Attempt 1: refused at once by servers 1-2; its SET waits on server 0.
        const waiting = yield* fork(Effect.scoped(
          Effect.map(
            waiter.acquire("late", { ttl: "10 seconds", nodeTimeout: "500 millis", retry: slowRetry }),
            (lock) => ({
              attempts: lock.attempts,
              outcomes: lock.outcomes.map((outcome) => outcome._tag)
            })
          )
        ))
        yield* Effect.sleep("200 millis")
        yield* holder.release(held)
        yield* two.pause
        // Attempt 2 goes out (server 0 missed the subscription: the waiter tries at once after 500 ms) and needs
        // server 0, where it lands after attempt 1's grant, which a later attempt does not undo.
        yield* Effect.sleep("500 millis")
        yield* zero.resume
        const taken = yield* Fiber.join(waiting).pipe(Effect.timeout("3 seconds"), Effect.exit)
        yield* two.resume
        if (!Exit.isSuccess(taken)) return assert.fail(`not granted: ${String(taken)}`)
        const { attempts, outcomes } = taken.value
        assert.strictEqual(attempts, 2)
        assert.deepStrictEqual([outcomes[0], outcomes[1]], ["Ok", "Ok"])
      }).pipe(Effect.scoped))

    it.effect("the wall clock stepped back while waiting stretches neither the retry budget nor the wait", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const holder = yield* redisManager(fleet.nodes)
        const waiter = yield* redisManager(fleet.nodes)
        yield* holder.acquire("stepped", { ttl: "30 seconds" })
        const { step, use } = yield* steppableClock
        const retry = Schedule.spaced("300 millis").pipe(atMost(2))
        const started = performance.now()
        const waiting = yield* fork(
          Effect.exit(Effect.scoped(waiter.acquire("stepped", { ttl: "10 seconds", retry }))).pipe(use)
        )
        yield* Effect.sleep("100 millis")
        step.backMillis = 10_000 // NTP steps the clock back ten seconds
        const error = refusalOf(yield* Fiber.join(waiting))
        const elapsed = performance.now() - started
        assert.strictEqual(error.reason, "Held")
        assert.isBelow(elapsed, 3_000, `gave up after ${Math.round(elapsed)} ms; the schedule allows ~600 ms`)
      }).pipe(Effect.scoped))

    it.effect("the default retry, never woken: three retries 100-200 ms apart, then the last attempt's refusal, out of line", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const holder = yield* redisManager(fleet.nodes)
        const waiter = yield* redisManager(fleet.nodes)
        yield* holder.acquire("default-retry", { ttl: "10 seconds" })
        const started = performance.now()
        const error = refusalOf(
          yield* Effect.exit(Effect.scoped(waiter.acquire("default-retry", { ttl: "5 seconds" })))
        )
        const elapsed = performance.now() - started
        // The first attempt, its re-check at once when the new subscriptions are ready (a release may have been
        // missed), three retries.
        assert.strictEqual(error.attempts, 5)
        assert.isAtLeast(elapsed, 295, `gave up after ${Math.round(elapsed)} ms`)
        assert.isBelow(elapsed, 2_000, `gave up after ${Math.round(elapsed)} ms`)
        const inLine = yield* Effect.forEach(
          fleet.servers,
          (server) => server.call("ZCARD", "redlock:default-retry\u0000queue")
        )
        assert.deepStrictEqual(inLine, [0, 0, 0], "the waiter left the line")
      }).pipe(Effect.scoped))

    it.effect("a Redlock.retry schedule's delays draw from the fiber's Random, as the Schedule's own steps do", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const holder = yield* redisManager(fleet.nodes)
        const waiter = yield* redisManager(fleet.nodes)
        yield* holder.acquire("plain-retry", { ttl: "10 seconds" })
        // Effect's Random draws 0.999 (~200 ms delays: ~600 ms in all); Math.random draws 0 (20 ms each).
        const retry = Redlock.retry({ delay: 200, times: 3, jitter: { min: 0.1, max: 1 } })
        const mathRandom = Math.random
        Math.random = () => 0
        const started = performance.now()
        const exit = yield* Effect.exit(Effect.scoped(waiter.acquire("plain-retry", { ttl: "5 seconds", retry }))).pipe(
          withFixedRandom([0.999]),
          Effect.ensuring(Effect.sync(() => void (Math.random = mathRandom)))
        )
        const elapsed = performance.now() - started
        const error = refusalOf(exit)
        // The first attempt, its re-check (the new subscriptions), three retries ~200 ms apart.
        assert.strictEqual(error.attempts, 5)
        assert.isAtLeast(
          elapsed,
          590,
          `gave up after ${Math.round(elapsed)} ms: Math.random's draws (~60 ms) were taken`
        )
        assert.isBelow(elapsed, 3_000, `gave up after ${Math.round(elapsed)} ms`)
      }).pipe(Effect.scoped))

    it.effect("nodes written with effects (RedisNode.fromEffects), their watches effects too: the waiter is woken all the same", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const holder = yield* redisManager(fleet.nodes)
        // The ioredis nodes again, as nodes written with effects: each watch is registered by running its effect.
        const effectWatches = Layer.effect(
          RedisNode.RedisNodes,
          Effect.flatMap(
            RedisNode.RedisNodes,
            (nodes) => Effect.forEach(nodes, (node) => RedisNode.fromEffects(effectsOf(node)))
          )
        ).pipe(Layer.provide(Ioredis.layer(fleet.nodes)))
        const managers = yield* Layer.build(
          Redlock.layer({ restartQuarantine: false }).pipe(Layer.provideMerge(effectWatches))
        )
        const waiter = Context.get(managers, Redlock.Redlock)
        const held = yield* holder.acquire("effect-watches", { ttl: "10 seconds" })
        const waiting = yield* fork(Effect.andThen(
          waiter.acquire("effect-watches", { ttl: "10 seconds", retry: slowRetry }),
          Effect.sync(() => performance.now())
        ))
        // Past the renewal of the place taken by the first attempt (~350 ms): the next attempt on its own is 10 s away.
        yield* Effect.sleep("1 second")
        const released = performance.now()
        yield* holder.release(held)
        const acquired = yield* Fiber.join(waiting)
        assert.isBelow(
          acquired - released,
          500,
          `woken ${Math.round(acquired - released)} ms after the release (next poll: 10 s)`
        )
      }).pipe(Effect.scoped))

    it.effect("a refusal says why: Held while another client holds the resource, NotYourTurn while a waiter ahead stands in line for it, NoQuorum when nodes fail", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        yield* fleet.reset
        const holder = yield* redisManager(fleet.nodes)
        const waiter = yield* redisManager(fleet.nodes)
        const newcomer = yield* redisManager(fleet.nodes)
        const refusal = (resource: string) =>
          Effect.map(
            Effect.exit(Effect.scoped(newcomer.acquire(resource, { ttl: "10 seconds", retry: Redlock.noRetry }))),
            refusalOf
          )
        yield* holder.acquire("why", { ttl: "10 seconds" })
        const held = yield* refusal("why")
        assert.strictEqual(held.reason, "Held")
        assert.include(held.message, "another client holds it")
        // A waiter stands in line; the holder's keys vanish without a release (as when they expire): the key is free, not ours.
        const waiting = yield* fork(Effect.scoped(waiter.acquire("why", { ttl: "10 seconds", retry: slowRetry })))
        yield* Effect.sleep("300 millis")
        yield* Effect.forEach(fleet.servers, (server) => server.call("DEL", "redlock:why"))
        const behind = yield* refusal("why")
        assert.strictEqual(behind.reason, "NotYourTurn")
        yield* Fiber.interrupt(waiting)
        // Nodes that do not answer are not a busy resource.
        yield* Effect.forEach([0, 1], (index) => fleet.servers[index].pause)
        const failing = yield* Effect.map(
          Effect.exit(
            Effect.scoped(
              newcomer.acquire("other", { ttl: "10 seconds", nodeTimeout: "100 millis", retry: Redlock.noRetry })
            )
          ),
          refusalOf
        ).pipe(Effect.ensuring(Effect.forEach([0, 1], (index) => fleet.servers[index].resume)))
        assert.strictEqual(failing.reason, "NoQuorum")
      }).pipe(Effect.scoped))

    it.effect("a waiter is woken by the release's announcement, and unsubscribes when done", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        const holder = yield* redisManager(fleet.nodes)
        const waiter = yield* redisManager(fleet.nodes)
        const held = yield* holder.acquire("r", { ttl: "10 seconds" })
        const waiting = yield* fork(Effect.andThen(
          waiter.acquire("r", { ttl: "10 seconds", retry: slowRetry }),
          Effect.sync(() => performance.now())
        ))
        // Past the renewal of the place taken by the first attempt (~350 ms): the next attempt on its own is 10 s away.
        yield* Effect.sleep("1 second")
        const subscribed = yield* fleet.servers[0].call("PUBSUB", "NUMSUB", "redlock-released:redlock:r")
        assert.deepStrictEqual(subscribed, ["redlock-released:redlock:r", 1], "one subscriber connection per node")
        const released = performance.now()
        yield* holder.release(held)
        const acquired = yield* Fiber.join(waiting)
        assert.isBelow(
          acquired - released,
          500,
          `woken ${Math.round(acquired - released)} ms after the release (next poll: 10 s)`
        )
        // The subscription lingers a second after the last waiter left (a busy key keeps it).
        const after = yield* subscribersReach(fleet, "redlock-released:redlock:r", 0, "4 seconds")
        assert.deepStrictEqual(after, ["redlock-released:redlock:r", 0])
      }).pipe(Effect.scoped))

    it.effect("after the subscriber reconnects, the watched channel is subscribed again, and dropped once nobody watches it", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        const holder = yield* redisManager(fleet.nodes)
        const waiter = yield* redisManager(fleet.nodes)
        const held = yield* holder.acquire("reconnect", { ttl: "10 seconds" })
        const channel = "redlock-released:redlock:reconnect"
        const waiting = yield* fork(Effect.scoped(waiter.acquire("reconnect", { ttl: "10 seconds", retry: slowRetry })))
        yield* subscribersReach(fleet, channel, 1, "2 seconds")
        yield* fleet.servers[0].call("CLIENT", "KILL", "TYPE", "pubsub")
        yield* subscribersReach(fleet, channel, 0, "1 second")
        yield* subscribersReach(fleet, channel, 1, "3 seconds")
        yield* holder.release(held)
        yield* Fiber.join(waiting)
        // Nobody watches it now: it lingers a second, then goes.
        const after = yield* subscribersReach(fleet, channel, 0, "4 seconds")
        assert.deepStrictEqual(after, [channel, 0])
      }).pipe(Effect.scoped))

    it.effect("an interrupted waiter stops watching at once: a release wakes nobody, the channel is dropped later", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        const holder = yield* redisManager(fleet.nodes)
        const waiter = yield* redisManager(fleet.nodes)
        const held = yield* holder.acquire("gone", { ttl: "10 seconds" })
        const channel = "redlock-released:redlock:gone"
        const waiting = yield* fork(Effect.scoped(waiter.acquire("gone", { ttl: "10 seconds", retry: slowRetry })))
        yield* subscribersReach(fleet, channel, 1, "2 seconds")
        const interrupted = performance.now()
        yield* Fiber.interrupt(waiting)
        assert.isBelow(
          performance.now() - interrupted,
          1000,
          "interrupted while asleep, without waiting for its next poll"
        )
        yield* holder.release(held)
        yield* Effect.sleep("100 millis")
        // Nobody took the key: the interrupted waiter left the line and did not wake up to try.
        const values = yield* Effect.forEach(fleet.servers, (server) => server.call("GET", "redlock:gone"))
        assert.deepStrictEqual(values, [null, null, null])
        const after = yield* subscribersReach(fleet, channel, 0, "4 seconds")
        assert.deepStrictEqual(after, [channel, 0])
      }).pipe(Effect.scoped))
  })
}
