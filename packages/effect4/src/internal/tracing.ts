/**
 * Spans of the lock manager, made only where a tracer records them (a
 * tracer other than Effect's built-in one, with tracing on): elsewhere a
 * span would cost every acquisition for nothing.
 *
 * @internal
 */
import type * as Fiber from "effect/Fiber"
import * as References from "effect/References"
import * as Tracer from "effect/Tracer"

export const isRecorded = (fiber: Fiber.Fiber<unknown, unknown>): boolean =>
  fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer && fiber.getRef(References.TracerEnabled)
