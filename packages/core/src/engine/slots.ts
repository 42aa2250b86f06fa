/**
 * The slots of a semaphore (or of a read-write lock's readers) as the engine
 * and the nodes share them: every slot key of a resource names the same line
 * of waiters and the same release channel, and a permit's round is one call
 * per node (`NodePromises.acquireSlot`), granted when a quorum of nodes chose
 * the same slot.
 *
 * @internal
 */
import type { RefusalReason } from "./attempt.js"
import type { TurnAnswer } from "./node.js"
import * as Arrays from "./arrays.js"

/**
 * A slot key without its slot number (every slot of a resource shares it);
 * `undefined` for a key that is no slot's. A slot key is a checked
 * resource's key, then NUL, the slots' kind (letters) and the slot number
 * (options.ts, slotResource); users' lock keys hold no NUL character. Read
 * from the end, without a pattern: it runs on every slot acquisition.
 */
export const slotsPrefixOf = (key: string): string | undefined => {
  let digits = key.length
  while (digits > 0 && isDigit(key.charCodeAt(digits - 1))) digits--
  let kind = digits
  while (kind > 0 && isLetter(key.charCodeAt(kind - 1))) kind--
  const isSlot = digits < key.length && kind < digits && kind > 0 && key.charCodeAt(kind - 1) === 0
  return isSlot ? key.slice(0, digits) : undefined
}

const isDigit = (code: number): boolean => code >= 48 && code <= 57
const isLetter = (code: number): boolean => (code >= 65 && code <= 90) || (code >= 97 && code <= 122)

/**
 * The name of a key's line of waiters and of its release channel: a lock
 * key's own, or for a slot key the one its resource's slots share, so that
 * waiters for any slot stand in one line and hear every slot's release.
 */
export const lineOf = (key: string): string => slotsPrefixOf(key) ?? key

/**
 * The distinct lines (and release channels) of some keys, in order. A loop:
 * a permit's slot keys all name one line, and a Set with a spread cost ~2 µs
 * of each permit's CPU.
 */
export const linesOf = (keys: ReadonlyArray<string>): ReadonlyArray<string> => {
  const lines = Arrays.empty<string>()
  for (const key of keys) {
    const line = lineOf(key)
    if (!lines.includes(line)) lines.push(line)
  }
  return lines
}

/**
 * The mark of a writer in its slots' line: a writer needs every slot, so a
 * reader behind it may not take a free slot (scripts.ts, acquireSlot). Lock
 * values are base64url and hold no colon.
 */
export const writerMark = ":w"

/**
 * The value of a permit or a reader: a lock value, then what a node needs to
 * hand it a slot a release freed (scripts.ts, releaseSlots): its ttl in whole
 * milliseconds and the setting it acquires under. Lock values are base64url:
 * the dots cannot be part of one.
 */
export const handableValue = (value: string, ttlMillis: number, setting: string): string =>
  `${value}.${Math.ceil(ttlMillis)}.${setting}`

const handoverTag = /^[\w-]+\.(\d+)\.(\d+)$/

/** The ttl and setting a waiter's value carries (`handableValue`), if it carries them. */
export const handoverTagOf = (member: string): { readonly ttlMillis: number; readonly setting: string } | undefined => {
  const match = handoverTag.exec(member)
  return match === null ? undefined : { ttlMillis: Number(match[1]), setting: match[2] }
}

const space = 32
const slash = 47

/**
 * What a release announcement says to the waiter `value`: nothing
 * (`undefined`), wake (`"named"`: a lock's release names the one first in
 * line, a slot's the waiters that may take the slots now free, separated by
 * spaces), or the number of the slot this node handed it ("value/slot").
 */
export const heardBy = (announced: string, value: string): "named" | number | undefined => {
  if (announced === value) return "named"
  // Every waiter of a process hears every release of its resource: most are not named.
  if (announced.length <= value.length) return undefined
  // Each place the value starts a name (no split: it showed in every release's profile).
  for (let at = announced.indexOf(value); at !== -1; at = announced.indexOf(value, at + 1)) {
    if (at > 0 && announced.charCodeAt(at - 1) !== space) continue
    const after = at + value.length
    const end = after === announced.length ? after : announced.indexOf(" ", after)
    const nameEnd = end === -1 ? announced.length : end
    if (nameEnd === after) return "named"
    if (announced.charCodeAt(after) === slash && nameEnd > after + 1) return Number(announced.slice(after + 1, nameEnd))
  }
  return undefined
}

