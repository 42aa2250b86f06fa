/**
 * How `redlock run` retries a refused lock: with `--wait`, every ~100 ms
 * (jittered) until the wait is over; without it, a resource someone holds
 * (or waits for ahead of us) is refused at once (exit 75), but nodes that
 * could not decide (slow, unreachable, or sitting out their quarantine) are
 * asked again for up to 2 s, so that exit 76 means they are really
 * unavailable, not that one answer came late.
 */
import type { RefusalReason } from "@effect-redlock/core/engine/attempt.js"
import type { Retry } from "@effect-redlock/core/engine/waiting.js"
import { policyOf, type Refusal, type RetryPolicy } from "@effect-redlock/core/manager/retry.js"

// One wait's steps: a class, not a literal (see core engine/attempt.ts, AttemptFields).
class Spaced implements Retry<Refusal> {
  private startedAt: number | undefined
  constructor(
    private readonly delayMillis: number,
    private readonly forMillis: number,
    private readonly retries: (reason: RefusalReason) => boolean,
    private readonly random: () => number
  ) {}
  step(refused: Refusal, wallNow: number, next: (delayMillis: number | undefined) => void): void {
    this.startedAt ??= wallNow
    const { reason } = refused.refusal as { readonly reason: RefusalReason }
    // Jittered as Effect's Schedule.jittered: 0.8 to 1.2 times the delay.
    const delay = Math.round(this.delayMillis * (0.8 + 0.4 * this.random()))
    next(this.retries(reason) && wallNow - this.startedAt + delay <= this.forMillis ? delay : undefined)
  }
}

const spaced = (delayMillis: number, forMillis: number, retries: (reason: RefusalReason) => boolean): RetryPolicy =>
  policyOf({ waits: true, start: (random) => new Spaced(delayMillis, forMillis, retries, random) })

/** `--wait`: until it is over, whatever the refusal. */
export const waiting = (waitMillis: number): RetryPolicy => spaced(100, waitMillis, () => true)

/** No `--wait`: nodes that could not decide are asked again for 2 s; a held resource is refused at once. */
export const busyNodes: RetryPolicy = spaced(
  200,
  2_000,
  (reason) => reason === "NoQuorum" || reason === "ValidityExpired"
)
