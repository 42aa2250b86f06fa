/**
 * What the Effect 4 package adds to the plain lock manager of
 * `effect-redlock/Promise` (core's manager/openNodes.ts `Host`): a layer of
 * nodes in place of a list, a password held by a `Redacted`, and retry
 * Schedules, those of `Redlock.retry` by their plain steps and any other
 * stepped as an effect. Loaded by Promise.ts only where `effect` is
 * installed: a plain Node project never loads it.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import type { Host } from "@effect-redlock/core/manager/openNodes.js"
import * as CoreRetry from "@effect-redlock/core/manager/retry.js"
import { RedisNodes } from "../RedisNode.js"
import * as Retry from "./retry.js"
import * as Time from "./monotonic.js"

/** The layer's warnings to the manager's logger, one line each: a promise program did not ask for Effect's. */
const logsTo = (logger: { readonly warn: (message: string) => void }) =>
  Logger.layer([
    Logger.make(({ logLevel, message }) => {
      if (LogLevel.isGreaterThanOrEqualTo(logLevel, "Warn")) {
        logger.warn((Array.isArray(message) ? message : [message]).map(String).join(" "))
      }
    })
  ])

/** A Schedule with no plain steps, stepped as an effect; its failure is the acquisition's rejection. */
const scheduleSteps = (schedule: Retry.RetrySchedule): CoreRetry.RetrySteps => ({
  waits: true,
  start: (random) => {
    const retry = Retry.forWait(schedule, random, Context.empty())
    return {
      // The refusal is core's LockNotAcquired: the same fields as this package's, which a Schedule reads.
      step: (refused, wallNow, next, failed) =>
        retry.step(
          refused as Parameters<typeof retry.step>[0],
          wallNow,
          next,
          (cause) => failed(Cause.squash(cause as Cause.Cause<unknown>))
        )
    }
  }
})

export const host: Host = {
  nodesOf: (input, logger) => {
    if (!Layer.isLayer(input)) return undefined
    const runtime = ManagedRuntime.make(Layer.provideMerge(input as Layer.Layer<RedisNodes, unknown>, logsTo(logger)))
    return runtime.runPromise(Effect.service(RedisNodes)).then(
      (nodes) => ({ nodes, time: Time.liveTime, close: () => runtime.dispose() }),
      async (error: unknown) => {
        await runtime.dispose()
        throw error
      }
    )
  },
  password: (input) => Redacted.isRedacted(input) ? Redacted.value(input as Redacted.Redacted<string>) : undefined,
  customRetry: (input) => Schedule.isSchedule(input) ? scheduleSteps(input as Retry.RetrySchedule) : undefined
}
