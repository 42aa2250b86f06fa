/**
 * The attempts of one acquisition: each a fan-out decided at quorum, the
 * validity, the undo of a refused attempt and of late answers, and the state
 * that waiting in line reads between attempts (waiting.ts). A shell turns a
 * grant into its lock and a refusal into its error (`granted`, `refused`).
 *
 * @internal
 */
import type { Node, NodeError, NodeOutcome, Turn, TurnAnswer } from "./node.js"
import * as Algorithm from "./algorithm.js"
import * as Arrays from "./arrays.js"
import * as FanOut from "./fanOut.js"
import * as LockValue from "./lockValue.js"
import { callOf } from "./nodeCalls.js"
import * as Quarantine from "./quarantine.js"
import * as SameServer from "./sameServer.js"
import * as Slots from "./slots.js"
import type { Time } from "./time.js"
import * as Waiting from "./waiting.js"

/** Why an attempt was refused (see `whyRefused`; `ValidityExpired`: a quorum said yes too late). */
export type RefusalReason = "Held" | "NotYourTurn" | "NoQuorum" | "ValidityExpired"

/** What a refusal says: the shell's error is made from it. */
export interface RefusalFields<E extends NodeError = NodeError> {
  readonly resources: ReadonlyArray<string>
  readonly reason: RefusalReason
  readonly attempts: number
  readonly elapsedMillis: number
  readonly quorum: number
  readonly outcomes: ReadonlyArray<NodeOutcome<E>>
}

/** The manager's settings an acquisition's attempts read. */
export interface AttemptSettings<E extends NodeError = NodeError> {
  readonly nodes: ReadonlyArray<Node>
  readonly quorum: number
  readonly driftFactor: number
  readonly fairHandoff: boolean
  /** How long a restarted node abstains; `undefined`: the quarantine is off. */
  readonly quarantineMillis: number | undefined
  /** Whether every node announces releases. */
  readonly announcesReleases: boolean
  /** Keys this manager found held lately: their acquisitions skip the probe. */
  readonly contendedKeys: {
    isContended(key: string, now: number): boolean
    held(key: string, now: number): void
  }
  readonly nodeError: FanOut.Rules<unknown, E>["nodeError"]
  /** Where the manager says once that a node's clock jumped; none: the quarantine is off. */
  readonly clockJumps?: Quarantine.ClockJumpNotices | undefined
}

/** What one acquisition asks for. */
export interface AttemptRequest {
  readonly resources: ReadonlyArray<string>
  readonly keys: ReadonlyArray<string>
  /**
   * The lock value, from a cryptographic source (lockValue.ts); a slot's
   * acquisition adds what a node needs to hand it a slot (Slots.handableValue).
   */
  readonly value: string
  readonly ttlMillis: number
  readonly nodeTimeoutMillis: number
  /** Whether a first attempt on one key may start with a plain `acquire` (see `probes`). */
  readonly probe: boolean
  /**
   * The setting every holder of these (slot) keys must share (see
   * `Turn.setting`); its attempts always go through `acquireInTurn`, which
   * checks it.
   */
  readonly setting?: string | undefined
  /**
   * The keys are a resource's slots, one of which to take: each attempt is
   * one `acquireSlot` per node, granted when a quorum chose the same slot
   * (a semaphore's permit, a read-write lock's reader).
   */
  readonly slots?: boolean | undefined
  /**
   * Stand before every waiter of the keys' lines: a read by a fiber that
   * reads the resource already (engine/reentrancy.ts), which a writer
   * waiting behind its first read waits for either way.
   */
  readonly ahead?: boolean | undefined
  /** The keys' lines (`Slots.linesOf`), where they are known already (a resource's slots: AttemptFields). */
  readonly lines?: ReadonlyArray<string> | undefined
}

