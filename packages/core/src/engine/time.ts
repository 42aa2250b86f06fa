/**
 * The engine's time, handed to it by a shell: it never reads a clock or sets
 * a timer of its own, so that a test's clock (Effect's `TestClock`) drives
 * the same code production runs.
 *
 * @internal
 */
export interface Time {
  /** Milliseconds on a monotonic timeline: elapsed time, deadlines, validity. */
  readonly now: () => number
  /** Milliseconds since the epoch: tickets in line, and what a retry schedule is stepped with. */
  readonly wallNow: () => number
  /** Call `fn` once, `millis` from now, unless the returned cancel is called first. */
  readonly schedule: (millis: number, fn: () => void) => () => void
  /**
   * `schedule` for a bound that is almost always cancelled long before it
   * comes (a fan-out's per-node timeout): the live clock shares one timer
   * per duration among them.
   */
  readonly timeout: (millis: number, fn: () => void) => () => void
  /** Call `fn` soon, after what is already queued to run now (a microtask, on the live clock). */
  readonly defer: (fn: () => void) => void
}
