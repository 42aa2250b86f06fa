/**
 * Reading who holds a resource on each node; needs no lock.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as FanOut from "@effect-redlock/core/engine/fanOut.js"
import * as Options from "@effect-redlock/core/engine/options.js"
import * as SameServer from "@effect-redlock/core/engine/sameServer.js"
import type { InspectResult, NodeKeyState } from "../../Redlock.js"
import type { InvalidOptions } from "../errors.js"
import type { Settings } from "./settings.js"
import * as TimeOf from "../monotonic.js"
import * as Validate from "../validate.js"

export const inspect = (settings: Settings, resource: string): Effect.Effect<InspectResult, InvalidOptions> => {
  const checked = Options.resource(resource)
  if (checked instanceof Options.Problem) return Effect.fail(Validate.invalid(checked.option, checked.detail))
  return inspectChecked(settings, checked)
}

/** A resource already checked, or a name the manager made (a semaphore's slot). */
export const inspectChecked = (settings: Settings, resource: string): Effect.Effect<InspectResult> =>
  Effect.flatMap(TimeOf.currentTime, (time) => {
    const { nodes } = settings
    return Effect.callback<InspectResult>((resume) =>
      FanOut.send(
        nodes,
        FanOut.call("inspect", settings.keyPrefix + resource),
        FanOut.everyNode(nodes, settings.inspectTimeoutMillis, settings.nodeError),
        time,
        ({ answers, outcomes }) => {
          const read = outcomes.map((outcome, index): NodeKeyState => {
            const reading = answers[index]
            if (reading === undefined) return { _tag: "Unreadable", outcome: outcome }
            return {
              _tag: "Read",
              node: outcome.node,
              state: {
                value: Option.fromUndefinedOr(reading.value),
                ttl: Option.map(Option.fromUndefinedOr(reading.ttlMillis), Duration.millis)
              }
            }
          })
          const values = answers.map((reading) => reading?.value)
          const holder = SameServer.majorityValue(nodes, values, settings.quorum)
          const ttls = answers.flatMap((reading, index) =>
            reading?.ttlMillis !== undefined && holder !== undefined && values[index] === holder
              ? [reading.ttlMillis]
              : []
          )
          resume(Effect.succeed({
            resource,
            nodes: read,
            holder: Option.fromUndefinedOr(holder),
            ttl: ttls.length === 0 ? Option.none() : Option.some(Duration.millis(Math.min(...ttls)))
          }))
        }
      )
    )
  })
