/**
 * The keys a manager found held lately, so that its next acquisition of one
 * skips the probe.
 *
 * The first attempt on one free key is a plain `SET NX PX` (the probe, see
 * attempt.ts), half the server time of the script that keeps the line.
 * On a key that was held a moment ago the probe is refused again, since a
 * release hands such a key to the next waiter in line instead of freeing it,
 * and the attempt then sends the script as well: two fan-outs where one does.
 * So an acquisition of a key this manager saw held within the last second
 * starts with the script. Skipping the probe is always correct; it is only
 * slower on a key that has become free.
 *
 * @internal
 */
export class ContendedKeys {
  /** When (monotonic ms) each key was last found held; the oldest first. */
  private readonly heldAt = new Map<string, number>()

  constructor(private readonly forMillis = 1000, private readonly most = 10_000) {}

  held(key: string, now: number): void {
    // Bounded: a manager that meets many keys forgets them all at once, and only probes again.
    if (this.heldAt.size >= this.most) this.heldAt.clear()
    this.heldAt.delete(key)
    this.heldAt.set(key, now)
  }

  isContended(key: string, now: number): boolean {
    const at = this.heldAt.get(key)
    if (at === undefined) return false
    if (now - at <= this.forMillis) return true
    this.heldAt.delete(key)
    return false
  }
}