/**
 * Where slot `number` is in a resource's slot keys (which share one line:
 * each is the line's name and its number), or -1. Read from each key's end:
 * no key is made to compare (it showed in every hand-over's profile).
 */
export const indexOfSlot = (keys: ReadonlyArray<string>, number: number): number => {
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]
    let value = 0
    let scale = 1
    let at = key.length
    while (at > 0 && isDigit(key.charCodeAt(at - 1))) {
      value += (key.charCodeAt(at - 1) - 48) * scale
      scale *= 10
      at--
    }
    if (at < key.length && value === number) return index
  }
  return -1
}

/** The slot a node's answer chose for us, if it chose one (`acquireSlot` answers `Granted` with one). */
export const chosenSlot = (answer: unknown): number | undefined =>
  typeof answer === "object" && answer !== null && (answer as TurnAnswer)._tag === "Granted"
    ? (answer as { readonly slot?: number }).slot
    : undefined

/**
 * How many nodes chose each slot, and the most chosen slot with its count
 * (`add` one node's choice). Counted in two short arrays, not a Map: a
 * round has a handful of nodes, and every slot round and hand-over tallies
 * (the Map's table showed in each permit's profile).
 */
class SlotTally {
  private readonly slots = Arrays.empty<number>()
  private readonly counts = Arrays.empty<number>()
  best: number | undefined = undefined
  most = 0

  add(slot: number): void {
    let at = this.slots.indexOf(slot)
    if (at === -1) {
      at = this.slots.length
      this.slots.push(slot)
      this.counts.push(0)
    }
    const count = ++this.counts[at]
    if (count > this.most) {
      this.most = count
      this.best = slot
    }
  }
}

const everyOne = () => true

/** The tally of the slots the counted nodes' answers chose. */
const tally = (answers: ReadonlyArray<unknown>, counts: (index: number) => boolean): SlotTally => {
  const slots = new SlotTally()
  for (let index = 0; index < answers.length; index++) {
    const slot = chosenSlot(answers[index])
    if (slot !== undefined && counts(index)) slots.add(slot)
  }
  return slots
}

/**
 * Whether a round of `acquireSlot` is decided: a quorum chose one slot, or
 * no slot can reach a quorum with the nodes yet to answer. Answers a node
 * gave while it abstained count here (they only hasten the decision, which
 * `grantedSlot` then makes from the nodes that voted).
 */
export const slotRoundDecided = (
  nodes: number,
  quorum: number,
  settled: number,
  answers: ReadonlyArray<unknown>
): boolean => {
  const { most } = tally(answers, everyOne)
  return most >= quorum || most + (nodes - settled) < quorum
}

/** The slot a quorum of the voting nodes (`voted`) chose, if any. */
export const grantedSlot = (
  answers: ReadonlyArray<unknown>,
  voted: (index: number) => boolean,
  quorum: number
): number | undefined => {
  const { best, most } = tally(answers, voted)
  return most >= quorum ? best : undefined
}

/**
 * The slot (its number) that a quorum of the counting nodes handed over
 * (`handed`: slot number by node index), if one did.
 */
export const handedSlot = (
  handed: ReadonlyMap<number, number>,
  counts: (index: number) => boolean,
  quorum: number
): number | undefined => {
  const { best, most } = tallyHanded(handed, counts)
  return most >= quorum ? best : undefined
}

/**
 * Whether the hand-overs so far decide: a quorum handed the same slot, or
 * no slot can be handed by a quorum any more with the nodes not heard from
 * (one tally for both: every hand-over asks).
 */
export const handOversDecided = (handed: ReadonlyMap<number, number>, nodes: number, quorum: number): boolean => {
  const { most } = tallyHanded(handed, everyOne)
  return most >= quorum || most + (nodes - handed.size) < quorum
}

// The tally of the slots the counted nodes handed (slot number by node index).
const tallyHanded = (handed: ReadonlyMap<number, number>, counts: (index: number) => boolean): SlotTally => {
  const slots = new SlotTally()
  for (const [index, slot] of handed) if (counts(index)) slots.add(slot)
  return slots
}

