/**
 * Spans only where someone records them. Effect's built-in tracer keeps
 * spans in memory for no one to read; making one costs more than the rest
 * of a lock's bookkeeping. So the manager makes its spans, and the strings
 * it puts on them, only when the fiber has tracing on and another tracer
 * (OpenTelemetry, a test's recording tracer ...) is installed.
 *
 * An attempt's span is made after the fact, from the times its fan-out
 * recorded (`attemptSpans`): the attempt runs the same code traced or not.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import type * as Tracer from "effect/Tracer"
import type { FanOutResult } from "@effect-redlock/core/engine/fanOut.js"
import * as Outcome from "@effect-redlock/core/engine/outcome.js"

const builtInTracer: Tracer.Tracer = Effect.runSync(Effect.tracer)

export const isRecorded = (fiber: Fiber.RuntimeFiber<unknown, unknown>): boolean =>
  fiber.currentTracer !== builtInTracer && fiber.getFiberRef(FiberRef.currentTracerEnabled)

// A stack trace per span would point into the manager anyway, and costs more than the rest of the span.
export const spanOptions = { captureStackTrace: false } as const

/** Told each attempt of an acquisition once it ended: its number, its (last) fan-out's result, when it began and ended. */
export type OnAttempt = (attempt: number, result: FanOutResult, startMillis: number, endMillis: number) => void

// Monotonic milliseconds (the clock's currentTimeNanos timeline) as a span's time.
const nanos = (millis: number): bigint => BigInt(Math.round(millis * 1e6))

/**
 * Each attempt as a `Redlock.attempt` span, child of the fiber's current
 * span (the acquisition's), from the moment its first commands were sent
 * to its end (after the undo of a refused attempt).
 */
export const attemptSpans = (fiber: Fiber.RuntimeFiber<unknown, unknown>): OnAttempt => {
  const tracer = fiber.currentTracer
  const parent = Option.fromNullable(fiber.currentSpan)
  const context = fiber.currentContext
  return (attempt, result, startMillis, endMillis) => {
    const span = tracer.span("Redlock.attempt", parent, context, [], nanos(startMillis), "internal", spanOptions)
    span.attribute("redlock.attempt", attempt)
    span.attribute("redlock.granted", result.yes)
    span.attribute("redlock.outcomes", Outcome.describeAll(result.outcomes))
    span.end(nanos(endMillis), Exit.void)
  }
}
