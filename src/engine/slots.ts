/**
 * A permit's acquisition over `limit` slots, each an ordinary lock: rounds
 * over the slots, for the waiting in line (waiting.ts) to repeat on the
 * semaphore's schedule. One round tries every slot once, from the slot
 * whose release was announced last if any (it is free, unless another
 * waiter was quicker), else from a random one, so that permits spread over
 * the slots rather than every caller trying slot 0 first. The waiting
 * watches every slot, and a release of any slot that a majority of nodes
 * announces wakes the waiter for another round, as does the moment the
 * first slot's holder's keys run out (a crashed holder announces nothing).
 *
 * @internal
 */
import type { Node } from "./node.js"
import type { AttemptEnd, Refused } from "./attempt.js"
import type { Waiter } from "./waiting.js"

/** One slot's acquisition: a single attempt, taking no place in the slot's line. */
export interface SlotAttempt<G, R extends Refused> {
  attempt(leaseMillis: number, done: (end: AttemptEnd<G, R>) => void): void
  /** Set when a quorum refused the slot's setting (attempt.ts, `conflictOf`). */
  readonly conflict: string | undefined
  /** When (monotonic) the holder's keys of the slot run out on enough nodes, as its refused attempt saw them. */
  readonly holderGoneAt: number | undefined
}

export class SlotRounds<G, R extends Refused, S extends SlotAttempt<G, R>> implements Waiter<G, R> {
  // Slots have no line, so their releases name no waiter: none is ours.
  readonly value = ""
  readonly leaseEndsAt = undefined
  /** When (monotonic) the first slot of the last round runs out on enough nodes, as its attempts saw them. */
  holderGoneAt: number | undefined = undefined
  /** Slot attempts made, in every round. */
  attempts = 0
  /** Set when the caller gave up: a round in progress tries no further slot. */
  cancelled = false
  /** The slot acquisition that may hold keys: its attempt is in flight, or it was granted and not handed over yet. */
  holding: S | undefined
  /** The slot acquisition of the last refused attempt. */
  last: S | undefined
  /** The setting the resource's holders recorded, when a quorum refused ours: the rounds end. */
  conflict: string | undefined = undefined
  /** The slot whose release was announced last, if any since the last round. */
  private released: number | undefined

  constructor(
    readonly nodes: ReadonlyArray<Node>,
    readonly quorum: number,
    readonly watch: boolean,
    /** Each slot's lock key, by slot. */
    readonly keys: ReadonlyArray<string>,
    readonly nodeTimeoutMillis: number,
    private readonly slot: (index: number) => S,
    private readonly random: () => number
  ) {}

  lease(): number {
    return 0
  }

  readonly heard = (key: string): void => {
    this.released = this.keys.indexOf(key)
  }

  /** A round: `done` with the first slot granted, or the last slot's refusal. */
  attempt(_: number, done: (end: AttemptEnd<G, R>) => void): void {
    const limit = this.keys.length
    const first = this.released ?? Math.floor(this.random() * limit)
    this.released = undefined
    this.holderGoneAt = undefined
    const trySlot = (tried: number) => {
      const attempt = this.slot((first + tried) % limit)
      this.holding = attempt
      this.attempts++
      attempt.attempt(0, (end) => {
        if (end.granted !== undefined) return done(end)
        // Refused: the attempt sent the undo of whatever it set.
        this.holding = undefined
        this.last = attempt
        this.conflict = attempt.conflict
        const goneAt = attempt.holderGoneAt
        if (goneAt !== undefined && (this.holderGoneAt === undefined || goneAt < this.holderGoneAt)) this.holderGoneAt = goneAt
        if (tried + 1 < limit && !this.cancelled && this.conflict === undefined) return trySlot(tried + 1)
        done(end)
      })
    }
    trySlot(0)
  }
}
