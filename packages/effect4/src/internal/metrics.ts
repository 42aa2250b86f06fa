/**
 * The metrics' updates from plain code (RedlockMetrics.ts defines them), in
 * the context of the fiber that acquires, so that its metric attributes apply.
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Metric from "effect/Metric"
import * as RedlockMetrics from "../RedlockMetrics.js"

export const acquired = (durationMillis: number, attempts: number, context: Context.Context<never>): void => {
  RedlockMetrics.acquisitions.updateUnsafe(1, context)
  RedlockMetrics.acquireDuration.updateUnsafe(durationMillis, context)
  RedlockMetrics.attemptsPerAcquire.updateUnsafe(attempts, context)
}

// One metric per reason, made once.
const byReason = <M extends Metric.Metric<number, unknown>>(metric: M) => {
  const made = new Map<string, Metric.Metric<number, unknown>>()
  return (reason: string) => {
    let withReason = made.get(reason)
    if (withReason === undefined) made.set(reason, withReason = Metric.withAttributes(metric, { reason }))
    return withReason
  }
}

const failuresFor = byReason(RedlockMetrics.acquireFailures)
const lostFor = byReason(RedlockMetrics.lostLocks)

export const notAcquired = (
  reason: string,
  durationMillis: number,
  attempts: number,
  context: Context.Context<never>
): void => {
  failuresFor(reason).updateUnsafe(1, context)
  RedlockMetrics.acquireDuration.updateUnsafe(durationMillis, context)
  RedlockMetrics.attemptsPerAcquire.updateUnsafe(attempts, context)
}

const noContext = Context.empty()

export const lost = (reason: string): void => lostFor(reason).updateUnsafe(1, noContext)

export const released = (remainingMillis: number): void =>
  RedlockMetrics.remainingAtRelease.updateUnsafe(remainingMillis, noContext)

export const extended = (lagMillis: number): void => RedlockMetrics.extensionLag.updateUnsafe(lagMillis, noContext)
