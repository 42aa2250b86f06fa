/**
 * The per-node timeouts of fan-outs on the live clock (liveTime.ts
 * `liveTime.timeout`), sharing one Node timer per duration.
 *
 * Almost every fan-out is decided long before its timeout. A timer per
 * fan-out is armed and cleared for nothing, and costs more than it seems:
 * when no other timer of its duration is pending (a sequential lock, say),
 * Node builds the duration's timer list and schedules it with libuv on
 * every arm, and tears it down on every clear. Here timeouts of one duration
 * wait in a queue, in the order they were started, which is the order they
 * are due. A cancelled timeout leaves the queue; the one timer stays armed
 * for whichever was first when it was set, and when it fires, it calls the
 * timeouts that are due and is set again for the first one left. So a lane
 * sets its timer about once per duration, however many fan-outs it serves.
 *
 * The timer keeps the process alive only while some timeout waits, as a
 * timer per fan-out did.
 *
 * @internal
 */

/** A started timeout; `cancel` it once its fan-out is decided. */
export interface Timeout {
  readonly dueAt: number
  readonly onDue: () => void
  readonly lane: Lane | undefined
  /** Its neighbours in its lane, while it waits there. */
  previous: Timeout | undefined
  next: Timeout | undefined
}

class Lane {
  // The waiting timeouts, oldest first: started in that order, they are due in that order.
  private first: Timeout | undefined = undefined
  private last: Timeout | undefined = undefined
  private timer: ReturnType<typeof setTimeout> | undefined = undefined

  constructor(readonly millis: number, private readonly lanes: Map<number, Lane>) {}

  start(onDue: () => void): Timeout {
    const timeout: Timeout = {
      dueAt: performance.now() + this.millis,
      onDue,
      lane: this,
      previous: this.last,
      next: undefined
    }
    if (this.last === undefined) this.first = timeout
    else this.last.next = timeout
    this.last = timeout
    if (this.timer === undefined) this.arm(this.millis)
    else if (timeout === this.first) this.timer.ref()
    return timeout
  }

  cancel(timeout: Timeout): void {
    const { next, previous } = timeout
    if (previous === undefined && next === undefined && this.first !== timeout) return
    if (previous === undefined) this.first = next
    else previous.next = next
    if (next === undefined) this.last = previous
    else next.previous = previous
    timeout.previous = timeout.next = undefined
    // Nothing waits: the timer, still armed for a timeout that left, no longer keeps the process alive.
    if (this.first === undefined) this.timer?.unref()
  }

  private arm(afterMillis: number): void {
    // Whole milliseconds: Node keeps a timer list per duration.
    this.timer = setTimeout(() => this.fire(), Math.max(1, Math.ceil(afterMillis)))
    if (this.first === undefined) this.timer.unref()
  }

  private fire(): void {
    this.timer = undefined
    const now = performance.now()
    const due: Array<() => void> = []
    while (this.first !== undefined && this.first.dueAt <= now) {
      due.push(this.first.onDue)
      this.cancel(this.first)
    }
    if (this.first === undefined) this.lanes.delete(this.millis)
    else this.arm(this.first.dueAt - now)
    // Last, so that the lane is in order whatever they do.
    for (const onDue of due) onDue()
  }
}

// Beyond what a Node timer can wait, a timeout never comes (as on Effect's clock).
const longest = 2 ** 31 - 1

const lanes = new Map<number, Lane>()

/** Calls `onDue` once `millis` have passed, unless cancelled before. */
export const start = (millis: number, onDue: () => void): Timeout => {
  if (millis > longest) return { dueAt: Infinity, onDue, lane: undefined, previous: undefined, next: undefined }
  let lane = lanes.get(millis)
  if (lane === undefined) {
    lane = new Lane(millis, lanes)
    lanes.set(millis, lane)
  }
  return lane.start(onDue)
}

export const cancel = (timeout: Timeout): void => timeout.lane?.cancel(timeout)
