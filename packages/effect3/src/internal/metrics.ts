/**
 * The metrics every lock manager records (documented in the public
 * `RedlockMetrics` module, which re-exports them).
 *
 * @internal
 */
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"

/** 1 ms to about 16 s, doubling. */
const millisBoundaries = MetricBoundaries.exponential({ start: 1, factor: 2, count: 15 })

/**
 * How long `acquire` took, from the first attempt to the lock or the final
 * failure, retries included.
 *
 * @since 0.1.0
 * @category metrics
 */
export const acquireDuration = Metric.histogram(
  "redlock_acquire_duration_ms",
  millisBoundaries,
  "Time from the first attempt to a held lock or the final failure, in ms"
)

/**
 * Locks acquired.
 *
 * @since 0.1.0
 * @category metrics
 */
export const acquisitions = Metric.counter("redlock_acquisitions_total", {
  description: "Locks acquired",
  incremental: true
})

/**
 * Acquisitions that failed once the retry schedule ran out, tagged `reason`:
 * `Held`, `NotYourTurn`, `NoQuorum` or `ValidityExpired`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const acquireFailures = Metric.counter("redlock_acquire_failures_total", {
  description: "Acquisitions that failed after every retry, by reason",
  incremental: true
})

/**
 * Attempts per acquire call (successful or not): contention shows as more
 * than one.
 *
 * @since 0.1.0
 * @category metrics
 */
export const attemptsPerAcquire = Metric.histogram(
  "redlock_attempts_per_acquire",
  MetricBoundaries.linear({ start: 1, width: 1, count: 10 }),
  "Attempts per acquire call; more than one means contention or faults"
)

/**
 * Locks lost while held, tagged `reason`: `Expired` (the validity ran out
 * before a release or an extension) or `NotHeld` (a majority of nodes no
 * longer held it).
 *
 * @since 0.1.0
 * @category metrics
 */
export const lostLocks = Metric.counter("redlock_lost_locks_total", {
  description: "Locks lost while held, by reason",
  incremental: true
})

/**
 * How late automatic extensions were: the time from when an extension was
 * due (half the ttl left) to when a majority confirmed it. Growth means slow
 * nodes or a starved process.
 *
 * @since 0.1.0
 * @category metrics
 */
export const extensionLag = Metric.histogram(
  "redlock_extension_lag_ms",
  millisBoundaries,
  "Time from when an automatic extension was due to its confirmation, in ms"
)

/**
 * Validity left when a lock was released, in ms; 0 when it had already run
 * out. Values near 0 mean the work under the lock barely fits its ttl.
 *
 * @since 0.1.0
 * @category metrics
 */
export const remainingAtRelease = Metric.histogram(
  "redlock_remaining_at_release_ms",
  millisBoundaries,
  "Validity left when a lock was released, in ms"
)
