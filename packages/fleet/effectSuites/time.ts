/**
 * The engine's time in each line (internal/monotonic.ts): the live clock's
 * monotonic milliseconds, read without an effect, and the timers the engine
 * gets on the live clock and under the TestClock.
 *
 * One suite, run by both Effect lines (each package's test/time.test.ts).
 */
import {
  assert,
  describe,
  Effect,
  it,
  Layer,
  liveClockReadings,
  ManagedRuntime,
  Monotonic,
  TestClock
} from "@effect-redlock/line"

export const timeSuite = () => {
  describe("the live clock's monotonic milliseconds", () => {
    it("are the clock's own nanoseconds, read as a number: never later than the clock, at most a millisecond earlier", () => {
      for (let i = 0; i < 10_000; i++) {
        // Read between two of the clock's own readings, so that the thread being descheduled in between cannot fail it.
        const before = liveClockReadings.clockMillis()
        const ours = liveClockReadings.oursMillis()
        const after = liveClockReadings.clockMillis()
        // 0.001 ms: a double near 1.7e12 ms keeps about a quarter of a microsecond.
        assert.isAtMost(ours, after + 0.001)
        assert.isAtLeast(ours, before - 1)
      }
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
}
