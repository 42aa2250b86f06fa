/**
 * What `redlock inspect` prints: one line per node of what it holds for the
 * resource, then what a majority holds (a lock, a semaphore's permits, a
 * read-write lock's readers or writer).
 */
import type { Inspection, PromiseRedlock } from "@effect-redlock/core/Promise.js"

const seconds = (ttlMillis: number | null) =>
  ttlMillis === null ? "no expiry" : `${(ttlMillis / 1000).toFixed(1)} s left`

/** One line per node (`label` names a semaphore's or a read-write lock's slot). */
const nodeLines = (view: Inspection, label: string): Array<string> =>
  view.nodes.map((node) => {
    if ("unreadable" in node) {
      const outcome = node.unreadable
      return `${outcome.node}\t${label}unreadable: ${outcome._tag === "Failed" ? outcome.error.message : outcome._tag}`
    }
    return `${node.node}\t${label}${node.value === null ? "free" : `held by ${node.value}, ${seconds(node.ttlMillis)}`}`
  })

/** How many permit slots `inspect` looks at without `--limit`, for a resource used as a semaphore. */
const slotsProbed = 64

export const lock = async (redlock: PromiseRedlock, resource: string): Promise<Array<string>> => {
  const view = await redlock.inspect(resource)
  const lines = nodeLines(view, "")
  if (view.holder !== null) {
    return [...lines, `${view.resource}: locked by ${view.holder} on a majority, ${seconds(view.ttlMillis)}`]
  }
  // Not locked: it may be a semaphore's resource, whose permits are other keys.
  const permits = await redlock.inspectPermits(resource, slotsProbed)
  const held = permits.slots.flatMap((slot, index) => slot.holder === null ? [] : [index])
  return [
    ...lines,
    held.length === 0
      ? `${view.resource}: not locked (no majority of nodes holds it), and no semaphore permit held`
      : `${view.resource}: not locked, but ${held.length} semaphore permit(s) held on a majority (slots ${
        held.join(", ")
      }): see them with --limit N`
  ]
}

export const permits = async (redlock: PromiseRedlock, resource: string, limit: number): Promise<Array<string>> => {
  const view = await redlock.inspectPermits(resource, limit)
  return [
    ...view.slots.flatMap((slot, index) => nodeLines(slot, `permit ${index}: `)),
    `${view.resource}: ${view.held} of ${view.limit} permits held on a majority`,
    ...view.slots.flatMap((slot, index) =>
      slot.holder === null ? [] : [`  permit ${index}: ${slot.holder}, ${seconds(slot.ttlMillis)}`]
    )
  ]
}

export const readWrite = async (
  redlock: PromiseRedlock,
  resource: string,
  maxReaders: number
): Promise<Array<string>> => {
  const view = await redlock.inspectReadWrite(resource, maxReaders)
  return [
    ...view.slots.flatMap((slot, index) => nodeLines(slot, `read slot ${index}: `)),
    view.writer === null
      ? `${view.resource}: ${view.readers} of ${view.maxReaders} readers hold it on a majority`
      : `${view.resource}: held for writing by ${view.writer} on a majority`
  ]
}
