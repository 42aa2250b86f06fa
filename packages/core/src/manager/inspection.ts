/**
 * Reading who holds a resource on each node; needs no lock.
 *
 * @internal
 */
import * as FanOut from "../engine/fanOut.js"
import * as Options from "../engine/options.js"
import * as SameServer from "../engine/sameServer.js"
import type { Outcome } from "./errors.js"
import { orThrow, type Settings } from "./settings.js"

/** Who holds a resource, node by node, in plain values (`null` where nothing is). */
export interface Inspection {
  readonly resource: string
  /** The lock value held on a majority of nodes, or `null`: then nobody holds it. */
  readonly holder: string | null
  /** The shortest time to live left among that majority, in ms, or `null`. */
  readonly ttlMillis: number | null
  /** Each node's view: its value and time to live (`null` when none), or why it could not be read. */
  readonly nodes: ReadonlyArray<
    | { readonly node: string; readonly value: string | null; readonly ttlMillis: number | null }
    | { readonly node: string; readonly unreadable: Outcome }
  >
}

export const inspect = (settings: Settings, resourceInput: string): Promise<Inspection> => {
  let resource: string
  try {
    resource = orThrow(Options.resource(resourceInput))
  } catch (error) {
    return Promise.reject(error)
  }
  const { nodes, quorum } = settings
  const rules = FanOut.everyNode(nodes, settings.inspectTimeoutMillis, settings.nodeError)
  return new Promise((resolve) =>
    FanOut.send(nodes, FanOut.call("inspect", settings.keyPrefix + resource), rules, settings.time, ({ answers, outcomes }) => {
      const values = answers.map((reading) => reading?.value)
      const holder = SameServer.majorityValue(nodes, values, quorum)
      const ttls = answers.flatMap((reading, index) =>
        reading?.ttlMillis !== undefined && holder !== undefined && values[index] === holder ? [reading.ttlMillis] : []
      )
      resolve({
        resource,
        holder: holder ?? null,
        ttlMillis: ttls.length === 0 ? null : Math.min(...ttls),
        nodes: outcomes.map((outcome, index) => {
          const reading = answers[index]
          return reading === undefined
            ? { node: outcome.node, unreadable: outcome as Outcome }
            : { node: outcome.node, value: reading.value ?? null, ttlMillis: reading.ttlMillis ?? null }
        })
      })
    })
  )
}
