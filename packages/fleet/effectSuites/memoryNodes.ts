/**
 * The lock manager's life on in-memory nodes with the TestClock, as a user
 * meets it first: acquire and release, refusal, waking, faults, loss,
 * extension, withLock, autoExtend and bad input; and nodes written with
 * effects, on the fiber's clock.
 *
 * One suite, run by both Effect lines (each package's test/memoryNodes.test.ts).
 */
import {
  assert,
  atMost,
  Deferred,
  describe,
  Duration,
  type DurationInput,
  Effect,
  Exit,
  failWith,
  Fiber,
  fork,
  it,
  Layer,
  Option,
  poll,
  RedisNode,
  Redlock,
  RedlockError,
  Schedule,
  TestClock
} from "@effect-redlock/line"
import { effectsOf, memory } from "./support.js"

const liveKeys = (index: number) => Effect.flatMap(RedisNode.MemoryNodes, (control) => control.keys(index))

export const memoryNodesSuite = () => {
  describe("Redlock on memory nodes (TestClock)", () => {
    it.effect("acquire sets the key on every node; the scope's end releases it everywhere", () =>
      Effect.gen(function*() {
        yield* Effect.scoped(Effect.gen(function*() {
          const lock = yield* Redlock.acquire("job", { ttl: "10 seconds" })
          assert.deepStrictEqual(lock.resources, ["job"])
          assert.strictEqual(lock.attempts, 1)
          assert.isAbove(Duration.toMillis(lock.validity), 9_000)
          for (const index of [0, 1, 2, 3, 4]) assert.deepStrictEqual(yield* liveKeys(index), ["redlock:job"])
          const inspected = yield* Redlock.inspect("job")
          assert.deepStrictEqual(inspected.holder, Option.some(lock.value))
        }))
        for (const index of [0, 1, 2, 3, 4]) assert.deepStrictEqual(yield* liveKeys(index), [])
      }).pipe(Effect.provide(memory(5))))

    it.effect("a held lock refuses a second acquirer with LockNotAcquired (Held), naming each node's answer", () =>
      Effect.gen(function*() {
        yield* Redlock.acquire("job", { ttl: "10 seconds" })
        const refused = yield* Effect.flip(
          Effect.scoped(Redlock.acquire("job", { ttl: "10 seconds", retry: Redlock.noRetry }))
        )
        assert.strictEqual(refused._tag, "LockNotAcquired")
        if (refused._tag !== "LockNotAcquired") return
        assert.strictEqual(refused.reason, "Held")
        assert.strictEqual(refused.attempts, 1)
        assert.include(refused.message, "another client holds it")
        assert.strictEqual(refused.outcomes.filter((outcome) => outcome._tag === "Held").length, 3)
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("a waiter is woken by the release and takes the lock at once, long before its next retry", () =>
      Effect.gen(function*() {
        const holder = yield* Redlock.Redlock
        const held = yield* holder.acquire("job", { ttl: "10 seconds" })
        const waiting = yield* fork(Effect.scoped(Effect.gen(function*() {
          const lock = yield* Redlock.acquire("job", {
            ttl: "10 seconds",
            retry: Schedule.spaced("5 seconds").pipe(atMost(3))
          })
          return lock.attempts
        })))
        yield* TestClock.adjust("100 millis")
        assert.isUndefined(yield* poll(waiting), "still waiting while held")
        yield* holder.release(held)
        yield* TestClock.adjust("10 millis")
        const exit = yield* poll(waiting)
        assert.isDefined(exit)
        assert.isTrue(exit !== undefined && Exit.isSuccess(exit), "granted after the release, not at the 5 s retry")
      }).pipe(Effect.scoped, Effect.provide(memory(5))))

    it.effect("a minority of nodes down: still granted; a majority down: NoQuorum", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* control.setDown(0, true)
        yield* control.setDown(1, true)
        const lock = yield* Redlock.acquire("job", { ttl: "1 second", retry: Redlock.noRetry })
        assert.deepStrictEqual(lock.outcomes.map((outcome) => outcome._tag).sort(), [
          "NotAwaited",
          "NotAwaited",
          "Ok",
          "Ok",
          "Ok"
        ])
        yield* control.setDown(2, true)
        const refusing = yield* fork(
          Effect.flip(Effect.scoped(Redlock.acquire("other", { ttl: "1 second", retry: Redlock.noRetry })))
        )
        yield* TestClock.adjust("1 second")
        const refused = yield* Fiber.join(refusing)
        assert.strictEqual(refused._tag === "LockNotAcquired" ? refused.reason : refused._tag, "NoQuorum")
        // Healed before the scope's release, which would otherwise wait for node timeouts nobody moves the clock to.
        for (const index of [0, 1, 2]) yield* control.heal(index)
      }).pipe(Effect.scoped, Effect.provide(memory(5))))

    it.effect("interrupting a waiter leaves no key and no place in line on any node", () =>
      Effect.gen(function*() {
        const holder = yield* Redlock.Redlock
        const held = yield* holder.acquire("job", { ttl: "10 seconds" })
        const waiting = yield* fork(
          Effect.scoped(Redlock.acquire("job", { ttl: "10 seconds", retry: Schedule.spaced("1 second") }))
        )
        yield* TestClock.adjust("2500 millis")
        yield* Fiber.interrupt(waiting)
        yield* holder.release(held)
        yield* TestClock.adjust("1 second")
        for (const index of [0, 1, 2]) assert.deepStrictEqual(yield* liveKeys(index), [])
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("late yeses of a waiter's attempts on a slow node stay only while it waits: none is left once it is granted and releases, or gives up", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const holder = yield* Redlock.Redlock
        const held = yield* holder.acquire("job", { ttl: "10 seconds" })
        // Node 4 answers after 100 ms, the per-node timeout is 20 ms: each attempt's answer from it comes late,
        // after the next attempt was sent (30 ms apart), so no late yes is undone on arrival.
        yield* control.setLatency(4, "100 millis")
        yield* holder.release(held)
        const held2 = yield* holder.acquire("job", { ttl: "10 seconds", nodeTimeout: "20 millis" })
        const retry = Redlock.retry({ delay: "30 millis", times: 40, jitter: { min: 1, max: 1 } })
        const waiter = yield* fork(Effect.scoped(
          Effect.andThen(
            Redlock.acquire("job", { ttl: "10 seconds", nodeTimeout: "20 millis", retry }),
            Effect.sleep("50 millis")
          )
        ))
        yield* TestClock.adjust("400 millis")
        assert.isUndefined(yield* poll(waiter), "the holder holds a majority")
        yield* holder.release(held2)
        yield* TestClock.adjust("1 second")
        assert.isTrue(Exit.isSuccess(yield* Fiber.await(waiter)), "granted after the release, then released")
        for (const index of [0, 1, 2, 3, 4]) assert.deepStrictEqual(yield* liveKeys(index), [], `node ${index}`)
        // A waiter that gives up (its schedule ends) leaves no key either.
        const held3 = yield* holder.acquire("job", { ttl: "10 seconds", nodeTimeout: "20 millis" })
        const givesUp = yield* fork(Effect.scoped(
          Redlock.acquire("job", {
            ttl: "10 seconds",
            nodeTimeout: "20 millis",
            retry: Redlock.retry({ delay: "30 millis", times: 10, jitter: { min: 1, max: 1 } })
          })
        ))
        yield* TestClock.adjust("1 second")
        assert.isTrue(Exit.isFailure(yield* Fiber.await(givesUp)))
        yield* holder.release(held3)
        yield* TestClock.adjust("1 second")
        for (const index of [0, 1, 2, 3, 4]) assert.deepStrictEqual(yield* liveKeys(index), [], `node ${index}`)
      }).pipe(Effect.scoped, Effect.provide(memory(5))))

    it.effect("the lock is lost at its deadline: `lost` says Expired, release finds it NotHeld", () =>
      Effect.gen(function*() {
        const lock = yield* Redlock.acquire("job", { ttl: "1 second" })
        const lost = yield* fork(lock.lost)
        yield* TestClock.adjust("2 seconds")
        assert.strictEqual((yield* Fiber.join(lost)).reason, "Expired")
        assert.deepStrictEqual(yield* lock.remaining, Duration.zero)
        assert.strictEqual((yield* Redlock.release(lock)).status, "NotHeld")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("extend moves the validity; extending a released lock fails with LockLost (Released)", () =>
      Effect.gen(function*() {
        const lock = yield* Redlock.acquire("job", { ttl: "1 second" })
        yield* TestClock.adjust("800 millis")
        yield* Redlock.extend(lock, "5 seconds")
        assert.strictEqual(lock.extensions, 1)
        assert.isAbove(Duration.toMillis(yield* lock.remaining), 4_000)
        yield* TestClock.adjust("3 seconds")
        assert.deepStrictEqual((yield* Redlock.inspect("job")).holder, Option.some(lock.value))
        assert.strictEqual((yield* Redlock.release(lock)).status, "Released")
        const failed = yield* Effect.flip(Redlock.extend(lock, "5 seconds"))
        assert.strictEqual(failed._tag === "LockLost" ? failed.reason : failed._tag, "Released")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("invalid options fail with InvalidOptions naming the option, and nothing is sent", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        const noTtl = yield* Effect.flip(Redlock.acquire("job", {} as Redlock.AcquireOptions))
        assert.strictEqual(noTtl._tag === "InvalidOptions" ? noTtl.option : noTtl._tag, "ttl")
        const empty = yield* Effect.flip(Redlock.acquire([] as unknown as string, { ttl: "1 second" }))
        assert.strictEqual(empty._tag === "InvalidOptions" ? empty.option : empty._tag, "resources")
        const slow = yield* Effect.flip(Redlock.acquire("job", { ttl: "1 second", nodeTimeout: "2 seconds" }))
        assert.strictEqual(slow._tag === "InvalidOptions" ? slow.option : slow._tag, "nodeTimeout")
        // A retry that is no Schedule (a number, RetryOptions not passed through Redlock.retry) is refused
        // before anything is sent, as the manager's own retry is.
        for (
          const [retry, detail] of [[3, /got 3$/], [
            { delay: "10 millis", times: 3 },
            /through retry\(\.\.\.\)/
          ]] as const
        ) {
          const options = { ttl: "1 second", retry } as unknown as Redlock.AcquireOptions
          const notASchedule = yield* Effect.flip(Redlock.acquire("job", options))
          assert.strictEqual(notASchedule._tag === "InvalidOptions" ? notASchedule.option : notASchedule._tag, "retry")
          assert.match(notASchedule._tag === "InvalidOptions" ? notASchedule.detail : "", detail)
        }
        // node-redlock's settings, as a migrating caller passes them, per acquisition and to the manager: said where they go.
        const migrated = yield* Effect.flip(
          Redlock.acquire("job", { ttl: "1 second", retryCount: 0 } as unknown as Redlock.AcquireOptions)
        )
        assert.strictEqual(migrated._tag === "InvalidOptions" ? migrated.option : migrated._tag, "retryCount")
        assert.match(
          migrated._tag === "InvalidOptions" ? migrated.detail : "",
          /^is node-redlock's setting; here it is retry: retry\(\{ delay, times \}\)/
        )
        const manager = yield* Effect.flip(
          Effect.scoped(Redlock.make({ automaticExtensionThreshold: 500 } as unknown as Redlock.Options))
        )
        assert.strictEqual(
          manager._tag === "InvalidOptions" ? manager.option : manager._tag,
          "automaticExtensionThreshold"
        )
        // inspect reads one resource: a list or a number is refused, naming what it got.
        for (const [input, detail] of [[5, /got 5$/], [["a", "b"], /got \[a, b\]$/], ["", /empty string/]] as const) {
          const notOne = yield* Effect.flip(Redlock.inspect(input as unknown as string))
          assert.strictEqual(notOne._tag === "InvalidOptions" ? notOne.option : notOne._tag, "resource")
          assert.match(notOne._tag === "InvalidOptions" ? notOne.detail : "", detail)
        }
        assert.strictEqual(yield* control.operations(0), 0)
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("a key of another type fails that node's vote with WrongType and is left untouched", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* control.putForeign(0, "redlock:job")
        const lock = yield* Redlock.acquire("job", { ttl: "1 second", retry: Redlock.noRetry })
        const failed = lock.outcomes.find((outcome) => outcome._tag === "Failed")
        assert.strictEqual(failed?._tag === "Failed" ? failed.error.reason : undefined, "WrongType")
      }).pipe(Effect.scoped, Effect.provide(memory(3))))

    it.effect("withLock runs its body under the lock, and interrupts it with LockLost when the validity runs out", () =>
      Effect.gen(function*() {
        const inside = yield* Redlock.withLock("job", { ttl: "10 seconds" })(Redlock.inspect("job"))
        assert.isTrue(Option.isSome(inside.holder), "held while the body runs")
        assert.isTrue(Option.isNone((yield* Redlock.inspect("job")).holder), "released when it ends")
        let finished = false
        const outliving = yield* fork(Effect.flip(
          Effect.sleep("5 seconds").pipe(
            Effect.andThen(Effect.sync(() => finished = true)),
            Redlock.withLock("job", { ttl: "1 second" })
          )
        ))
        yield* TestClock.adjust("6 seconds")
        const lost = yield* Fiber.join(outliving)
        assert.strictEqual(lost._tag === "LockLost" ? lost.reason : lost._tag, "Expired")
        assert.isFalse(finished, "the body was interrupted at the deadline")
      }).pipe(Effect.provide(memory(3))))

    it.effect("fibers the body of withLock forked are interrupted before withLock returns, after its end or a loss", () =>
      Effect.gen(function*() {
        const stopped: Array<string> = []
        // Forked, and running (its interruption is told) before the body goes on.
        const background = (name: string) =>
          Effect.flatMap(Deferred.make<void>(), (running) =>
            Effect.andThen(
              fork(Effect.onInterrupt(
                Effect.andThen(Deferred.succeed(running, undefined), Effect.never),
                () => Effect.sync(() => stopped.push(name))
              )),
              Deferred.await(running)
            ))
        // What was stopped when withLock returned, read before the caller ends (its end interrupts its children).
        const stoppedWhenReturned = <A, E>(self: Effect.Effect<A, E, Redlock.Redlock>) =>
          fork(Effect.andThen(Effect.exit(self), Effect.sync(() => [...stopped])))
        const ended = yield* stoppedWhenReturned(
          Effect.asVoid(background("after its end")).pipe(Redlock.withLock("a", { ttl: "1 second" }))
        )
        yield* TestClock.adjust("10 millis")
        assert.deepStrictEqual(yield* Fiber.join(ended), ["after its end"])
        const lost = yield* stoppedWhenReturned(
          Effect.andThen(background("on loss"), Effect.never).pipe(Redlock.withLock("b", { ttl: "1 second" }))
        )
        // The background fiber starts first, then the validity runs out.
        yield* TestClock.adjust("10 millis")
        yield* TestClock.adjust("2 seconds")
        assert.deepStrictEqual(yield* Fiber.join(lost), ["after its end", "on loss"])
      }).pipe(Effect.provide(memory(3))))

    it.effect("autoExtend keeps the lock while the scope is open, stops at maxHold, and stops when the scope closes", () =>
      Effect.gen(function*() {
        const kept = yield* fork(Effect.scoped(Effect.gen(function*() {
          const lock = yield* Redlock.acquire("kept", { ttl: "1 second", autoExtend: true })
          yield* Effect.sleep("5 seconds")
          return [lock.extensions, Option.isSome((yield* Redlock.inspect("kept")).holder)] as const
        })))
        const bounded = yield* fork(Effect.scoped(Effect.gen(function*() {
          const lock = yield* Redlock.acquire("bounded", { ttl: "1 second", autoExtend: { maxHold: "2 seconds" } })
          return (yield* lock.lost).reason
        })))
        yield* TestClock.adjust("6 seconds")
        const [extensions, held] = yield* Fiber.join(kept)
        assert.isAtLeast(extensions, 8, "extended every half ttl")
        assert.isTrue(held, "still held after 5 s with a 1 s ttl")
        assert.strictEqual(yield* Fiber.join(bounded), "Expired")
        yield* TestClock.adjust("2 seconds")
        assert.deepStrictEqual(yield* liveKeys(0), [], "released, and no longer extended, once its scope closed")
      }).pipe(Effect.provide(memory(3))))

    it.effect("maxExtensions bounds extensions with ExtensionLimitReached", () =>
      Effect.gen(function*() {
        const lock = yield* Redlock.acquire("job", { ttl: "1 second" })
        yield* Redlock.extend(lock)
        const refused = yield* Effect.flip(Redlock.extend(lock, "2 seconds"))
        assert.strictEqual(refused._tag, "ExtensionLimitReached")
        assert.include(refused.message, "already extended 1 times")
      }).pipe(
        Effect.scoped,
        Effect.provide(Redlock.layer({ maxExtensions: 1 }).pipe(Layer.provideMerge(RedisNode.layerMemory(3))))
      ))

    it.effect("an acquisition interrupted while its probe is in flight sends nothing after leaving: no place in line is left", () =>
      Effect.gen(function*() {
        const control = yield* RedisNode.MemoryNodes
        yield* Redlock.acquire("job", { ttl: "10 seconds" })
        for (const index of [0, 1, 2]) yield* control.setLatency(index, "10 millis")
        const waiting = yield* fork(
          Effect.scoped(Redlock.acquire("job", { ttl: "10 seconds", retry: Schedule.spaced("1 second") }))
        )
        yield* TestClock.adjust("5 millis") // its probe (a plain SET NX) is on the wire, answered at 10 ms
        const interrupting = yield* fork(Fiber.interrupt(waiting))
        yield* TestClock.adjust("40 millis")
        yield* Fiber.join(interrupting)
        const keys = yield* Effect.forEach([0, 1, 2], liveKeys)
        // Healed before asserting: the scope's release then needs no clock move.
        for (const index of [0, 1, 2]) yield* control.heal(index)
        // Before: the refused probe's answer sent the line-keeping script after the leaving, which joined the line.
        assert.deepStrictEqual(keys, [["redlock:job"], ["redlock:job"], ["redlock:job"]])
      }).pipe(Effect.scoped, Effect.provide(memory(3))))
  })

  /** A memory node written with effects, its acquisitions `latency` late on the fiber's clock. */
  const slowEffectNode = (node: RedisNode.RedisNode, latency: DurationInput): RedisNode.EffectNode => {
    const effects = effectsOf(node)
    return {
      ...effects,
      acquire: (keys, value, ttlMillis) =>
        Effect.andThen(Effect.sleep(latency), effects.acquire(keys, value, ttlMillis)),
      acquireInTurn: (keys, value, ttlMillis, turn) =>
        Effect.andThen(Effect.sleep(latency), effects.acquireInTurn(keys, value, ttlMillis, turn))
    }
  }

  describe("nodes written with effects (RedisNode.fromEffects)", () => {
    it.effect("run on the fiber's clock: the TestClock moves their sleeps; their failures are their RedisNodeErrors", () =>
      Effect.gen(function*() {
        const memoryNodes = yield* RedisNode.RedisNodes
        // Node 0 answers first, so that its failure is awaited whichever major orders answers of one instant.
        const nodes = yield* Effect.forEach(
          memoryNodes,
          (node, index) => RedisNode.fromEffects(slowEffectNode(node, index === 0 ? "50 millis" : "100 millis"))
        )
        const manager = yield* Effect.provideService(Redlock.make(), RedisNode.RedisNodes, nodes)
        const acquiring = yield* fork(
          Effect.scoped(manager.acquire("job", { ttl: "10 seconds", nodeTimeout: "250 millis" }))
        )
        yield* TestClock.adjust("99 millis")
        assert.isUndefined(yield* poll(acquiring), "still asleep on the node")
        yield* TestClock.adjust("1 millis")
        const lock = yield* Fiber.join(acquiring)
        assert.strictEqual(lock.attempts, 1)
        const control = yield* RedisNode.MemoryNodes
        yield* control.setFailure(0, failWith("ReadOnly"))
        const failed = yield* fork(
          Effect.scoped(manager.acquire("other", { ttl: "10 seconds", nodeTimeout: "250 millis" }))
        )
        yield* TestClock.adjust("100 millis")
        const other = yield* Fiber.join(failed)
        const outcome = other.outcomes[0]!
        assert.strictEqual(outcome._tag, "Failed")
        if (outcome._tag === "Failed") {
          assert.instanceOf(outcome.error, RedlockError.RedisNodeError)
          assert.strictEqual(outcome.error.reason, "ReadOnly")
        }
      }).pipe(Effect.provide(memory(3))))
  })
}
