/**
 * A held lock's life on the engine's side: its validity deadline (moved by
 * extensions), its release, and its loss, with the callers that wait for
 * the loss. A shell's lock builds on it (internal/lock.ts).
 *
 * @internal
 */
import type { NodeOutcome } from "../RedisNode.js"
import type { Time } from "./time.js"

/** Why a held lock was lost: its validity ran out, the nodes no longer hold it, or it was released. */
export type LossReason = "Expired" | "NotHeld" | "Released"

export abstract class Holding {
  extensionCount = 0
  released = false
  /** Set once, when the lock is lost; its listeners are called at the same time. */
  protected lostAs: { readonly reason: LossReason; readonly outcomes: ReadonlyArray<NodeOutcome> } | undefined
  /** Called once when the lock is lost (see `whenLost`). */
  private lostListeners: Set<() => void> | undefined

  constructor(
    /** The validity deadline (monotonic ms); moved by extensions. */
    public deadline: number
  ) {}

  /** Told of a loss other than a release, once (the shell counts it). */
  protected abstract lostFor(reason: LossReason): void

  /** Record the loss (the first reason wins) and call everything waiting for it. */
  markLostQuietly(reason: LossReason, outcomes: ReadonlyArray<NodeOutcome> = []): void {
    if (this.lostAs !== undefined) return
    this.lostAs = { reason, outcomes }
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
    const watchDeadline = () => {
      if (!watching) return
      const left = this.deadline - time.now()
      if (left <= 0) this.markLostQuietly("Expired")
      else cancelTimer = time.schedule(left, watchDeadline)
    }
    if (this.lostAs !== undefined) {
      lose()
      return stop
    }
    listeners.add(lose)
    watchDeadline()
    return stop
  }
}
