/**
 * The fault suite's checker: from the critical sections that worker processes
 * reported (on the machine-wide monotonic clock), count what matters for a
 * lock's (or a semaphore's) safety and liveness. Pure, so that it is tested
 * on its own.
 */

/** One critical section of one worker, in milliseconds of `process.hrtime`. */
export interface Section {
  readonly worker: number
  readonly token: bigint
  readonly start: number
  readonly end: number
  /** Until when the holder could rely on the lock (start + its remaining validity). */
  readonly validUntil: number
  /** The lock's resource: a semaphore's slot. Tokens increase per slot. */
  readonly slot?: string | undefined
  /** A read-write lock's write hold. */
  readonly write?: boolean | undefined
}

export interface Overlap {
  readonly first: Section
  readonly second: Section
}

/** Intervals [from, to) in which a majority of the lock's nodes was up (neither paused nor killed). */
export type Interval = readonly [from: number, to: number]

export interface Verdict {
  readonly acquisitions: number
  /**
   * A holder entered while `limit` others (one, for a lock) were still inside
   * their sections and their validity: mutual exclusion (the limit) broken.
   * `first` is the one of them whose section started last.
   */
  readonly violations: ReadonlyArray<Overlap>
  /**
   * A holder entered while `limit` others were still inside their sections,
   * some of them past their validity (allowed by Redlock).
   */
  readonly expiredOverlaps: ReadonlyArray<Overlap>
  /** Consecutive acquisitions (by start, of one slot) whose fencing tokens did not increase. */
  readonly tokenRegressions: number
  /** The longest time with no holder while a majority of nodes was up, in ms. */
  readonly longestGapMillis: number
}

/**
 * Pairs of critical sections that overlap in time (the later one started
 * before the earlier one ended), earlier first; each later section is
 * compared with every earlier one still open when it started. The one
 * overlap check of the tests, the demo and the fault suite.
 */
export const overlappingPairs = <S extends { readonly start: number; readonly end: number }>(
  sections: ReadonlyArray<S>
): Array<[S, S]> => {
  const sorted = [...sections].sort((a, b) => a.start - b.start)
  const pairs: Array<[S, S]> = []
  for (let j = 0; j < sorted.length; j++) {
    for (let i = 0; i < j; i++) {
      if (sorted[j].start < sorted[i].end) pairs.push([sorted[i], sorted[j]])
    }
  }
  return pairs
}

/**
 * Which holders may overlap: at most `limit` (1: a lock; a semaphore's
 * permits), or a read-write lock's rule (a writer alone, at most
 * `maxReaders` readers).
 */
export type Sharing = { readonly limit: number } | { readonly maxReaders: number }

/** Whether `entering` may join the sections in `holding`. */
const allowed = (sharing: Sharing, entering: Section, holding: ReadonlyArray<Section>): boolean =>
  "limit" in sharing
    ? holding.length < sharing.limit
    : entering.write === true
    ? holding.length === 0
    : !holding.some((held) => held.write === true) && holding.length < sharing.maxReaders

/**
 * A section that starts while the earlier ones still open do not allow it
 * breaks the rule: a violation when those still within their validity do not
 * allow it either, else an overlap after expiry. Tokens must increase in
 * acquisition order, slot by slot. The gap is measured in whole milliseconds
 * over `[window[0], window[1])`.
 */
export const check = (
  sections: ReadonlyArray<Section>,
  majorityUp: ReadonlyArray<Interval>,
  window: Interval,
  sharing: Sharing = { limit: 1 }
): Verdict => {
  const sorted = [...sections].sort((a, b) => a.start - b.start)
  const violations: Array<Overlap> = []
  const expiredOverlaps: Array<Overlap> = []
  for (let j = 0; j < sorted.length; j++) {
    const second = sorted[j]
    const open = sorted.slice(0, j).filter((earlier) => second.start < earlier.end)
    if (allowed(sharing, second, open)) continue
    const valid = open.filter((earlier) => second.start < earlier.validUntil)
    if (!allowed(sharing, second, valid)) violations.push({ first: valid[valid.length - 1], second })
    else expiredOverlaps.push({ first: open[open.length - 1], second })
  }
  let tokenRegressions = 0
  const lastToken = new Map<string, bigint>()
  for (const section of sorted) {
    const before = lastToken.get(section.slot ?? "")
    if (before !== undefined && section.token <= before) tokenRegressions++
    lastToken.set(section.slot ?? "", section.token)
  }
  return {
    acquisitions: sorted.length,
    violations,
    expiredOverlaps,
    tokenRegressions,
    longestGapMillis: longestGap(sorted, majorityUp, window)
  }
}

const longestGap = (
  sections: ReadonlyArray<Section>,
  majorityUp: ReadonlyArray<Interval>,
  window: Interval
): number => {
  const [from, to] = [Math.floor(window[0]), Math.ceil(window[1])]
  const length = Math.max(0, to - from)
  // One flag per millisecond: 1 where a gap counts (majority up, nobody holding).
  const counts = new Uint8Array(length)
  const mark = (start: number, end: number, value: number) => {
    for (let t = Math.max(0, Math.floor(start) - from); t < Math.min(length, Math.ceil(end) - from); t++) {
      counts[t] = value
    }
  }
  for (const [up, down] of majorityUp) mark(up, down, 1)
  for (const section of sections) mark(section.start, section.end, 0)
  let longest = 0
  let run = 0
  for (let t = 0; t < length; t++) {
    run = counts[t] === 1 ? run + 1 : 0
    if (run > longest) longest = run
  }
  return longest
}
