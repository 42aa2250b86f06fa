/**
 * Handoffs to one waiting acquisition. A waiter on one key that joins the
 * line asks for a handoff numbered by its attempt (`RedisNode.Turn.epoch`):
 * when the holder releases and the waiter is first in line, the release sets
 * the key to the waiter's value itself and announces `"=value:epoch"`, which
 * saves the waiter an attempt.
 *
 * A handoff counts only if it can still stand: it answers the current
 * attempt (epoch), and no clean-up of ours was sent to that node since (the
 * clean-up of a refused attempt deletes our key where it may be set, and
 * messages travel on another connection than replies, so their order is
 * unknown). The key was set after the current attempt was sent (it set our
 * place in line), so a lock made of handoffs from a majority is valid until
 * that moment + ttl − drift, as if the attempt had taken until now.
 *
 * @internal
 */

export type Heard = "handoff" | "named" | "other"

export class Handoffs {
  private readonly granted = new Set<number>()
  /** Nodes sent a clean-up since the current attempt: their handoffs of it are void. */
  private readonly cleanedUp = new Set<number>()

  constructor(
    private readonly value: string,
    /** The current attempt's number, and when it was sent (monotonic ms). */
    public epoch: number,
    public epochStart: number
  ) {}

  /** Attempt `epoch` is sent now: earlier handoffs are answered by it. */
  attempt(epoch: number, now: number): void {
    this.epoch = epoch
    this.epochStart = now
    this.granted.clear()
    this.cleanedUp.clear()
  }

  /** Clean-ups were sent to these nodes: what they handed over may be undone. */
  cleaned(indices: Iterable<number>): void {
    for (const index of indices) {
      this.granted.delete(index)
      this.cleanedUp.add(index)
    }
  }

  /**
   * A message from node `index`: a handoff to us (counted when it is of the
   * current attempt), our name (or nobody's: the key is free for anyone in
   * line), or someone else's turn.
   */
  heard(index: number, message: string): Heard {
    if (message.startsWith("=")) {
      const colon = message.lastIndexOf(":")
      if (message.slice(1, colon) !== this.value) return "other"
      // A clean-up takes us out of the line, so a handoff it undid can only be announced late, never made later.
      if (Number(message.slice(colon + 1)) === this.epoch && !this.cleanedUp.has(index)) this.granted.add(index)
      return "handoff"
    }
    return message === "" || message === this.value ? "named" : "other"
  }

  /** The nodes whose handoff to us stands. */
  get nodes(): ReadonlySet<number> {
    return this.granted
  }
}