/**
 * An AttemptRequest as a class instance, not an object literal. V8 may
 * allocate all the objects of a literal (an allocation site) in the old
 * generation once many of them outlived a young-generation collection
 * (allocation-site pretenuring), and the decision sticks; such an object,
 * dead, still keeps the younger objects it points to through every
 * collection until a full one, which makes their sites outlive collections
 * in turn. On the permit path this cascade made each collection take 3–6 ms
 * instead of ~1, and the engine's CPU per permit ~1.6× (over in-memory
 * nodes; bench/README.md, "Objects of one permit kept by old garbage"). A
 * class instance has no allocation site: the objects made per acquisition
 * that point at younger ones are class instances, or arrays from builtins
 * that have none (`Array.of`, `slice`). `npm run bench:pretenured-sites`
 * lists the sites V8 pretenures.
 */
export class AttemptFields implements AttemptRequest {
  readonly resources: ReadonlyArray<string>
  readonly keys: ReadonlyArray<string>
  readonly lines: ReadonlyArray<string> | undefined
  /** A new lock value for this acquisition. */
  readonly value: string = LockValue.make()
  /**
   * `resources` in order, or for slots from `firstSlot` on (see
   * `Slots.firstSlot`): the order one acquisition tries them in.
   */
  constructor(
    resources: ReadonlyArray<string>,
    keyPrefix: string,
    readonly ttlMillis: number,
    readonly nodeTimeoutMillis: number,
    readonly probe: boolean,
    readonly setting: string | undefined,
    readonly slots: boolean,
    readonly ahead: boolean | undefined,
    firstSlot = 0
  ) {
    const made = slots ? slotKeysOf(keyPrefix, resources) : undefined
    this.resources = Slots.rotatedFrom(resources, firstSlot)
    this.keys = made === undefined ? keysOf(keyPrefix, resources) : Slots.rotatedFrom(made.keys, firstSlot)
    this.lines = made?.lines
  }

  /**
   * A shell's acquisition of `request.resources` with its options: under a
   * setting, or none; for `slots`, one of them, the first tried drawn from
   * `random`.
   */
  static of(
    request: {
      readonly resources: ReadonlyArray<string>
      readonly ttlMillis: number
      readonly nodeTimeoutMillis: number
    },
    keyPrefix: string,
    probe: boolean,
    setting: { readonly value: number } | undefined,
    slots: { readonly ahead: boolean } | undefined,
    random: () => number
  ): AttemptFields {
    const { nodeTimeoutMillis, resources, ttlMillis } = request
    return new AttemptFields(
      resources,
      keyPrefix,
      ttlMillis,
      nodeTimeoutMillis,
      probe,
      setting === undefined ? undefined : String(setting.value),
      slots !== undefined,
      slots?.ahead,
      slots === undefined ? 0 : Slots.firstSlot(resources.length, random)
    )
  }
}

/**
 * The keys of `resources`: `prefix` before each, in an array made by a
 * builtin that has no allocation site (see AttemptFields; `Array.from` with
 * a mapping takes ~9× as long as this for a few keys).
 */
const keysOf = (prefix: string, resources: ReadonlyArray<string>): Array<string> => {
  const keys = resources.slice()
  for (let index = 0; index < keys.length; index++) keys[index] = prefix + keys[index]
  return keys
}

/**
 * The keys of a resource's slots and their line, made once per array of slot
 * names (the shells keep one per resource: semaphore.ts). The same strings on
 * every permit: a new concatenation per acquisition is a string each node
 * call and each watch must flatten, hash or compare in full (they showed in
 * every permit's profile).
 */
const slotKeysOf = (prefix: string, slots: ReadonlyArray<string>): SlotKeys => {
  const made = slotKeys.get(slots)
  if (made !== undefined && made.prefix === prefix) return made
  const keys = keysOf(prefix, slots)
  const making = new SlotKeys(prefix, keys, Slots.linesOf(keys))
  slotKeys.set(slots, making)
  return making
}

class SlotKeys {
  constructor(readonly prefix: string, readonly keys: ReadonlyArray<string>, readonly lines: ReadonlyArray<string>) {}
}

