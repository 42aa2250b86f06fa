/**
 * Whether a server's wall clock jumped (Kleppmann's scenario, docs/safety.md):
 * a server whose clock leaps forward expires its keys early, so it may grant
 * a resource that a holder still owns on it. Each reading of the server's
 * `TIME` comes with the vote it would invalidate, between the moment its
 * command was sent and the moment its answer came, on this process's
 * monotonic clock. Between two readings the server's clock may advance at
 * most as far as the local clock did from the first command's sending to the
 * second one's answer, at the drift allowed; further, it jumped forward
 * (its keys may have expired early: it sits out the restart quarantine). It
 * may advance no less than from the first one's answer to the second one's
 * sending; less, it jumped back (its keys last longer: noted, no harm).
 *
 * The jumps seen add up to the server's lead: how far its clock moved
 * against this process's since the node's first reading. A fencing token
 * is at least its server's time (scripts.ts), so tokens issued while a
 * server led may stand above another server's time for as long as the lead
 * (engine/quarantine.ts, `clockLead`).
 *
 * @internal
 */

/** How fast or slow a server's clock may run against ours without counting as a jump. */
export const rateTolerance = 0.01

/** What a timer's resolution and `TIME`'s whole microseconds may add, in ms. */
const slackMillis = 2

/** One reading: the server's time (ms), and when its command was sent and answered here (monotonic ms). */
export interface Reading {
  readonly serverMillis: number
  readonly sentAtMillis: number
  readonly answeredAtMillis: number
}

/** What a reading tells against the one before. */
export type Jump =
  | { readonly _tag: "Forward"; readonly byMillis: number }
  | { readonly _tag: "Back"; readonly byMillis: number }

/** Follows one server's clock through its readings; a new connection's server starts afresh (`forget`). */
export class ServerClock {
  private last: Reading | undefined
  /** The sum of the jumps seen (ms, forward positive), readings on every connection included. */
  leadMillis = 0
  /** The largest lead there has been. */
  mostLeadMillis = 0

  /** The jump `reading` shows against the last one, if any; it becomes the last one. */
  read(reading: Reading): Jump | undefined {
    const last = this.last
    if (last === undefined || reading.answeredAtMillis < last.answeredAtMillis) {
      if (last === undefined) this.last = reading
      return undefined
    }
    this.last = reading
    const advanced = reading.serverMillis - last.serverMillis
    const atMost = (reading.answeredAtMillis - last.sentAtMillis) * (1 + rateTolerance) + slackMillis
    if (advanced > atMost) return this.lead({ _tag: "Forward", byMillis: advanced - atMost })
    const atLeast = Math.max(0, reading.sentAtMillis - last.answeredAtMillis) * (1 - rateTolerance) - slackMillis
    if (advanced < atLeast) return this.lead({ _tag: "Back", byMillis: atLeast - advanced })
    return undefined
  }

  private lead(jump: Jump): Jump {
    this.leadMillis += jump._tag === "Forward" ? jump.byMillis : -jump.byMillis
    this.mostLeadMillis = Math.max(this.mostLeadMillis, this.leadMillis)
    return jump
  }

  /** No reading kept: the next one is the first (another connection, maybe another server). */
  forget(): void {
    this.last = undefined
  }
}

/**
 * A `TIME` reply (`[seconds, microseconds]`, as strings or numbers) in ms, or
 * a timed script's (the same, then the vote's reply); `undefined`: not one.
 */
export const timeReply = (reply: unknown): number | undefined => {
  if (!Array.isArray(reply) || reply.length < 2 || reply.length > 3) return undefined
  const seconds = Number(reply[0])
  const micros = Number(reply[1])
  return Number.isFinite(seconds) && Number.isFinite(micros) ? seconds * 1000 + micros / 1000 : undefined
}
