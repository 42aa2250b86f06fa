/**
 * What the Effect 3 package adds to the plain lock manager of
 * `effect-redlock/Promise` (core's manager/openNodes.ts `Host`): a layer of
 * nodes in place of a list, a password held by a `Redacted`, and retry
 * Schedules, those of `Redlock.retry` by their plain steps and any other
 * stepped as an effect. Loaded by Promise.ts only where `effect` is
 * installed: a plain Node project never loads it.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import type { Retry as EngineRetry } from "@effect-redlock/core/engine/waiting.js"
import type { Host } from "@effect-redlock/core/manager/openNodes.js"
import * as CoreRetry from "@effect-redlock/core/manager/retry.js"
import type { LockNotAcquired } from "../RedlockError.js"
import * as Monotonic from "./monotonic.js"
import { RedisNodes } from "./nodes.js"
import * as Retry from "./retry.js"

/** A log line as one line of text: its message, then its annotations (outcomes, say) in parentheses. */
const lineOf = (message: unknown, annotations: ReadonlyArray<readonly [string, unknown]>): string => {
  const text = (Array.isArray(message) ? message : [message]).map(String).join(" ")
  const notes = annotations.map(([key, value]) => `${key}: ${Array.isArray(value) ? value.join("; ") : String(value)}`)
  return notes.length === 0 ? text : `${text} (${notes.join(", ")})`
}

/** The layer's warnings to the manager's logger: a promise program did not ask for Effect's. */
const logsTo = (logger: { readonly warn: (message: string) => void }) =>
  Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ annotations, logLevel, message }) => {
      if (LogLevel.greaterThanEqual(logLevel, LogLevel.Warning)) logger.warn(lineOf(message, [...annotations]))
    })
  )

const runEffect: Retry.EffectRunner = Retry.runnerOf(Runtime.defaultRuntime)

/** A Schedule with no plain steps, stepped as an effect; its failure is the acquisition's rejection. */
const scheduleSteps = (schedule: Schedule.Schedule<unknown, LockNotAcquired>): CoreRetry.RetrySteps => ({
  waits: true,
  start: (random) => {
    const retry: EngineRetry<Retry.Refusal> = Retry.forWait(schedule, random, runEffect)
    return {
      step: (refused, wallNow, next, failed) =>
        // The refusal is core's LockNotAcquired: the same fields as this package's, which a Schedule reads.
        retry.step(refused as Retry.Refusal, wallNow, next, (cause) =>
          failed(Cause.squash(cause as Cause.Cause<unknown>)))
    }
  }
})

export const host: Host = {
  nodesOf: (input, logger) => {
    if (!Layer.isLayer(input)) return undefined
    const runtime = ManagedRuntime.make(Layer.provideMerge(input as Layer.Layer<RedisNodes, unknown>, logsTo(logger)))
    return runtime.runtime().then(
      async () => {
        const nodes = await runtime.runPromise(RedisNodes)
        return { nodes, time: Monotonic.liveTime, close: () => runtime.dispose() }
      },
      async (error: unknown) => {
        await runtime.dispose()
        throw error
      }
    )
  },
  password: (input) => Redacted.isRedacted(input) ? Redacted.value(input as Redacted.Redacted<string>) : undefined,
  customRetry: (input) => {
    if (!Schedule.isSchedule(input)) return undefined
    if (input === Schedule.stop) return CoreRetry.noRetry[CoreRetry.RetryStepsId]
    return scheduleSteps(input as Schedule.Schedule<unknown, LockNotAcquired>)
  }
}