const slotKeys = new WeakMap<ReadonlyArray<string>, SlotKeys>()

/**
 * The place in line an attempt asks for (node.ts, `Turn`). A reader that
 * stands ahead of everyone (AttemptRequest.ahead) has ticket 0 and the
 * longest age: every node seats it before every waiter (scripts.ts,
 * placeOf). A class: one is made per attempt (see AttemptFields).
 */
class PlaceInLine implements Turn {
  constructor(
    readonly ticket: number,
    readonly leaseMillis: number,
    readonly ageMillis: number,
    readonly setting: string | undefined
  ) {}
}

/** A slot round's rules: decided when a quorum chose one slot, or none can (`Slots.slotRoundDecided`). */
class SlotRules<E extends NodeError> implements FanOut.Rules<Answer, E> {
  readonly votes = true
  constructor(
    private readonly nodes: number,
    private readonly quorum: number,
    readonly timeoutMillis: number,
    readonly quarantineMillis: number | undefined,
    readonly nodeError: FanOut.Rules<Answer, E>["nodeError"]
  ) {}
  isYes(answer: Answer): boolean {
    return tookKeys(answer)
  }
  isDecided(ok: number, other: number, answers: ReadonlyArray<Answer | undefined>): boolean {
    return Slots.slotRoundDecided(this.nodes, this.quorum, ok + other, answers)
  }
}

// The round a grant of slots handed over stands for (see `grantHanded`): a class, not a literal (see AttemptFields).
class HandedResult<E extends NodeError> implements FanOut.FanOutResult<unknown, E> {
  constructor(
    readonly outcomes: ReadonlyArray<NodeOutcome<E>>,
    readonly yes: number,
    readonly answers: ReadonlyArray<unknown>,
    readonly startMillis: number,
    readonly endMillis: number
  ) {}
}

/** What a shell's refusal carries: no lock, and the (last) fan-out's result. */
export interface Refused<E extends NodeError = NodeError> {
  readonly granted: undefined
  readonly result: FanOut.FanOutResult<unknown, E>
}

/** How an attempt ended: the shell's lock, or the shell's refusal `R`; either with its (last) fan-out's result. */
export type AttemptEnd<G, R extends Refused<E>, E extends NodeError = NodeError> =
  | { readonly granted: G; readonly result: FanOut.FanOutResult<unknown, E> }
  | R

type Answer = boolean | TurnAnswer

const tookKeys = (answer: Answer): boolean =>
  answer === true || (typeof answer === "object" && answer._tag === "Granted")

// A node's answer that someone else holds the key (a refused probe, or the script's Held), or
// holds the resource's slots under another setting.
const isHeld = (answer: Answer | undefined): boolean =>
  answer === false || (typeof answer === "object" && (answer._tag === "Held" || answer._tag === "SettingConflict"))

/**
 * The setting the holders recorded, when so many nodes answered
 * `SettingConflict` that no quorum is possible without them (the one most of
 * them recorded); otherwise none.
 */
export const conflictOf = (answers: ReadonlyArray<Answer | undefined>, quorum: number): string | undefined => {
  // Counted first: every refused slot attempt asks, and almost none has a conflict to tally.
  let conflicts = 0
  for (const answer of answers) if (isConflict(answer)) conflicts++
  if (answers.length - conflicts >= quorum) return undefined
  const recorded = new Map<string, number>()
  for (const answer of answers) {
    if (isConflict(answer)) recorded.set(answer.recorded, (recorded.get(answer.recorded) ?? 0) + 1)
  }
  return [...recorded].sort((a, b) => b[1] - a[1])[0][0]
}

const isConflict = (answer: Answer | undefined): answer is Extract<TurnAnswer, { readonly _tag: "SettingConflict" }> =>
  typeof answer === "object" && answer._tag === "SettingConflict"

