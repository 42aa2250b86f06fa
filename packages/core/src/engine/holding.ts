/**
 * A held lock's life on the engine's side: its validity deadline (moved by
 * extensions), its release, and its loss, with the callers that wait for
 * the loss. A shell's lock builds on it (internal/lock.ts).
 *
 * @internal
 */
import type { Node, NodeError, NodeOutcome } from "./node.js"
import * as Algorithm from "./algorithm.js"
import * as FanOut from "./fanOut.js"
import type { Time } from "./time.js"

/** Why a held lock was lost: its validity ran out, the nodes no longer hold it, or it was released. */
export type LossReason = "Expired" | "NotHeld" | "Released"

/**
 * How an extension ended: the deadline moved (`validityMillis` left), the
 * lock found lost (marked so), or not extended (too few nodes confirmed,
 * the lock may still be held until its deadline); with each node's outcome.
 */
export type Extension<E extends NodeError = NodeError> =
  | { readonly _tag: "Extended"; readonly validityMillis: number; readonly outcomes: ReadonlyArray<NodeOutcome<E>> }
  | { readonly _tag: "Lost"; readonly reason: LossReason; readonly outcomes: ReadonlyArray<NodeOutcome<E>> }
  | { readonly _tag: "NotExtended"; readonly outcomes: ReadonlyArray<NodeOutcome<E>> }

/** What an extension reads of the manager. */
export interface ExtensionSettings<E extends NodeError = NodeError> {
  readonly nodes: ReadonlyArray<Node>
  readonly quorum: number
  readonly driftFactor: number
  readonly quarantineMillis: number | undefined
  readonly nodeError: FanOut.Rules<unknown, E>["nodeError"]
}

// How a hold was lost. Not a literal (see attempt.ts, AttemptFields).
class Loss<E extends NodeError> {
  constructor(readonly reason: LossReason, readonly outcomes: ReadonlyArray<NodeOutcome<E>>) {}
}

/** A held lock as the engine keeps it; `E`: the error of a node's failure in its outcomes. */
export abstract class Holding<E extends NodeError = NodeError> {
  extensionCount = 0
  released = false
  /** Set once, when the lock is lost; its listeners are called at the same time. */
  protected lostAs: { readonly reason: LossReason; readonly outcomes: ReadonlyArray<NodeOutcome<E>> } | undefined
  /** Called once when the lock is lost (see `whenLost`). */
  private lostListeners: Set<() => void> | undefined

  constructor(
    /** The validity deadline (monotonic ms); moved by extensions. */
    public deadline: number,
    readonly keys: ReadonlyArray<string>,
    readonly value: string
  ) {}

  /** Whether the lock is still held at `now` (monotonic): not released, not lost, inside its validity. */
  isHeldAt(now: number): boolean {
    return !this.released && this.lostAs === undefined && now < this.deadline
  }

  /**
   * Why the lock no longer gives what only a holder may have (a fencing
   * token, a guarded write) at `now` (monotonic): lost, released, or past its
   * deadline, each marked as a loss on first sight; `undefined` while held.
   */
  lossAt(now: number): LossReason | undefined {
    if (this.lostAs === undefined) {
      if (this.released) this.markLostQuietly("Released")
      else if (now >= this.deadline) this.markLostQuietly("Expired")
    }
    return this.lostAs?.reason
  }

  /** Told of a loss other than a release, once (the shell counts it). */
  protected abstract lostFor(reason: LossReason): void

  /** Record the loss (the first reason wins) and call everything waiting for it. */
  markLostQuietly(reason: LossReason, outcomes: ReadonlyArray<NodeOutcome<E>> = []): void {
    if (this.lostAs !== undefined) return
    this.lostAs = new Loss(reason, outcomes)
    if (reason !== "Released") this.lostFor(reason)
    this.lostListeners?.forEach((listener) => listener())
  }

  /**
   * Call `lost` once, when the lock is lost: marked lost, or its deadline
   * passed (watched by one timer, set again when an extension moved the
   * deadline). Returns the way to stop watching.
   */
  whenLost(time: Time, lost: () => void): () => void {
    let watching = true
    let cancelTimer = () => {}
    const listeners = this.lostListeners ??= new Set()
    const stop = () => {
      watching = false
      cancelTimer()
      listeners.delete(lose)
    }
    const lose = () => {
      if (!watching) return
      stop()
      lost()
    }
    // A deadline is almost always cancelled by the release long before it comes: a `timeout` (the
    // live clock shares one timer per duration), in whole milliseconds, none before the deadline.
    const watchDeadline = () => {
      if (!watching) return
      const left = this.deadline - time.now()
      if (left <= 0) this.markLostQuietly("Expired")
      else cancelTimer = time.timeout(Math.ceil(left), watchDeadline)
    }
    if (this.lostAs !== undefined) {
      lose()
      return stop
    }
    listeners.add(lose)
    watchDeadline()
    return stop
  }

  /**
   * Set a new ttl on every node, counted only if a quorum confirmed within
   * the current validity (past the deadline, another client may already
   * have taken the lock); the deadline then moves to what the new ttl gives
   * from the moment the extension was sent. `done` once decided.
   */
  extendOn(
    settings: ExtensionSettings<E>,
    ttlMillis: number,
    timeoutMillis: number,
    time: Time,
    done: (end: Extension<E>) => void
  ): void {
    const start = time.now()
    if (start >= this.deadline) {
      this.markLostQuietly("Expired")
      return done({ _tag: "Lost", reason: "Expired", outcomes: [] })
    }
    const { driftFactor, nodeError, nodes, quarantineMillis, quorum } = settings
    const rules = FanOut.atQuorum(nodes, (extended: boolean) => extended, timeoutMillis, quarantineMillis, nodeError)
    FanOut.send(nodes, FanOut.call("extend", this.keys, this.value, ttlMillis), rules, time, ({ outcomes, yes }) => {
      const end = time.now()
      if (end >= this.deadline) {
        this.markLostQuietly("Expired", outcomes)
        return done({ _tag: "Lost", reason: "Expired", outcomes })
      }
      if (yes >= quorum && Algorithm.validity(ttlMillis, end - start, driftFactor) > 0) {
        this.deadline = start + ttlMillis - Algorithm.drift(ttlMillis, driftFactor)
        this.extensionCount++
        return done({ _tag: "Extended", validityMillis: this.deadline - end, outcomes })
      }
      if (Algorithm.majorityNotOurs(outcomes, quorum)) {
        this.markLostQuietly("NotHeld", outcomes)
        return done({ _tag: "Lost", reason: "NotHeld", outcomes })
      }
      done({ _tag: "NotExtended", outcomes })
    })
  }
}
