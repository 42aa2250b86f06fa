/**
 * The metrics every lock manager records, with Effect's `Metric`. They reach
 * OpenTelemetry (or any other backend) when the program provides one, for
 * example with `@effect/opentelemetry`'s `NodeSdk.layer`; without one they
 * are kept in memory and can be read with `Metric.value`.
 *
 * Durations are in milliseconds.
 *
 * @since 0.1.0
 */
export {
  /**
   * How long `acquire` took, from the first attempt to the lock or the final failure, retries
   * included.
   *
   * @since 0.1.0
   * @category metrics
   */
  acquireDuration,
  /**
   * Acquisitions that failed once the retry schedule ran out, tagged `reason`: `Held`,
   * `NotYourTurn`, `NoQuorum` or `ValidityExpired` (`RedlockError.NotAcquiredReason`).
   *
   * @since 0.1.0
   * @category metrics
   */
  acquireFailures,
  /**
   * Locks acquired.
   *
   * @since 0.1.0
   * @category metrics
   */
  acquisitions,
  /**
   * Attempts per acquire call (successful or not): contention shows as more than one.
   *
   * @since 0.1.0
   * @category metrics
   */
  attemptsPerAcquire,
  /**
   * How late automatic extensions were: the time from when an extension was due (half the ttl
   * left) to when a majority confirmed it. Growth means slow nodes or a starved process.
   *
   * @since 0.1.0
   * @category metrics
   */
  extensionLag,
  /**
   * Locks lost while held, tagged `reason`: `Expired` (the validity ran out before a release or
   * an extension) or `NotHeld` (a majority of nodes no longer held it).
   *
   * @since 0.1.0
   * @category metrics
   */
  lostLocks,
  /**
   * Validity left when a lock was released, in ms; 0 when it had already run out. Values near 0
   * mean the work under the lock barely fits its ttl.
   *
   * @since 0.1.0
   * @category metrics
   */
  remainingAtRelease
} from "./internal/metrics.js"
