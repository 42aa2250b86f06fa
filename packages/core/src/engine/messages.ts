/**
 * What each error of a lock says, in words: one text for every shell, each
 * of which has its own error classes with these fields.
 *
 * @internal
 */
import type { RefusalReason } from "./attempt.js"
import type { LossReason } from "./holding.js"
import type { NodeError, NodeOutcome } from "./node.js"
import * as Outcome from "./outcome.js"

export const invalidOptions = (option: string, detail: string): string => `invalid option "${option}": ${detail}`

export const nodeError = (error: NodeError): string => `node ${error.node}: ${error.reason}: ${error.detail}`

export const notAcquired = (fields: {
  readonly resources: ReadonlyArray<string>
  readonly reason: RefusalReason
  readonly attempts: number
  readonly elapsedMillis: number
  readonly quorum: number
  readonly outcomes: ReadonlyArray<NodeOutcome>
}): string => {
  const why = fields.reason === "Held"
    ? "another client holds it"
    : fields.reason === "NotYourTurn"
    ? "others wait for it ahead of this client"
    : fields.reason === "NoQuorum"
    ? `fewer than ${fields.quorum} of ${fields.outcomes.length} nodes granted it`
    : "a quorum granted it but no validity was left; raise ttl or lower nodeTimeout"
  return `lock on ${fields.resources.join(", ")} not acquired after ${fields.attempts} attempt(s) ` +
    `in ${Math.round(fields.elapsedMillis)} ms: ${why} (last attempt: ${Outcome.describeAll(fields.outcomes)})`
}

/** The debug log line of a refused attempt (both Effect lines log one where debug logs are on). */
export const attemptRefused = (
  attempt: number,
  resources: ReadonlyArray<string>,
  result: { readonly yes: number; readonly outcomes: ReadonlyArray<NodeOutcome> },
  quorum: number
): string =>
  `effect-redlock: attempt ${attempt} on ${resources.join(", ")}: ` +
  `${result.yes} of ${quorum} needed (${Outcome.describeAll(result.outcomes)})`

/** The log line of a release that some nodes did not confirm (both Effect lines log it as a lock's scope closes). */
export const releaseUnanswered = (resources: ReadonlyArray<string>, unanswered: number, ttlText: string): string =>
  `effect-redlock: release of ${
    resources.join(", ")
  } did not reach ${unanswered} node(s); their keys expire within ${ttlText}`

export const lost = (resources: ReadonlyArray<string>, reason: LossReason): string => {
  const why = reason === "Expired"
    ? "its validity ran out before it was extended"
    : reason === "NotHeld"
    ? "a majority of nodes no longer hold it for us (expired, or taken by another client after it expired)"
    : "it was released"
  return `lock on ${resources.join(", ")} lost: ${why}`
}

export const notExtended = (resources: ReadonlyArray<string>, outcomes: ReadonlyArray<NodeOutcome>): string =>
  `lock on ${resources.join(", ")} not extended: fewer than a majority of nodes confirmed (` +
  Outcome.describeAll(outcomes) + ")"

export const fencingTokenUnavailable = (
  resources: ReadonlyArray<string>,
  outcomes: ReadonlyArray<NodeOutcome>
): string =>
  `no fencing token for ${resources.join(", ")}: fewer than a majority of nodes answered (` +
  Outcome.describeAll(outcomes) + ")"

export const staleFencingToken = (key: string, token: bigint, highestSeen: bigint): string =>
  `write to ${key} refused: fencing token ${token} is not above ${highestSeen}, already seen`

export const validityTooShort = (
  resources: ReadonlyArray<string>,
  remainingMillis: number,
  requiredMillis: number
): string => `lock on ${resources.join(", ")} has ${Math.round(remainingMillis)} ms left, ${requiredMillis} ms needed`

export const managerClosed = "this lock manager was closed (close()): make a new one to lock again"

export const extensionLimitReached = (resources: ReadonlyArray<string>, maxExtensions: number): string =>
  `lock on ${resources.join(", ")} already extended ${maxExtensions} times (maxExtensions)`

export const settingConflict = (fields: {
  readonly resource: string
  readonly setting: string
  readonly requested: number
  readonly recorded: number
}): string =>
  `${fields.resource}: ${fields.setting} ${fields.requested} refused, its holders use ${fields.recorded} (recorded on a ` +
  `majority of nodes); every client of a resource must use the same ${fields.setting}. A new value takes effect once ` +
  `no slot of the resource is held (the record goes with the last holder, or expires within twice its ttl)`

export const selfDeadlock = (fields: {
  readonly resource: string
  readonly held: string
  readonly requested: string
}): string =>
  `${fields.resource}: a ${fields.requested} asked for by a fiber that holds it for ` +
  `${fields.held === "read" ? "reading" : "writing"} would wait for itself; release the ${fields.held} first` +
  (fields.held === "read" && fields.requested === "write" ? " (a read cannot be upgraded)" : "")
