/**
 * The engine's time on the real clock, which a shell hands the engine when
 * its runtime's clock is the live one (a test's clock is handed as fibers
 * that sleep on it instead): `performance.now()` for elapsed time, Node
 * timers, per-node timeouts sharing one timer per duration (timeouts.ts),
 * and microtasks.
 *
 * @internal
 */
import type { Time } from "./time.js"
import * as Timeouts from "./timeouts.js"

// Beyond what a Node timer can wait, a timer never comes (as on Effect's clocks).
const longestTimerMillis = 2 ** 31 - 1

/**
 * The live clock's time, on the monotonic timeline `offsetMillis` away from
 * `performance.now()` (a shell puts it on its clock's own timeline, so that
 * its readings and the engine's agree).
 */
export const make = (offsetMillis: number): Time => ({
  now: () => performance.now() + offsetMillis,
  wallNow: Date.now,
  schedule: (millis, fn) => {
    if (millis > longestTimerMillis) return () => {}
    const timer = setTimeout(fn, millis)
    return () => clearTimeout(timer)
  },
  timeout: (millis, fn) => {
    const timeout = Timeouts.start(millis, fn)
    return () => Timeouts.cancel(timeout)
  },
  defer: queueMicrotask
})
