/**
 * Effect's `Clock` as the engine's time (engine/time.ts): the shell hands
 * each operation `timeOf` the fiber's clock and scheduler. On the live clock,
 * timers are Node timers (per-node timeouts share one per duration,
 * engine/liveTime.ts) and deferred calls microtasks, whatever the scheduler; on any other clock (the `TestClock`, the
 * simulation's), a timer is a fiber that sleeps on that clock and then calls
 * back, on the fiber's scheduler, so the test's clock moves the engine's
 * timers and the test's scheduler runs them.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as Scheduler from "effect/Scheduler"
import type { Time } from "@effect-redlock/core/engine/time.js"
import * as LiveTime from "@effect-redlock/core/engine/liveTime.js"

/**
 * Milliseconds on the monotonic timeline of `Clock.currentTimeNanos` (the
 * live clock uses `process.hrtime`, which no wall-clock change moves).
 *
 * The TestClock keeps milliseconds and cannot turn a fractional value (left by
 * a jittered sleep) into nanoseconds; it is read in milliseconds then, which
 * is the same timeline for it.
 */
export const unsafeMonotonicMillis = (clock: Clock.Clock): number => {
  if (clock.unsafeCurrentTimeNanos === liveNanos) return performance.now() + liveOffsetMillis
  try {
    return Number(clock.unsafeCurrentTimeNanos()) / 1e6
  } catch {
    return clock.unsafeCurrentTimeMillis()
  }
}

// Effect's live clock reads process.hrtime.bigint() (plus a constant): a
// BigInt on every read, which cost 8% of a lock+unlock's library CPU at
// N = 1. performance.now() reads the same monotonic source as a number, so on
// that clock it is read instead, moved onto the clock's timeline. The offset
// is taken with the clock read first: our readings come out no later than the
// clock's own (by the microsecond between the two reads), so a deadline
// computed from them errs early, never late.
const liveNanos = Clock.make().unsafeCurrentTimeNanos
const liveOffsetMillis = Number(Clock.make().unsafeCurrentTimeNanos()) / 1e6 - performance.now()

export const monotonicMillis: Effect.Effect<number> = Effect.clockWith((clock) =>
  Effect.sync(() => unsafeMonotonicMillis(clock))
)

/** The live clock's time: one object for every caller. */
export const liveTime: Time = LiveTime.make(liveOffsetMillis)

/** Whether `clock` is Effect's live clock (a test's clock, or a user's own, is not). */
export const isLive = (clock: Clock.Clock): boolean => clock.unsafeCurrentTimeNanos === liveNanos

/** The engine's time on `clock`, its fibers on `scheduler` (made once per clock and scheduler). */
export const timeOf = (clock: Clock.Clock, scheduler: Scheduler.Scheduler = Scheduler.defaultScheduler): Time => {
  // Any scheduler on the live clock (a ManagedRuntime has its own): real timers serve it.
  if (isLive(clock)) return liveTime
  let byScheduler = times.get(clock)
  if (byScheduler === undefined) times.set(clock, byScheduler = new WeakMap())
  let time = byScheduler.get(scheduler)
  if (time === undefined) {
    const schedule = (millis: number, fn: () => void) => {
      const fiber = Effect.runFork(Effect.zipRight(clock.sleep(Duration.millis(millis)), Effect.sync(fn)), {
        scheduler
      })
      return () => fiber.unsafeInterruptAsFork(FiberId.none)
    }
    time = {
      now: () => unsafeMonotonicMillis(clock),
      wallNow: () => clock.unsafeCurrentTimeMillis(),
      schedule,
      timeout: schedule,
      defer: (fn) => scheduler.scheduleTask(fn, 0)
    }
    byScheduler.set(scheduler, time)
  }
  return time
}

const times = new WeakMap<Clock.Clock, WeakMap<Scheduler.Scheduler, Time>>()

/** The engine's time of a fiber: its clock and its scheduler. */
export const timeOfFiber = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Time =>
  timeOf(Context.get(fiber.currentDefaultServices, Clock.Clock), fiber.getFiberRef(FiberRef.currentScheduler))

/** The engine's time of the current fiber. */
export const currentTime: Effect.Effect<Time> = Effect.withFiberRuntime((fiber) => Effect.succeed(timeOfFiber(fiber)))
