/**
 * Reading the live clock, and the fan-outs' shared timeouts (real time).
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Layer, ManagedRuntime, TestClock } from "effect"
import * as Monotonic from "../src/internal/monotonic.js"
import * as Timeouts from "@effect-redlock/core/engine/timeouts.js"

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

describe("the live clock's monotonic milliseconds", () => {
  it("are the clock's own nanoseconds, read as a number: never later than the clock, at most a millisecond earlier", () => {
    const clock = Clock.make()
    const clocks = () => Number(clock.unsafeCurrentTimeNanos()) / 1e6
    for (let i = 0; i < 10_000; i++) {
      // Read between two of the clock's own readings, so that the thread being descheduled in between cannot fail it.
      const before = clocks()
      const ours = Monotonic.unsafeMonotonicMillis(clock)
      const after = clocks()
      // 0.001 ms: a double near 1.7e12 ms keeps about a quarter of a microsecond.
      assert.isAtMost(ours, after + 0.001)
      assert.isAtLeast(ours, before - 1)
    }
  })
})

describe("shared timeouts", () => {
  it("each comes once its own duration has passed, not much later, in order; a cancelled one never comes", async () => {
    const came: Array<[string, number]> = []
    const started = new Map<string, number>()
    const startOne = (name: string) => {
      started.set(name, performance.now())
      return Timeouts.start(400, () => came.push([name, performance.now()]))
    }
    startOne("a")
    const cancelled = startOne("b")
    await sleep(100)
    // Due 100 ms after the timer set for "a": the timer is set again for it, for what is left (a timer set
    // again for a whole duration would call it 300 ms late).
    startOne("c")
    Timeouts.cancel(cancelled)
    Timeouts.cancel(cancelled)
    await sleep(700)
    assert.deepStrictEqual(came.map(([name]) => name), ["a", "c"])
    for (const [name, at] of came) {
      // Node's timers may fire up to a millisecond before performance.now() says the time is up.
      assert.isAtLeast(at - started.get(name)!, 399, `${name} came too early`)
      assert.isBelow(at - started.get(name)!, 550, `${name} came much too late`)
    }
  })

  it("timeouts of other durations have their own timers", async () => {
    const came: Array<string> = []
    Timeouts.start(80, () => came.push("long"))
    Timeouts.start(20, () => came.push("short"))
    await sleep(50)
    assert.deepStrictEqual(came, ["short"])
    await sleep(60)
    assert.deepStrictEqual(came, ["short", "long"])
  })

  it("one that comes may cancel and start others of its duration", async () => {
    const came: Array<string> = []
    let second: Timeouts.Timeout | undefined
    Timeouts.start(20, () => {
      came.push("first")
      Timeouts.cancel(second!)
      Timeouts.start(20, () => came.push("third"))
    })
    await sleep(5)
    second = Timeouts.start(20, () => came.push("second"))
    await sleep(80)
    assert.deepStrictEqual(came, ["first", "third"])
  })
})

describe("the engine's time", () => {
  it("on the live clock, real timers whatever the runtime (a ManagedRuntime has a scheduler of its own)", async () => {
    const runtime = ManagedRuntime.make(Layer.empty)
    try {
      assert.strictEqual(await runtime.runPromise(Monotonic.currentTime), Monotonic.liveTime)
      assert.strictEqual(await Effect.runPromise(Monotonic.currentTime), Monotonic.liveTime)
    } finally {
      await runtime.dispose()
    }
  })

  it.effect("under the TestClock, timers that the test's clock moves", () =>
    Effect.gen(function*() {
      const time = yield* Monotonic.currentTime
      assert.notStrictEqual(time, Monotonic.liveTime)
      const fired: Array<number> = []
      time.schedule(100, () => fired.push(time.now()))
      const cancel = time.schedule(50, () => fired.push(-1))
      cancel()
      yield* TestClock.adjust("99 millis")
      assert.deepStrictEqual(fired, [])
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(fired, [100])
    }))
})