/** `slots` from index `start` on, then the ones before it (`slice`: no allocation site, see attempt.ts, AttemptFields). */
export const rotatedFrom = <A>(slots: ReadonlyArray<A>, start: number): ReadonlyArray<A> => {
  if (start === 0) return slots
  const rotated = slots.slice(start)
  for (let index = 0; index < start; index++) rotated.push(slots[index])
  return rotated
}

/**
 * A round sent from `start` as answered in key order: a `Granted` answer
 * names its slot by its place in the keys sent, here by its index in the
 * keys (late answers are read through `chosenSlotFrom`).
 */
export const inKeyOrder = <R extends { readonly answers: ReadonlyArray<unknown> }>(
  result: R,
  start: number,
  slots: number
): R =>
  start === 0 ? result : {
    ...result,
    answers: result.answers.map((answer) => {
      const sent = chosenSlot(answer)
      return sent === undefined ? answer : { ...(answer as object), slot: (sent + start) % slots }
    })
  }

/** The slot (index in the keys) a late answer of a round sent from `start` chose, if any. */
export const chosenSlotFrom = (answer: unknown, start: number, slots: number): number | undefined => {
  const sent = chosenSlot(answer)
  return sent === undefined ? undefined : (sent + start) % slots
}

/**
 * Where the next round starts after one sent from `start` whose nodes chose
 * different slots (`answers` in key order); `undefined` when they did not
 * split. Each node takes the first slot free on it, so a node that chose a
 * slot later in the order found the ones before it held, and the slot it
 * chose is likely free on the others too: the next round starts there. (A
 * client that reaches the nodes unevenly would otherwise split the same way
 * every round while one holder keeps an earlier slot on some of them.)
 */
export const startAfterSplit = (answers: ReadonlyArray<unknown>, start: number, slots: number): number | undefined => {
  let latest: number | undefined
  let first: number | undefined
  let split = false
  for (const answer of answers) {
    const slot = chosenSlot(answer)
    if (slot === undefined) continue
    first ??= slot
    split ||= slot !== first
    const place = (slot - start + slots) % slots
    if (latest === undefined || place > latest) latest = place
  }
  return !split || latest === undefined ? undefined : (latest + start) % slots
}

/**
 * The slot one acquisition tries first (attempt.ts, AttemptFields): a random
 * one, so that permits spread over the slots rather than every caller trying
 * slot 0 first; from there in order, the same order on every node, so that
 * the nodes choose alike.
 */
export const firstSlot = (slots: number, random: () => number): number => Math.floor(random() * slots)

/**
 * The setting every holder of a resource's slots must share (the engine's
 * `Turn.setting`): a semaphore's `limit`, a read-write lock's `maxReaders`;
 * a quorum's conflict fails the acquisition with every front end's
 * `SettingConflict`.
 */
export interface Setting {
  readonly resource: string
  readonly name: "limit" | "maxReaders"
  readonly value: number
}

/** A `SettingConflict`'s fields: an acquisition under `setting` that a quorum refused for `recorded`; none otherwise. */
export const conflictFields = (setting: Setting | undefined, recorded: string | undefined) =>
  setting === undefined || recorded === undefined
    ? undefined
    : { resource: setting.resource, setting: setting.name, requested: setting.value, recorded: Number(recorded) }

/** What every front end's `LockNotAcquired` carries. */
export interface RefusalFields<Outcome> {
  readonly resources: ReadonlyArray<string>
  readonly reason: RefusalReason
  readonly attempts: number
  readonly elapsedMillis: number
  readonly quorum: number
  readonly outcomes: ReadonlyArray<Outcome>
}

/** A refusal of slots as the refusal of the resource whose slots they are (users asked for the resource, not for a slot). */
export const namingResource = <Outcome>(refusal: RefusalFields<Outcome>, resource: string): RefusalFields<Outcome> => ({
  resources: [resource],
  reason: refusal.reason,
  attempts: refusal.attempts,
  elapsedMillis: refusal.elapsedMillis,
  quorum: refusal.quorum,
  outcomes: refusal.outcomes
})
