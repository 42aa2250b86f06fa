/**
 * Spans only where someone records them. Effect's built-in tracer keeps
 * spans in memory for no one to read; making one costs more than the rest
 * of a lock's bookkeeping. So the manager makes its spans, and the strings
 * it puts on them, only when the fiber has tracing on and another tracer
 * (OpenTelemetry, a test's recording tracer ...) is installed.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import type * as Tracer from "effect/Tracer"

const builtInTracer: Tracer.Tracer = Effect.runSync(Effect.tracer)

export const isRecorded = (fiber: Fiber.RuntimeFiber<unknown, unknown>): boolean =>
  fiber.currentTracer !== builtInTracer && fiber.getFiberRef(FiberRef.currentTracerEnabled)

// A stack trace per span would point into the manager anyway, and costs more than the rest of the span.
export const spanOptions = { captureStackTrace: false } as const
