/**
 * Lock lifetime on in-memory nodes with the TestClock: extension, automatic
 * extension, loss by deadline, the guard, inspection. One suite, run by
 * both Effect lines (each package's test/lifetime.test.ts).
 */
import {
  assert,
  Deferred,
  describe,
  Duration,
  Effect,
  Exit,
  Fiber,
  fork,
  isInterrupted,
  it,
  Option,
  poll,
  RedisNode,
  Redlock,
  RedlockError,
  TestClock
} from "@effect-redlock/line"
import { effectsOf, failureOf, failureOfType, lossOf, memory, tick } from "./support.js"

/** A key's ttl on one memory node, in ms. */
const ttlOnNode = (index: number, key = "redlock:r") =>
  Effect.gen(function*() {
    const nodes = yield* RedisNode.RedisNodes
    const state = yield* effectsOf(nodes[index]).inspect(key)
    return Option.map(state.ttl, Duration.toMillis)
  })

export const lifetimeSuite = () => {
  describe("extend", () => {
    it.effect("moves the deadline to start + ttl - drift and sets the ttl on every node", () =>
      Effect.gen(function*() {
        const lock = yield* Redlock.acquire("r", { ttl: "1 second" })
        assert.strictEqual(lock.validUntilMillis, 1000 - 12)
        yield* TestClock.adjust("600 millis")
        yield* Redlock.extend(lock)
        assert.strictEqual(lock.validUntilMillis, 600 + 1000 - 12)
        assert.strictEqual(lock.extensions, 1)
        for (let i = 0; i < 3; i++) assert.deepStrictEqual(yield* ttlOnNode(i), Option.some(1000))
        yield* Redlock.extend(lock, "5 seconds")
        assert.strictEqual(lock.validUntilMillis, 600 + 5000 - 52)
        assert.deepStrictEqual(yield* ttlOnNode(0), Option.some(5000))
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("two extensions at once run one after the other: the deadline is that of the one the nodes applied last", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const lock = yield* Redlock.acquire("r", { ttl: "1 second", nodeTimeout: "200 millis" })
        for (let i = 0; i < 3; i++) yield* control.setLatency(i, "50 millis")
        const long = yield* fork(Redlock.extend(lock, "20 seconds"))
        const short = yield* fork(Redlock.extend(lock, "2 seconds"))
        yield* TestClock.adjust("50 millis")
        assert.strictEqual(lock.extensions, 1, "the second was sent only once the first had finished")
        yield* TestClock.adjust("50 millis")
        yield* Fiber.join(long)
        yield* Fiber.join(short)
        assert.strictEqual(lock.extensions, 2)
        assert.strictEqual(lock.validUntilMillis, 50 + 2_000 - 22, "the deadline of the extension applied last")
      }).pipe(
        // Whatever the outcome, the release at the end of the scope must not wait on the TestClock.
        Effect.ensuring(
          Effect.flatMap(RedisNode.MemoryNodes, (control) => Effect.forEach([0, 1, 2], (i) => control.setLatency(i, 0)))
        ),
        Effect.andThen(Effect.map(ttlOnNode(0), (ttl) => assert.deepStrictEqual(ttl, Option.some(2_000))))
      ).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("after the deadline it fails with LockLost(Expired) at once, asking no node", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const lock = yield* Redlock.acquire("r", { ttl: "1 second" })
        yield* TestClock.adjust("1 second")
        const before = yield* control.operations(0)
        assert.strictEqual(lossOf(yield* Effect.exit(Redlock.extend(lock))).reason, "Expired")
        assert.strictEqual(yield* control.operations(0), before)
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("when a majority no longer holds our keys it fails with LockLost(NotHeld) at once", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const lock = yield* Redlock.acquire("r", { ttl: "10 seconds" })
        yield* control.restart(0)
        yield* control.restart(1)
        yield* control.putString(1, "redlock:r", "another holder", 10_000)
        const error = lossOf(yield* Effect.exit(Redlock.extend(lock)))
        assert.strictEqual(error.reason, "NotHeld")
        assert.deepStrictEqual(error.outcomes.slice(0, 2).map((o) => o._tag), ["Held", "Held"])
        assert.strictEqual((yield* lock.lost).reason, "NotHeld")
        const nodes = yield* RedisNode.RedisNodes
        assert.deepStrictEqual((yield* effectsOf(nodes[1]).inspect("redlock:r")).value, Option.some("another holder"))
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("too few answers: LockNotExtended, and the lock stays valid until its deadline", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const lock = yield* Redlock.acquire("r", { ttl: "1 second", nodeTimeout: "50 millis" })
        yield* control.setDown(0, true)
        yield* control.setDown(1, true)
        const fiber = yield* fork(Effect.exit(Redlock.extend(lock)))
        yield* tick(50)
        assert.instanceOf(failureOf(yield* Fiber.join(fiber)), RedlockError.LockNotExtended)
        assert.strictEqual(Duration.toMillis(yield* lock.remaining), 1000 - 12 - 50)
        yield* control.setDown(0, false)
        yield* control.setDown(1, false)
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("the number of extensions is bounded by maxExtensions", () =>
      Effect.gen(function*() {
        const lock = yield* Redlock.acquire("r", { ttl: "1 second" })
        yield* Redlock.extend(lock)
        yield* Redlock.extend(lock)
        const error = failureOfType(yield* Effect.exit(Redlock.extend(lock)), RedlockError.ExtensionLimitReached)
        assert.include(error.message, "2 times")
      }).pipe(Effect.scoped, Effect.provide(memory(3, { maxExtensions: 2 }))))
  })

  describe("automatic extension and loss", () => {
    it.effect("autoExtend keeps the lock across 10 x ttl; nobody else gets it meanwhile", () =>
      Effect.gen(function*() {
        const other = yield* Redlock.make()
        const fiber = yield* fork(
          Effect.as(Effect.sleep("10 seconds"), "done").pipe(
            Redlock.withLock("r", { ttl: "1 second", autoExtend: true })
          )
        )
        for (let i = 0; i < 19; i++) {
          yield* tick(500, 50)
          const attempt = yield* Effect.exit(
            Effect.scoped(other.acquire("r", { ttl: "1 second", retry: Redlock.noRetry }))
          )
          assert.isTrue(Exit.isFailure(attempt), `another client got the lock after ${(i + 1) * 500} ms`)
        }
        yield* tick(500, 50)
        assert.strictEqual(yield* Fiber.join(fiber), "done")
        const control = yield* RedisNode.MemoryNodes
        assert.deepStrictEqual(yield* control.keys(0), [])
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("a majority down during the hold: loss is decided by the deadline and the body is interrupted", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        let interrupted = false
        const fiber = yield* fork(Effect.exit(
          Effect.never.pipe(
            Effect.onInterrupt(() => Effect.sync(() => void (interrupted = true))),
            Redlock.withLock("r", { ttl: "1 second", nodeTimeout: "50 millis", autoExtend: true })
          )
        ))
        yield* tick(300)
        yield* control.setDown(0, true)
        yield* control.setDown(1, true)
        yield* tick(687) // deadline: 1000 - 12 = 988
        assert.isFalse(interrupted)
        yield* tick(1)
        assert.isTrue(interrupted, "interrupted at the deadline")
        yield* tick(50) // the release's own timeout on the down nodes
        const exit = yield* Fiber.join(fiber)
        assert.strictEqual(lossOf(exit).reason, "Expired")
        yield* control.setDown(0, false)
        yield* control.setDown(1, false)
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("without autoExtend, withLock cuts the body off at the end of the validity", () =>
      Effect.gen(function*() {
        const fiber = yield* fork(Effect.exit(
          Effect.sleep("5 seconds").pipe(Redlock.withLock("r", { ttl: "1 second" }))
        ))
        yield* tick(987)
        assert.isUndefined(yield* poll(fiber))
        yield* tick(1)
        assert.strictEqual(lossOf(yield* Fiber.join(fiber)).reason, "Expired")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("maxHold stops automatic extension; the lock then runs out", () =>
      Effect.gen(function*() {
        const fiber = yield* fork(Effect.exit(
          Effect.never.pipe(Redlock.withLock("r", { ttl: "1 second", autoExtend: { maxHold: "3 seconds" } }))
        ))
        yield* tick(5000, 10)
        const exit = yield* Fiber.join(fiber)
        assert.strictEqual(lossOf(exit).reason, "Expired")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("maxExtensions also ends automatic extension", () =>
      Effect.gen(function*() {
        const lock = yield* Redlock.acquire("r", { ttl: "1 second", autoExtend: true })
        yield* tick(10_000, 10)
        assert.strictEqual(lock.extensions, 3)
        assert.strictEqual((yield* lock.lost).reason, "Expired")
      }).pipe(Effect.scoped, Effect.provide(memory(3, { maxExtensions: 3 }))))

    it.live("a timer that fires past the deadline (a paused process) counts as a loss, without extending", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const lock = yield* Redlock.acquire("r", { ttl: "200 millis", autoExtend: true })
        const before = yield* control.operations(0)
        // A real stall: the event loop is blocked past the deadline, as in a long GC pause.
        const until = performance.now() + 400
        while (performance.now() < until) {
          // busy
        }
        assert.strictEqual((yield* lock.lost).reason, "Expired")
        assert.strictEqual(yield* control.operations(0), before, "no extension was attempted after the stall")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("lock.lost completes at the deadline, or as Released after release", () =>
      Effect.gen(function*() {
        const lock = yield* Redlock.acquire("r", { ttl: "1 second" })
        const lost = yield* fork(lock.lost)
        yield* tick(987)
        assert.isUndefined(yield* poll(lost))
        yield* tick(1)
        assert.strictEqual((yield* Fiber.join(lost)).reason, "Expired")
        const next = yield* Redlock.acquire("s", { ttl: "1 second" })
        yield* Redlock.release(next)
        assert.strictEqual((yield* next.lost).reason, "Released")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))
  })

  describe("guard", () => {
    it.effect("runs the effect only while enough validity is left", () =>
      Effect.gen(function*() {
        const lock = yield* Redlock.acquire("r", { ttl: "1 second" })
        let runs = 0
        const sideEffect = Effect.sync(() => void runs++)
        yield* lock.guard("500 millis")(sideEffect)
        yield* TestClock.adjust("600 millis")
        const refused = failureOfType(
          yield* Effect.exit(lock.guard("500 millis")(sideEffect)),
          RedlockError.ValidityTooShort
        )
        assert.strictEqual(refused.remainingMillis, 388)
        yield* TestClock.adjust("400 millis")
        assert.instanceOf(failureOf(yield* Effect.exit(lock.guard("1 millis")(sideEffect))), RedlockError.LockLost)
        assert.strictEqual(runs, 1)
      }).pipe(Effect.scoped, Effect.provide(memory(3))))
  })

  describe("release and inspect", () => {
    it.effect("releasing an expired lock that another client took: NotHeld at once, the other's keys stay", () =>
      Effect.gen(function*() {
        const first = yield* Redlock.make()
        const second = yield* Redlock.make()
        const stale = yield* first.acquire("r", { ttl: "100 millis" })
        yield* TestClock.adjust("100 millis")
        const current = yield* second.acquire("r", { ttl: "10 seconds" })
        const result = yield* first.release(stale)
        assert.strictEqual(result.status, "NotHeld")
        assert.strictEqual((yield* first.release(stale)).status, "AlreadyReleased")
        const view = yield* second.inspect("r")
        assert.deepStrictEqual(view.holder, Option.some(current.value))
        for (const node of view.nodes) {
          assert.isTrue(node._tag === "Read" && Option.getOrUndefined(node.state.value) === current.value)
        }
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("inspect shows each node's holder and ttl, and the majority's holder", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const empty = yield* Redlock.inspect("r")
        assert.isTrue(Option.isNone(empty.holder))
        const lock = yield* Redlock.acquire("r", { ttl: "1 second" })
        yield* TestClock.adjust("100 millis")
        yield* control.restart(4)
        yield* control.putForeign(3, "redlock:r")
        const view = yield* Redlock.inspect("r")
        assert.deepStrictEqual(view.holder, Option.some(lock.value))
        assert.deepStrictEqual(Option.map(view.ttl, Duration.toMillis), Option.some(900))
        assert.deepStrictEqual(view.nodes.map((n) => n._tag), ["Read", "Read", "Read", "Unreadable", "Read"])
        const last = view.nodes[4]
        assert.isTrue(last._tag === "Read" && Option.isNone(last.state.value))
        const wrong = view.nodes[3]
        assert.isTrue(wrong._tag === "Unreadable" && wrong.outcome._tag === "Failed")
        yield* control.restart(3)
      }).pipe(Effect.scoped, Effect.provide(memory(5))))
  })

  /**
   * `withLock` (and `withPermit`, `withRead`, `withWrite`) run the body on the
   * caller's own fiber where it has no children: a loss interrupts that fiber
   * and is taken back once the body ended. What the caller sees must be what a
   * body on a child fiber gave: the `LockLost` failure and a fiber that goes
   * on, nothing forked by the body left running, no child of the caller's
   * interrupted, and any other interruption kept.
   */
  describe("the body of withLock on the caller's fiber", () => {
    it.effect("after a loss the caller goes on: its next interruptible step is not interrupted", () =>
      Effect.gen(function*() {
        const fiber = yield* fork(Effect.gen(function*() {
          const held = yield* Effect.exit(Effect.sleep("5 seconds").pipe(Redlock.withLock("r", { ttl: "1 second" })))
          // Interruptible: a fiber still marked as interrupted stops here.
          yield* Effect.sleep("10 millis")
          return held
        }))
        yield* tick(1100)
        const held = yield* Fiber.join(fiber)
        assert.strictEqual(lossOf(held).reason, "Expired")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("fibers the body forked are interrupted before the release, whether it ended or lost the lock", () =>
      Effect.gen(function*() {
        const stopped: Array<string> = []
        // Forked, and running (its interruption is told) before the body goes on.
        const background = (name: string) =>
          Effect.flatMap(Deferred.make<void>(), (running) =>
            Effect.tap(
              fork(Effect.onInterrupt(Effect.andThen(Deferred.succeed(running, undefined), Effect.never), () =>
                Effect.sync(() => stopped.push(name)))),
              () =>
                Deferred.await(running)
            ))
        // What was stopped when withLock returned, read before the caller ends (its end interrupts its children).
        const stoppedWhenReturned = <A, E>(self: Effect.Effect<A, E, Redlock.Redlock>) =>
          fork(Effect.andThen(Effect.exit(self), Effect.sync(() => [...stopped])))
        const ended = yield* stoppedWhenReturned(
          Effect.asVoid(background("after its end")).pipe(Redlock.withLock("a", { ttl: "1 second" }))
        )
        yield* tick(10)
        assert.deepStrictEqual(yield* Fiber.join(ended), ["after its end"])
        const lost = yield* stoppedWhenReturned(
          Effect.andThen(background("on loss"), Effect.never).pipe(Redlock.withLock("b", { ttl: "1 second" }))
        )
        yield* tick(1100)
        assert.deepStrictEqual(yield* Fiber.join(lost), ["after its end", "on loss"])
        // Released: another holder gets both at once.
        yield* Redlock.acquire("a", { ttl: "1 second", retry: Redlock.noRetry })
        yield* Redlock.acquire("b", { ttl: "1 second", retry: Redlock.noRetry })
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("a loss does not interrupt the caller's own children, forked before the hold", () =>
      Effect.gen(function*() {
        const caller = yield* fork(Effect.gen(function*() {
          const before = yield* fork(Effect.never)
          const held = yield* Effect.exit(Effect.never.pipe(Redlock.withLock("r", { ttl: "1 second" })))
          // Polled before the caller ends (its end interrupts its children).
          return { held, before: yield* poll(before) }
        }))
        yield* tick(1100)
        const { before, held } = yield* Fiber.join(caller)
        assert.strictEqual(lossOf(held).reason, "Expired")
        assert.isUndefined(before)
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("another's interruption during the body still interrupts the caller, and the lock is released", () =>
      Effect.gen(function*() {
        const caller = yield* fork(Effect.never.pipe(Redlock.withLock("r", { ttl: "10 seconds" })))
        yield* tick(10)
        yield* Fiber.interrupt(caller)
        assert.isTrue(isInterrupted(yield* Fiber.await(caller)))
        yield* Redlock.acquire("r", { ttl: "1 second", retry: Redlock.noRetry })
      }).pipe(Effect.scoped, Effect.provide(memory(3))))
  })
}
