/**
 * Deterministic simulation: an Effect program run on a virtual clock and a
 * scheduler that this driver owns, with no real timer at all. The driver runs
 * every fiber that can run, and only when all of them wait does it move the
 * clock to the next sleep's end. Time is thus exact and free, so thousands of
 * random schedules of clients and node faults run in seconds, and one seed
 * always replays the same interleaving.
 *
 * `TestClock` gives the same determinism, but each of its steps waits on real
 * timers until the fibers settle (a few ms), which is too slow for thousands.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Scheduler from "effect/Scheduler"

interface Timer {
  readonly at: number
  readonly order: number
  readonly wake: () => void
}

/** A clock that only the driver moves. Sleeps end in time order, ties in the order they began. */
class VirtualClock implements Clock.Clock {
  readonly [Clock.ClockTypeId]: Clock.ClockTypeId = Clock.ClockTypeId
  now = 0
  private timers: Array<Timer> = []
  private started = 0

  unsafeCurrentTimeMillis(): number {
    return this.now
  }
  unsafeCurrentTimeNanos(): bigint {
    return BigInt(Math.round(this.now * 1e6))
  }
  readonly currentTimeMillis = Effect.sync(() => this.unsafeCurrentTimeMillis())
  readonly currentTimeNanos = Effect.sync(() => this.unsafeCurrentTimeNanos())

  sleep(duration: Duration.Duration): Effect.Effect<void> {
    const millis = Duration.toMillis(duration)
    if (!(millis > 0)) return Effect.yieldNow()
    return Effect.async<void>((resume) => {
      const timer: Timer = { at: this.now + millis, order: this.started++, wake: () => resume(Effect.void) }
      this.timers.push(timer)
      return Effect.sync(() => void (this.timers = this.timers.filter((other) => other !== timer)))
    })
  }

  /** Move to the earliest pending sleep and end it; `false` when nothing sleeps. */
  advance(): boolean {
    if (this.timers.length === 0) return false
    let next = this.timers[0]
    for (const timer of this.timers) {
      if (timer.at < next.at || (timer.at === next.at && timer.order < next.order)) next = timer
    }
    this.timers = this.timers.filter((timer) => timer !== next)
    this.now = Math.max(this.now, next.at)
    next.wake()
    return true
  }
}

/** Runs fibers' tasks only when the driver asks, in the order they were scheduled. */
class StepScheduler implements Scheduler.Scheduler {
  private tasks: Array<() => void> = []

  scheduleTask(task: () => void): void {
    this.tasks.push(task)
  }
  shouldYield(): number | false {
    return false
  }
  /** Run until no task is left. */
  drain(limit: number): void {
    let ran = 0
    while (this.tasks.length > 0) {
      const tasks = this.tasks
      this.tasks = []
      for (const task of tasks) task()
      ran += tasks.length
      if (ran > limit) throw new Error(`simulation: more than ${limit} tasks without time passing (a busy loop?)`)
    }
  }
}

export interface SimulationResult<A, E> {
  readonly exit: Exit.Exit<A, E>
  /** Virtual milliseconds the program took. */
  readonly elapsedMillis: number
}

/**
 * Run `program` to its end on virtual time. A program that is still waiting
 * once nothing sleeps any more is stuck: that is reported as an error, as is
 * one that needs more than `maxMillis` of virtual time.
 */
export const run = <A, E>(
  program: Effect.Effect<A, E>,
  options: { readonly maxMillis: number } = { maxMillis: 600_000 }
): SimulationResult<A, E> => {
  const clock = new VirtualClock()
  const scheduler = new StepScheduler()
  const fiber = Effect.runFork(program.pipe(Effect.withClock(clock), Effect.withScheduler(scheduler)), { scheduler })
  for (;;) {
    scheduler.drain(10_000_000)
    const exit = fiber.unsafePoll()
    if (exit !== null) return { exit, elapsedMillis: clock.now }
    if (clock.now > options.maxMillis) {
      throw new Error(`simulation: still running after ${options.maxMillis} virtual ms`)
    }
    if (!clock.advance()) {
      throw new Error(`simulation: stuck at ${clock.now} virtual ms (every fiber waits, nothing sleeps)`)
    }
  }
}
