/**
 * Spans of the lock manager, made only where a tracer records them (a
 * tracer other than Effect's built-in one, with tracing on): elsewhere a
 * span would cost every acquisition for nothing. Debug logs of refused
 * attempts, written only where the fiber's minimum log level lets them
 * through.
 *
 * An attempt's span is made after the fact, from the times its fan-out
 * recorded (`attemptObserver`): the attempt runs the same code traced or not.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as LogLevel from "effect/LogLevel"
import * as References from "effect/References"
import * as Tracer from "effect/Tracer"
import type { FanOutResult } from "@effect-redlock/core/engine/fanOut.js"
import * as Messages from "@effect-redlock/core/engine/messages.js"
import * as Outcome from "@effect-redlock/core/engine/outcome.js"
import * as TimeOf from "./monotonic.js"

export const isRecorded = (fiber: Fiber.Fiber<unknown, unknown>): boolean =>
  fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer && fiber.getRef(References.TracerEnabled)

/** Whether the fiber's debug logs are written. */
export const logsDebug = (fiber: Fiber.Fiber<unknown, unknown>): boolean =>
  LogLevel.isGreaterThanOrEqualTo("Debug", fiber.getRef(References.MinimumLogLevel))

/** Told of each attempt of an acquisition once it ended: its number, whether it was granted, its (last) fan-out's result, when it began and ended. */
export type AttemptObserver = (
  attempt: number,
  granted: boolean,
  result: FanOutResult,
  startMillis: number,
  endMillis: number,
  resources: ReadonlyArray<string>,
  quorum: number
) => void

/**
 * Each attempt as a `Redlock.attempt` span, child of the fiber's current
 * span (the acquisition's), where `traced`; each refused attempt as a
 * debug log where `debug`.
 */
export const attemptObserver = (
  fiber: Fiber.Fiber<unknown, unknown>,
  traced: boolean,
  debug: boolean
): AttemptObserver => {
  const tracer = fiber.getRef(Tracer.Tracer)
  const parent = Context.getOption(fiber.context, Tracer.ParentSpan)
  const clock = fiber.getRef(Clock.Clock)
  // Spans are on the wall clock's nanoseconds, the engine's times on the monotonic timeline.
  const wallNanos = (millis: number) =>
    clock.currentTimeNanosUnsafe() - BigInt(Math.round((TimeOf.monotonicMillis(clock) - millis) * 1e6))
  const log = debug ? (message: string) => Effect.runSyncWith(fiber.context)(Effect.logDebug(message)) : undefined
  return (attempt, granted, result, startMillis, endMillis, resources, quorum) => {
    if (traced) {
      const span = tracer.span({
        name: "Redlock.attempt",
        parent,
        annotations: Context.empty(),
        links: [],
        startTime: wallNanos(startMillis),
        kind: "internal",
        root: false,
        sampled: true
      })
      span.attribute("redlock.attempt", attempt)
      span.attribute("redlock.granted", result.yes)
      span.attribute("redlock.outcomes", Outcome.describeAll(result.outcomes))
      span.end(wallNanos(endMillis), Exit.void)
    }
    if (log !== undefined && !granted) log(Messages.attemptRefused(attempt, resources, result, quorum))
  }
}
