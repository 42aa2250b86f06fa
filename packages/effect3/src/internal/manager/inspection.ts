/**
 * Reading who holds a resource on each node (as StackExchange.Redis's
 * LockQuery); needs no lock.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { InspectResult, NodeKeyState } from "../../Redlock.js"
import type { InvalidOptions } from "../../RedlockError.js"
import * as SameServer from "@effect-redlock/core/engine/sameServer.js"
import * as FanOut from "../fanOut.js"
import * as Validate from "../validate.js"
import type { Settings } from "./settings.js"

export const inspect = (settings: Settings, resource: string): Effect.Effect<InspectResult, InvalidOptions> =>
  Effect.flatMap(Validate.resource(resource), (checked) => inspectChecked(settings, checked))

/** A resource already checked, or a name the manager made (a semaphore's slot). */
export const inspectChecked = (settings: Settings, resource: string): Effect.Effect<InspectResult> =>
  Effect.gen(function*() {
    const key = settings.keyPrefix + resource
    const { answers: states, outcomes } = yield* FanOut.all(
      settings.nodes,
      FanOut.call("inspect", key),
      settings.inspectTimeout
    )
    const read = outcomes.map((outcome, index): NodeKeyState => {
      const reading = states[index]
      if (reading === undefined) return { _tag: "Unreadable", outcome }
      const { ttlMillis, value } = reading
      const ttl = ttlMillis === undefined ? Option.none() : Option.some(Duration.millis(ttlMillis))
      return { _tag: "Read", node: outcome.node, state: { value: Option.fromNullable(value), ttl } }
    })
    const values = states.map((reading) => reading?.value)
    const holder = SameServer.majorityValue(settings.nodes, values, settings.quorum)
    const ttls = states.flatMap((reading, index) =>
      reading?.ttlMillis !== undefined && holder !== undefined && values[index] === holder ? [reading.ttlMillis] : []
    )
    return {
      resource,
      nodes: read,
      holder: Option.fromNullable(holder),
      ttl: ttls.length === 0 ? Option.none() : Option.some(Duration.millis(Math.min(...ttls)))
    }
  })
