/**
 * The arithmetic of Redlock, free of I/O (docs/how-it-works.md, "An acquisition, step by step", items 3 and 4).
 *
 * @internal
 */
import type { NodeOutcome } from "./node.js"

/**
 * How many nodes must agree: a strict majority. Any two majorities of the same
 * N nodes share at least one node, which is what makes two holders impossible.
 */
export const quorum = (nodes: number): number => Math.floor(nodes / 2) + 1

/**
 * The clock drift allowance for a ttl: `ttl * driftFactor` plus 2 ms (Redis
 * expires keys with 1 ms precision, plus 1 ms minimum drift).
 */
export const drift = (ttlMillis: number, driftFactor: number): number => Math.ceil(ttlMillis * driftFactor) + 2

/** The reference's clock drift factor, the manager's default. */
export const defaultDriftFactor = 0.01

/** The time a lock may be relied on after an attempt that took `elapsedMillis`. */
export const validity = (ttlMillis: number, elapsedMillis: number, driftFactor: number): number =>
  ttlMillis - elapsedMillis - drift(ttlMillis, driftFactor)

/**
 * The per-node timeout used when none is given: 1% of the ttl, within
 * [10 ms, 250 ms]. It must stay small next to the ttl (the reference uses
 * 5-50 ms for a 10 s ttl), and large enough for a loaded LAN. For very short
 * ttls it is at most half the ttl, so that it stays below it.
 */
export const defaultNodeTimeoutMillis = (ttlMillis: number): number =>
  Math.max(1, Math.min(250, Math.max(10, Math.floor(ttlMillis / 100)), Math.floor(ttlMillis / 2)))

/**
 * Where an attempt stands after some nodes answered.
 * - `won`: a quorum said yes; the rest need not be awaited.
 * - `lost`: even if every pending node says yes, no quorum is possible.
 * - `open`: keep waiting.
 */
export type Tally = "won" | "lost" | "open"

export const tally = (nodes: number, yes: number, no: number): Tally => {
  const needed = quorum(nodes)
  if (yes >= needed) return "won"
  if (nodes - no < needed) return "lost"
  return "open"
}

/** A majority of nodes said our keys are not (or no longer) ours: however the rest answer, no quorum is left. */
export const majorityNotOurs = (outcomes: ReadonlyArray<NodeOutcome>, quorum: number): boolean =>
  outcomes.length - outcomes.filter((outcome) => outcome._tag === "Held").length < quorum
