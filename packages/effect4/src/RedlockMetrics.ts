/**
 * The lock manager's metrics, updated as locks are acquired, lost, extended
 * and released; read them with Effect's metric tools (`Metric.snapshot`, an
 * OpenTelemetry exporter). The names are the Effect 3 line's.
 *
 * @since 0.2.0
 */
import * as Metric from "effect/Metric"

const millisBoundaries = Metric.exponentialBoundaries({ start: 1, factor: 2, count: 15 })

/**
 * Time from the first attempt to a held lock or the final failure, in ms.
 *
 * @since 0.2.0
 * @category metrics
 */
export const acquireDuration = Metric.histogram("redlock_acquire_duration_ms", {
  boundaries: millisBoundaries,
  description: "Time from the first attempt to a held lock or the final failure, in ms"
})

/**
 * Locks acquired.
 *
 * @since 0.2.0
 * @category metrics
 */
export const acquisitions = Metric.counter("redlock_acquisitions_total", {
  description: "Locks acquired",
  incremental: true
})

/**
 * Acquisitions that failed after every retry, with the attribute `reason`.
 *
 * @since 0.2.0
 * @category metrics
 */
export const acquireFailures = Metric.counter("redlock_acquire_failures_total", {
  description: "Acquisitions that failed after every retry, by reason",
  incremental: true
})

/**
 * Attempts per acquire call; more than one means contention or faults.
 *
 * @since 0.2.0
 * @category metrics
 */
export const attemptsPerAcquire = Metric.histogram("redlock_attempts_per_acquire", {
  boundaries: Metric.linearBoundaries({ start: 1, width: 1, count: 10 }),
  description: "Attempts per acquire call; more than one means contention or faults"
})

/**
 * Locks lost while held, with the attribute `reason`.
 *
 * @since 0.2.0
 * @category metrics
 */
export const lostLocks = Metric.counter("redlock_lost_locks_total", {
  description: "Locks lost while held, by reason",
  incremental: true
})

/**
 * Time from when an automatic extension was due to its confirmation, in ms.
 *
 * @since 0.2.0
 * @category metrics
 */
export const extensionLag = Metric.histogram("redlock_extension_lag_ms", {
  boundaries: millisBoundaries,
  description: "Time from when an automatic extension was due to its confirmation, in ms"
})

/**
 * Validity left when a lock was released, in ms.
 *
 * @since 0.2.0
 * @category metrics
 */
export const remainingAtRelease = Metric.histogram("redlock_remaining_at_release_ms", {
  boundaries: millisBoundaries,
  description: "Validity left when a lock was released, in ms"
})
