/**
 * Reading who holds a resource on each node; needs no lock.
 *
 * @internal
 */
import * as FanOut from "../engine/fanOut.js"
import * as Options from "../engine/options.js"
import { Problem } from "../engine/options.js"
import * as SameServer from "../engine/sameServer.js"
import { InvalidOptions, type Outcome } from "./errors.js"
import { orThrow, type Settings } from "./settings.js"
import { defaultMaxReaders } from "./slots.js"
import type * as FrontEnd from "./frontEndTypes.js"

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

/** Who holds each of a semaphore's permits, each slot read as `inspect` reads a lock. */
export interface PermitsInspection extends FrontEnd.PermitsInspectionOf<Inspection> {}

/** Who holds a read-write lock: its read slots, its readers, or its writer. */
export interface ReadWriteInspection extends FrontEnd.ReadWriteInspectionOf<Inspection, string | null> {}

export const inspect = (settings: Settings, resourceInput: string): Promise<Inspection> => {
  try {
    return inspectChecked(settings, orThrow(Options.resource(resourceInput)))
  } catch (error) {
    return Promise.reject(error)
  }
}

/** Every slot of `kind` of a resource, read (the resource and the count checked first). */
const inspectSlots = (
  settings: Settings,
  resourceInput: unknown,
  countInput: unknown,
  kind: "permit" | "read"
): Promise<{ readonly resource: string; readonly limit: number; readonly slots: ReadonlyArray<Inspection> }> => {
  const checked = Options.permits(resourceInput, countInput)
  if (checked instanceof Problem) {
    const option = kind === "read" && checked.option === "limit" ? "maxReaders" : checked.option
    return Promise.reject(new InvalidOptions(option, checked.detail))
  }
  const { limit, resource } = checked
  const slots = Array.from(
    { length: limit },
    (_, slot) => inspectChecked(settings, Options.slotResource(resource, slot, kind))
  )
  return Promise.all(slots).then((read) => ({ resource, limit, slots: read }))
}

export const inspectPermits = (settings: Settings, resource: string, limit: number): Promise<PermitsInspection> =>
  inspectSlots(settings, resource, limit, "permit").then((read) => ({
    ...read,
    held: read.slots.filter((slot) => slot.holder !== null).length
  }))

export const inspectReadWrite = (
  settings: Settings,
  resource: string,
  maxReaders: number = defaultMaxReaders
): Promise<ReadWriteInspection> =>
  inspectSlots(settings, resource, maxReaders, "read").then(({ limit, resource, slots }) => {
    const held = slots.filter((slot) => slot.holder !== null).length
    const holders = new Set(slots.flatMap((slot) => slot.holder === null ? [] : [slot.holder]))
    // One value on every slot: a writer (with a single read slot, a reader looks the same).
    const writer = limit > 1 && held === limit && holders.size === 1 ? [...holders][0] : null
    return { resource, maxReaders: limit, slots, readers: writer === null ? held : 0, writer }
  })

/** A resource already checked, or a name the manager made (a semaphore's slot). */
const inspectChecked = (settings: Settings, resource: string): Promise<Inspection> => {
  const { nodes, quorum } = settings
  const rules = FanOut.everyNode(nodes, settings.inspectTimeoutMillis, settings.nodeError)
  return new Promise((resolve) =>
    FanOut.send(
      nodes,
      FanOut.call("inspect", settings.keyPrefix + resource),
      rules,
      settings.time,
      ({ answers, outcomes }) => {
        const values = answers.map((reading) => reading?.value)
        const holder = SameServer.majorityValue(nodes, values, quorum)
        const ttls = answers.flatMap((reading, index) =>
          reading?.ttlMillis !== undefined && holder !== undefined && values[index] === holder
            ? [reading.ttlMillis]
            : []
        )
        resolve({
          resource,
          holder: holder ?? null,
          ttlMillis: ttls.length === 0 ? null : Math.min(...ttls),
          nodes: outcomes.map((outcome, index) => {
            const reading = answers[index]
            return reading === undefined
              ? { node: outcome.node, unreadable: outcome }
              : { node: outcome.node, value: reading.value ?? null, ttlMillis: reading.ttlMillis ?? null }
          })
        })
      }
    )
  )
}