/**
 * Why an attempt that no quorum granted was refused, from what the nodes
 * answered: the resource is taken (`Held`) or waited for ahead of us
 * (`NotYourTurn`) on so many nodes that no quorum was possible without
 * them; otherwise nodes failed, timed out or abstained (`NoQuorum`).
 */
export const whyRefused = (answers: ReadonlyArray<Answer | undefined>, quorum: number): RefusalReason => {
  let held = 0
  let notYourTurn = 0
  for (const answer of answers) {
    if (isHeld(answer)) held++
    else if (typeof answer === "object" && answer._tag === "NotYourTurn") notYourTurn++
  }
  if (answers.length - held < quorum) return "Held"
  if (answers.length - held - notYourTurn < quorum) return "NotYourTurn"
  return "NoQuorum"
}

/**
 * One acquisition's attempts and the state they share, read by the waiting
 * between attempts as it is after each attempt. The shell makes its lock
 * from a grant (`granted`) and its refusal from a refused attempt
 * (`refused`), and may be told of each attempt (`attempted`).
 */
export abstract class Attempts<G, R extends Refused<E>, E extends NodeError = NodeError>
  implements Waiting.Waiter<G, R>
{
  readonly nodes: ReadonlyArray<Node>
  readonly quorum: number
  readonly keys: ReadonlyArray<string>
  readonly value: string
  readonly nodeTimeoutMillis: number
  readonly firstStart: number
  // Waiting in line (fairHandoff): the place is the time of the first attempt; a
  // place is held for a lease that outlasts the wait until the next attempt.
  private readonly ticket: number
  attempts = 0
  /** Whether an attempt took a place in line: an acquisition that ends without a lock leaves the lines. */
  joined = false
  /** Whether the last attempt reached a quorum of nodes (see `refusal`). */
  private reachedQuorum = true
  /** How many fan-outs of attempts were sent (a first attempt may send two: see `probes`). */
  private sent = 0
  /** The shell gave up on this acquisition (see `abandon`). */
  private abandoned = false
  holderGoneAt: number | undefined = undefined
  leaseEndsAt: number | undefined = undefined
  /**
   * The setting the resource's holders recorded, when a quorum of nodes
   * refused this acquisition's `setting` (`conflictOf`): waiting ends at once.
   */
  conflict: string | undefined = undefined

  constructor(
    protected readonly attemptSettings: AttemptSettings<E>,
    protected readonly attemptRequest: AttemptRequest,
    readonly time: Time
  ) {
    this.nodes = attemptSettings.nodes
    this.quorum = attemptSettings.quorum
    this.keys = attemptRequest.keys
    const { setting, slots, ttlMillis, value } = attemptRequest
    this.value = slots === true && setting !== undefined ? Slots.handableValue(value, ttlMillis, setting) : value
    this.nodeTimeoutMillis = attemptRequest.nodeTimeoutMillis
    this.firstStart = time.now()
    this.ticket = time.wallNow()
  }

  /**
   * The shell's lock, granted by `result` with `validityMillis` left: on
   * every key, or for slots on the key `slot` only (its index in the keys).
   */
  protected abstract granted(
    result: FanOut.FanOutResult<unknown, E>,
    validityMillis: number,
    slot: number | undefined
  ): G
  /** The shell's refusal (`granted` undefined, and `result`). */
  protected abstract refused(fields: RefusalFields<E>, result: FanOut.FanOutResult<unknown, E>): R
  /** Told each attempt (begun at `startMillis`) once it ended, where the shell traces or logs; none: nothing is told. */
  protected abstract readonly attempted: ((startMillis: number, end: AttemptEnd<G, R, E>) => void) | undefined

  /**
   * Whether waiting watches the nodes' releases: only in line (fairHandoff),
   * where they are announced and heard from a quorum (a waiter that cannot
   * hear takes no place in line either, and polls on its schedule). Greedy
   * waiters poll: a release names none of them, so it would wake them all at
   * once, and their attempts would split the nodes' votes (measured: 157
   * acquisitions/s against 333 in line and the peers' 416, 8 workers, N = 5).
   */
  get watch(): boolean {
    return this.attemptSettings.fairHandoff && this.attemptSettings.announcesReleases &&
      Waiting.hearsQuorum(this.nodes, this.quorum)
  }

  private lines: ReadonlyArray<string> | undefined

  /** The release channels to watch: each key's line's (a resource's slots share one). */
  get watchKeys(): ReadonlyArray<string> {
    // Only slot keys (always sent with their setting) have a shared line: a lock's keys are their own.
    return this.lines ??= this.attemptRequest.setting === undefined
      ? this.keys
      : this.attemptRequest.lines ?? Slots.linesOf(this.keys)
  }

  // Whole milliseconds: a jittered schedule's interval is fractional, and PEXPIRE refuses fractions.
  // No place for a waiter whose last attempt reached fewer than a quorum of
  // nodes (see `refusal`), nor for one that cannot hear releases from a
  // quorum (Waiting.hearsQuorum): it polls on its schedule, out of line.
  lease(intervalMillis: number): number {
    if (!this.attemptSettings.fairHandoff || !this.reachedQuorum || !Waiting.hearsQuorum(this.nodes, this.quorum)) {
      return 0
    }
    const { nodeTimeoutMillis, ttlMillis } = this.attemptRequest
    return Math.ceil(Math.min(ttlMillis, Math.max(250, 2 * intervalMillis) + 2 * nodeTimeoutMillis))
  }

  /**
   * One attempt: the fan-out (after a refused probe, the second), the
   * decision, and the undo of a refused attempt; `done` is called once,
   * after the undo was answered (or timed out).
   */
  attempt(leaseMillis: number, done: (end: AttemptEnd<G, R, E>) => void): void {
    this.attempts++
    const { attempted } = this
    const startMillis = this.time.now()
    const ended = attempted === undefined ? done : (end: AttemptEnd<G, R, E>) => {
      attempted(startMillis, end)
      done(end)
    }
    if (!this.probes()) return this.fanOut(leaseMillis, false, ended)
    this.fanOut(
      0,
      true,
      (end) =>
        end.granted !== undefined || leaseMillis === 0 || this.abandoned
          ? ended(end)
          : this.fanOut(this.lease(0), false, ended)
    )
  }

  /**
   * The shell gave up on this acquisition (interrupted, aborted, its
   * schedule done) and leaves every line next: an attempt in flight sends
   * nothing more. A refused probe would otherwise send the script after the
   * leaving, which could join a line and take the key again (it stood there
   * until its lease or ttl ran out; the Effect 4 package's
   * test/contract.test.ts found it).
   */
  abandon(): void {
    this.abandoned = true
  }

  /** The nodes an undo of this acquisition was sent to (see `countsHanded`); made by the first undo. */
  private undone: Set<number> | undefined

  private markUndone(index: number): void {
    ;(this.undone ??= new Set()).add(index)
  }

  /**
   * Whether a slot node `index` handed this waiter (scripts.ts,
   * releaseSlots) counts. Not once an undo of ours was sent to it: the undo
   * deletes every slot of ours there, and the hand-over may have come before
   * it (the announcement travels apart from the undo's answer). Nor from a
   * node that abstains (restart quarantine), counted from the acquisition's
   * start: the hand-over came after it. Nor from a node that is the same
   * server as an earlier one (sameServer.ts). Nor from a node whose grants count
   * once its replicas have them (`Node.countsHandOvers`).
   */
  countsHanded(index: number): boolean {
    if (this.undone?.has(index) === true || this.nodes[index].countsHandOvers === false) return false
    if (SameServer.abstention(this.nodes, index) !== undefined) return false
    const { quarantineMillis } = this.attemptSettings
    if (quarantineMillis === undefined) return true
    const runs = this.nodes.map((node) => node.run())
    return Quarantine.abstention(runs[index], runs[index], this.firstStart, quarantineMillis, runs) === undefined
  }

  /**
   * Held without an attempt: a quorum of the counting nodes handed this
   * waiter the same slot. Each hand-over set the slot to our value with our
   * ttl after the acquisition began (we stood in the node's line), so the
   * validity is counted from the acquisition's start, as if it were one
   * attempt. The nodes that handed another slot have theirs deleted.
   */
  grantHanded(handed: ReadonlyMap<number, number>): G | undefined {
    const { slots, ttlMillis } = this.attemptRequest
    if (slots !== true || this.abandoned) return undefined
    const number = Slots.handedSlot(handed, (index) => this.countsHanded(index), this.quorum)
    if (number === undefined) return undefined
    const slot = Slots.indexOfSlot(this.keys, number)
    const now = this.time.now()
    const validityMillis = Algorithm.validity(ttlMillis, now - this.firstStart, this.attemptSettings.driftFactor)
    if (slot === -1 || validityMillis <= 0) return undefined
    // A late answer of an earlier attempt is no longer undone (it could delete the slot held now);
    // a slot it took is deleted with the release, which deletes every slot of ours on each node.
    this.sent++
    let yes = 0
    const outcomes = Arrays.empty<NodeOutcome<E>>()
    const answers = Arrays.empty<undefined>()
    for (let index = 0; index < this.nodes.length; index++) {
      const chose = handed.get(index)
      const counted = chose === number && this.countsHanded(index)
      if (counted) yes++
      else if (chose !== undefined && chose !== number) release(this.nodes[index], this.keys, this.value)
      outcomes.push({ _tag: counted ? "Ok" : "NotAwaited", node: this.nodes[index].name, millis: 0 })
      answers.push(undefined)
    }
    return this.granted(new HandedResult(outcomes, yes, answers, this.firstStart, now), validityMillis, slot)
  }

  /**
   * Whether this attempt starts with a probe. The first attempt on one
   * resource with waiting in line first sends the node's plain `acquire`
   * (one SET NX PX on Redis: about half the server time of the line-keeping
   * script, for the case that matters most, a free resource). A free key has
   * no one waiting for it: a release hands the key to the first waiter in
   * line instead of freeing it (scripts.ts, releaseOwned). Only when the
   * probe is refused does the same attempt go on with the script that joins
   * the line, its ticket still the time the acquisition began, so waiters
   * keep their order; the acquisition that may not wait stops at the probe.
   * A key this manager found held within the last second skips the probe
   * (contendedKeys.ts): it would most likely be refused again.
   */
  private probes(): boolean {
    return this.attemptRequest.probe && this.attempts === 1 && this.attemptSettings.fairHandoff &&
      this.keys.length === 1 &&
      this.attemptRequest.setting === undefined && this.attemptRequest.slots !== true &&
      !this.attemptSettings.contendedKeys.isContended(this.keys[0], this.firstStart)
  }

  /**
   * Slots: where the order the nodes are sent starts, in the keys
   * (AttemptFields rotated them at random already). Moved after a round that
   * split: see `Slots.startAfterSplit`.
   */
  private slotsStart = 0

  private fanOut(
    leaseMillis: number,
    probe: boolean,
    done: (end: AttemptEnd<G, R, E>) => void,
    splitOnce = false
  ): void {
    const { ahead, setting, slots, ttlMillis } = this.attemptRequest
    const { fairHandoff, nodeError, quarantineMillis } = this.attemptSettings
    this.sent++
    if (leaseMillis > 0) this.joined = true
    this.leaseEndsAt = leaseMillis > 0 ? this.time.now() + leaseMillis : undefined
    const turn = () =>
      ahead === true
        ? new PlaceInLine(0, leaseMillis, Number.MAX_SAFE_INTEGER, setting)
        : new PlaceInLine(this.ticket, leaseMillis, Math.floor(this.time.now() - this.firstStart), setting)
    // A setting is checked by acquireInTurn only (the plain acquire is one SET NX on Redis).
    const start = this.slotsStart
    const call: FanOut.Call<"acquire" | "acquireInTurn" | "acquireSlot"> = slots === true
      ? FanOut.call("acquireSlot", Slots.rotatedFrom(this.keys, start), this.value, ttlMillis, turn())
      : (fairHandoff && !probe) || setting !== undefined
      ? FanOut.call("acquireInTurn", this.keys, this.value, ttlMillis, turn())
      : FanOut.call("acquire", this.keys, this.value, ttlMillis)
    const rules = slots === true
      ? new SlotRules(this.nodes.length, this.quorum, this.nodeTimeoutMillis, quarantineMillis, nodeError)
      : FanOut.atQuorum<Answer, E>(this.nodes, tookKeys, this.nodeTimeoutMillis, quarantineMillis, nodeError)
    FanOut.send(this.nodes, call, rules, this.time, (sent) => {
      this.attemptSettings.clockJumps?.afterRound(this.nodes, sent.outcomes)
      // A slot is named by its index in the keys, whatever order the nodes were sent.
      const result = slots === true ? Slots.inKeyOrder(sent, start, this.keys.length) : sent
      const validityMillis = Algorithm.validity(
        ttlMillis,
        result.endMillis - result.startMillis,
        this.attemptSettings.driftFactor
      )
      const slot = slots === true
        ? Slots.grantedSlot(result.answers, (index) => result.outcomes[index]._tag === "Ok", this.quorum)
        : undefined
      const quorate = slots === true ? slot !== undefined : result.yes >= this.quorum
      if (quorate && validityMillis > 0) {
        if (slot !== undefined) this.undoOtherSlots(result, slot, start)
        return done({ granted: this.granted(result, validityMillis, slot), result })
      }
      const undoOn = this.refusal(result)
      const end = this.refused(this.refusalFields(result, quorate), result)
      // A round whose nodes chose different slots (their slots were not free alike) is tried once
      // more at once, after its undo, from the slot a node chose latest in the order.
      const split = slots === true && !quorate
        ? Slots.startAfterSplit(result.answers, start, this.keys.length)
        : undefined
      if (split !== undefined) this.slotsStart = split
      const next = split === undefined || splitOnce
        ? () => done(end)
        : () => this.abandoned ? done(end) : this.fanOut(leaseMillis, false, done, true)
      if (undoOn.length === 0) return next()
      this.undo(undoOn, next)
    })
  }

  /**
   * A slot granted: the nodes that chose another slot (now, or in a late
   * answer) have every slot of ours deleted (a slot's release deletes them
   * all, scripts.ts): they did not count towards the grant.
   */
  private undoOtherSlots(result: FanOut.FanOutResult<Answer, E>, slot: number, start: number): void {
    const others = this.keys.filter((_, index) => index !== slot)
    const undo = (index: number) => {
      this.markUndone(index)
      release(this.nodes[index], others, this.value)
    }
    result.answers.forEach((answer, index) => {
      const chosen = Slots.chosenSlot(answer)
      if (chosen !== undefined && chosen !== slot) undo(index)
    })
    // Late answers come as the nodes sent them: slots by their place in the order sent.
    result.late?.forEach((index, _, answer) => {
      const chosen = Slots.chosenSlotFrom(answer, start, this.keys.length)
      if (chosen !== undefined && chosen !== slot) undo(index)
    })
  }

  /**
   * A refused attempt's bookkeeping; returns the nodes to undo at once.
   * Undo what this attempt may have set, keeping its place in line. A node
   * that answered Held did not take the key, and earlier attempts were
   * undone in order on the same node: skip it. A node whose answer is still
   * to come is undone when it comes, only if it took the key: most refused
   * attempts of a waiter then send nothing more.
   */
  private refusal(result: FanOut.FanOutResult<Answer, E>): ReadonlyArray<Node> {
    const { late, outcomes } = result
    this.holderGoneAt = this.holderGone(result)
    if (this.attemptRequest.setting !== undefined) this.conflict = conflictOf(result.answers, this.quorum)
    if (this.keys.length === 1 && result.answers.some(isHeld)) {
      this.attemptSettings.contendedKeys.held(this.keys[0], this.time.now())
    }
    // A waiter that reached fewer than a quorum of nodes (the others
    // failed or timed out) cannot win now, so it holds no place in line
    // until it reaches a quorum again; its places run out with their
    // lease. Two such waiters over a majority of the lines would
    // otherwise keep a free resource from everyone for as long as they
    // retry.
    let reached = 0
    for (const outcome of outcomes) if (outcome._tag !== "Failed" && outcome._tag !== "TimedOut") reached++
    this.reachedQuorum = reached >= this.quorum
    if (late !== undefined) this.undoLate(late, this.sent)
    const undoOn = Arrays.empty<Node>()
    for (let index = 0; index < outcomes.length; index++) {
      const { _tag } = outcomes[index]
      const pending = late !== undefined && (_tag === "NotAwaited" || _tag === "TimedOut")
      if (_tag !== "Held" && !pending) undoOn.push(this.nodes[index])
    }
    return undoOn
  }

  private refusalFields(result: FanOut.FanOutResult<Answer, E>, quorate: boolean): RefusalFields<E> {
    const { quorum } = this
    return {
      resources: this.attemptRequest.resources,
      reason: quorate ? "ValidityExpired" : whyRefused(result.answers, quorum),
      attempts: this.attempts,
      elapsedMillis: this.time.now() - this.firstStart,
      quorum,
      outcomes: result.outcomes
    }
  }

  // The undo of a refused attempt on `targets` (no announcement, the place in line kept).
  private undo(targets: ReadonlyArray<Node>, done: () => void): void {
    for (const node of targets) this.markUndone(this.nodes.indexOf(node))
    const rules = FanOut.deletions(targets, this.nodeTimeoutMillis, this.attemptSettings.nodeError)
    FanOut.send(targets, FanOut.call("release", this.keys, this.value, false, true), rules, this.time, done)
  }

  // A late answer that took the key is undone on its node at once, but
  // only while nothing later was sent (an attempt, or the script after a
  // probe): the undo then lands before it on the node, and can never
  // delete a key it counted. A late failure is left alone (it may not have
  // run; if it did, the key expires with its ttl), as is a late answer once
  // something later was sent (which found the key ours and set it again).
  private undoLate(late: FanOut.Late, sentAt: number): void {
    late.forEach((index, tookKey) => {
      if (tookKey !== true || this.sent !== sentAt) return
      this.markUndone(index)
      release(this.nodes[index], this.keys, this.value)
    })
  }

  // When (monotonic) the keys of the holder seen by the last attempt have
  // run out on enough nodes for a quorum; none when the keys are free on a
  // majority already, or never expire.
  private holderGone(result: FanOut.FanOutResult<Answer, E>): number | undefined {
    const ttls = Arrays.empty<number>()
    let free = 0
    for (const answer of result.answers) {
      if (typeof answer !== "object" || answer._tag === "SettingConflict") continue
      if (answer._tag !== "Held") free++
      else if (answer.ttlMillis !== undefined) ttls.push(answer.ttlMillis)
    }
    const needed = this.quorum - free
    if (needed <= 0 || ttls.length < needed) return undefined
    // One node's ttl needs no sort (a sort showed in every refused permit's count).
    if (ttls.length > 1) ttls.sort(ascending)
    return this.time.now() + ttls[needed - 1] + 1
  }
}

const ignore = () => {}

const ascending = (a: number, b: number) => a - b

// Delete the keys that hold our value on one node, keeping the place in line, unawaited (an undo).
const release = (node: Node, keys: ReadonlyArray<string>, value: string): void => {
  const args = [keys, value, false, true] as const
  const byCallback = callOf(node)
  if (byCallback !== undefined) byCallback("release", args, ignore, ignore)
  else node.promises.release(...args).then(ignore, ignore)
}
