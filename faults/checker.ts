/**
 * The fault suite's checker: from the critical sections that worker processes
 * reported (on the machine-wide monotonic clock), count what matters for a
 * lock's safety and liveness. Pure, so that it is tested on its own.
 */

/** One critical section of one worker, in milliseconds of `process.hrtime`. */
export interface Section {
  readonly worker: number
  readonly token: bigint
  readonly start: number
  readonly end: number
  /** Until when the holder could rely on the lock (start + its remaining validity). */
  readonly validUntil: number
}

export interface Overlap {
  readonly first: Section
  readonly second: Section
}

/** Intervals [from, to) in which a majority of the lock's nodes was up (neither paused nor killed). */
export type Interval = readonly [from: number, to: number]

export interface Verdict {
  readonly acquisitions: number
  /** A holder entered while another was still inside its section and its validity: mutual exclusion broken. */
  readonly violations: ReadonlyArray<Overlap>
  /** A holder entered while another was still inside its section but past its validity (allowed by Redlock). */
  readonly expiredOverlaps: ReadonlyArray<Overlap>
  /** Consecutive acquisitions (by start) whose fencing tokens did not increase. */
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
 * An overlap is a violation when the later section started within the
 * earlier holder's validity. Tokens must increase in acquisition order.
 * The gap is measured in whole milliseconds over `[window[0], window[1])`.
 */
export const check = (
  sections: ReadonlyArray<Section>,
  majorityUp: ReadonlyArray<Interval>,
  window: Interval
): Verdict => {
  const sorted = [...sections].sort((a, b) => a.start - b.start)
  const violations: Array<Overlap> = []
  const expiredOverlaps: Array<Overlap> = []
  for (const [first, second] of overlappingPairs(sorted)) {
    if (second.start < first.validUntil) violations.push({ first, second })
    else expiredOverlaps.push({ first, second })
  }
  let tokenRegressions = 0
  for (let j = 1; j < sorted.length; j++) if (sorted[j].token <= sorted[j - 1].token) tokenRegressions++
  return {
    acquisitions: sorted.length,
    violations,
    expiredOverlaps,
    tokenRegressions,
    longestGapMillis: longestGap(sorted, majorityUp, window)
  }
}

const longestGap = (sections: ReadonlyArray<Section>, majorityUp: ReadonlyArray<Interval>, window: Interval): number => {
  const [from, to] = [Math.floor(window[0]), Math.ceil(window[1])]
  const length = Math.max(0, to - from)
  // One flag per millisecond: 1 where a gap counts (majority up, nobody holding).
  const counts = new Uint8Array(length)
  const mark = (start: number, end: number, value: number) => {
    for (let t = Math.max(0, Math.floor(start) - from); t < Math.min(length, Math.ceil(end) - from); t++) counts[t] = value
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
