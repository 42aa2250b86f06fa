/**
 * Waiting between attempts of an acquisition. Every attempt after the first
 * is one step of the retry schedule, so a schedule of n retries makes at
 * most n + 1 attempts, in every front end, and one re-check more when a
 * node was not yet listening to the key's releases as the waiting began (a
 * release may have been missed: the first attempt's refusal is checked
 * again at once, and the schedule's wait goes on; a schedule that counts
 * every attempt, node-redlock's `retryCount`, is stepped by it too: see
 * `Retry.stepsRechecks`). The step's delay is the longest
 * the waiter sleeps before that attempt; four things bring it forward:
 * - a release announced since the last attempt began (see
 *   `RedisNode.watchReleases`) that names this waiter as the first in line
 *   (a slot's release names as many waiters as slots are free):
 *   the others in line sleep on, so one release wakes one waiter instead of
 *   a herd. The first node's announcement is enough: a release is sent to
 *   every node at once, so the attempt it starts reaches each node after the
 *   release did (measured on 5 local servers: no more refused attempts than
 *   waiting for a majority's announcements, and the lock changes hands
 *   0.2-0.5 ms sooner). A release that names nobody (an empty line) wakes
 *   every waiter, so it counts only once a majority of nodes announced it: a
 *   node whose line was lost (restarted empty) does not wake a herd on each
 *   release. A slot's release that handed this waiter a slot counts as that
 *   node's word: once a quorum handed the same slot the waiter holds it with
 *   no attempt at all (`Waiter.grantHanded`); until then it waits a node
 *   timeout for the other nodes' hand-overs, then attempts;
 * - a node that listens again after a reconnection (its releases may have
 *   gone unheard): every waiter of its keys;
 * - the moment the holder's keys run out on enough nodes, as the last
 *   attempt's answers told (a crashed holder announces nothing);
 * - the end of its place in line coming near: the attempt renews it.
 * Nodes are watched from the first failed attempt on, for as long as the
 * acquisition waits: one that wins at once pays nothing for waiting. A node
 * that had to subscribe first may have missed a release in between: the
 * waiter then tries again at once. A waiter that cannot hear a quorum of
 * nodes (`hearsQuorum`) watches none, and polls on its schedule.
 *
 * The loop (`untilGranted`) is plain code with timers and callbacks on the
 * time its caller hands it (time.ts), where a handoff is decided by how soon
 * the woken waiter's attempt leaves; its state and decisions are
 * `WaitState`'s. The retry schedule is the caller's (`Retry`).
 *
 * @internal
 */
import type { Node, ReleaseWatch } from "./node.js"
import * as Arrays from "./arrays.js"
import { handOversDecided, heardBy } from "./slots.js"
import type { Time } from "./time.js"

/**
 * Whether a release for us was announced since the current attempt began,
 * and the slots nodes handed us (kept across attempts).
 */
class Announcements {
  woken = false
  /** Called once when woken, if set: the waiter is asleep. */
  onWoken: (() => void) | undefined = undefined
  /** The nodes that announced a release naming nobody; made when the first one does. */
  private namingNobody: Set<number> | undefined
  /** The slot (its number) each node handed this waiter, by node index; made when the first one does. */
  handed: Map<number, number> | undefined
  /** Cancels the wake set when a node handed a slot and the others' hand-overs may still come. */
  private cancelGrace: (() => void) | undefined

  constructor(private readonly waiter: Watched, private readonly time: Time) {}

  heard(index: number, next: string | null): void {
    const { quorum, value } = this.waiter
    if (next !== null && next !== "") {
      const heard = heardBy(next, value)
      if (heard === undefined) return
      if (heard !== "named") return this.handedBy(index, heard)
    }
    if (this.woken) return
    if (next === "") {
      this.namingNobody ??= new Set()
      this.namingNobody.add(index)
      if (this.namingNobody.size < quorum) return
    }
    this.wake()
  }

  /**
   * A node handed us a slot: wake once a quorum handed the same one (the
   * waiter holds it then, `Waiter.grantHanded`, or its attempt finds it
   * held where a hand-over does not count alone: every hand-over counts
   * here) or none can; else within a node timeout, for an attempt, should
   * the others' hand-overs not come.
   */
  private handedBy(index: number, slot: number): void {
    this.handed ??= new Map()
    this.handed.set(index, slot)
    if (this.woken) return
    const { nodes, quorum } = this.waiter
    if (handOversDecided(this.handed, nodes.length, quorum)) {
      return this.wake()
    }
    this.cancelGrace ??= this.time.schedule(this.waiter.nodeTimeoutMillis, () => {
      this.cancelGrace = undefined
      if (!this.woken) this.wake()
    })
  }

  private wake(): void {
    this.woken = true
    this.onWoken?.()
  }

  /** A new attempt starts: only announcements from now on wake it (slots handed stay). */
  reset(): void {
    this.woken = false
    this.namingNobody?.clear()
    this.stop()
  }

  stop(): void {
    this.cancelGrace?.()
    this.cancelGrace = undefined
  }
}

/**
 * Sleep for `millis`, or until woken by announcements, then call `wake`:
 * one timer and one callback, no fiber. Returns the cancel.
 */
const napThen = (
  time: Time,
  millis: number,
  announcements: Announcements | undefined,
  wake: () => void
): () => void => {
  if (announcements?.woken) {
    wake()
    return () => {}
  }
  const cancel = time.schedule(millis, () => {
    if (announcements !== undefined) announcements.onWoken = undefined
    wake()
  })
  if (announcements !== undefined) {
    announcements.onWoken = () => {
      cancel()
      announcements.onWoken = undefined
      wake()
    }
  }
  return () => {
    cancel()
    if (announcements !== undefined) announcements.onWoken = undefined
  }
}

/**
 * Whether the releases that at least `quorum` of the nodes announce reach
 * this process (see `RedisNode.hearsReleases`). A waiter that hears fewer
 * takes no place in line: a key handed to it would sit free until its next
 * scheduled attempt, while the others wait behind it.
 */
export const hearsQuorum = (nodes: ReadonlyArray<Node>, quorum: number): boolean => {
  let hearing = 0
  for (const node of nodes) if (node.watchReleasesNow !== undefined && node.hearsReleases?.() !== false) hearing++
  return hearing >= quorum
}

/** What waiting reads of an acquisition (see manager/acquisition.ts), as it is after each attempt. */
export interface Watched {
  readonly nodes: ReadonlyArray<Node>
  /** The keys whose release channels to watch (a resource's slots share one: engine/slots.ts, lineOf). */
  readonly watchKeys: ReadonlyArray<string>
  readonly value: string
  /** How many nodes must announce a release that names nobody. */
  readonly quorum: number
  /** Whether every node announces releases. */
  readonly watch: boolean
  /** Bound on waiting for the nodes' subscriptions (ms). */
  readonly nodeTimeoutMillis: number
  /** When (monotonic ms) the last attempt expects the holder's keys to have run out on enough nodes. */
  readonly holderGoneAt: number | undefined
  /** When (monotonic ms) the place in line taken by the last attempt ends, if it took one. */
  readonly leaseEndsAt: number | undefined
  /** How long to hold a place in line when the next attempt is due in `intervalMillis`. */
  lease(intervalMillis: number): number
  /** Set when a quorum refused the acquisition's setting (attempt.ts, `conflictOf`): no attempt can succeed. */
  readonly conflict?: string | undefined
}

/**
 * A retry schedule as the waiting steps it, one per wait (it keeps the
 * schedule's state). After each refused attempt that was due, `step` is
 * given the refusal and the time (monotonic and wall clock), and answers
 * once, through `next`: the delay before the next attempt (ms), or
 * `undefined` when the schedule is done; or through `failed` (a schedule
 * that broke).
 */
export interface Retry<R> {
  step(
    refused: R,
    wallNow: number,
    next: (delayMillis: number | undefined) => void,
    failed: (cause: unknown) => void
  ): void
  /**
   * Whether the re-check of a refusal steps the schedule too, as every other
   * attempt does (node-redlock's `retryCount` counts attempts); otherwise it
   * is free, and the schedule's wait goes on after it.
   */
  readonly stepsRechecks?: boolean | undefined
}

/**
 * The state of one wait: the time the schedule's next attempt is due, the
 * announcements heard, and the watches to stop whichever way the wait ends.
 */
class WaitState {
  /** When (monotonic ms) the schedule's next attempt is due. */
  private dueAt = 0
  private intervalMillis = 0
  announcements: Announcements | undefined
  // Not a literal: filled with younger watches (see attempt.ts, AttemptFields).
  private readonly watches = Arrays.empty<ReleaseWatch>()

  constructor(private readonly waiter: Watched, readonly time: Time) {}

  now(): number {
    return this.time.now()
  }

  /**
   * The schedule asked for `delayMillis` at `now`: a due time on the
   * monotonic timeline, which a clock step cannot stretch or shorten.
   */
  delayed(now: number, delayMillis: number): void {
    this.intervalMillis = Math.max(0, delayMillis)
    this.dueAt = now + this.intervalMillis
  }

  needsWatching(): boolean {
    return this.announcements === undefined && this.waiter.watch
  }

  /**
   * Watch every node from the first wait on (each registers its watches at
   * once, `RedisNode.watchReleasesNow`); `done` is called with whether a
   * release may have been missed meanwhile (a node was not listening yet:
   * it is waited for, within the node timeout).
   */
  watching(done: (missed: boolean) => void): void {
    const { nodes, watchKeys } = this.waiter
    const onRelease = this.listen()
    nodes.forEach((node, index) => {
      for (const key of watchKeys) this.watches.push(node.watchReleasesNow!(key, onRelease(index)))
    })
    const pending = this.pending()
    if (pending.length === 0) return done(false)
    let ready = false
    const readyOrTimedOut = () => {
      if (ready) return
      ready = true
      cancel()
      done(true)
    }
    const cancel = this.time.schedule(this.waiter.nodeTimeoutMillis, readyOrTimedOut)
    Promise.all(pending).then(readyOrTimedOut, readyOrTimedOut)
  }

  // The announcements of this wait, and the callback of a node's watches.
  private listen(): (index: number) => (next: string | null) => void {
    const heard = new Announcements(this.waiter, this.time)
    this.announcements = heard
    return (index) => (next) => heard.heard(index, next)
  }

  // The watches whose node is not listening yet (a loop: flatMap cost ~2 µs of a permit's CPU).
  private pending(): Array<Promise<void>> {
    const pending: Array<Promise<void>> = []
    for (const watch of this.watches) if (watch.ready !== undefined) pending.push(watch.ready)
    return pending
  }

  /**
   * How long to nap from `now`: until the schedule's due time, the holder's
   * keys running out, or the time to renew the place in line (the attempt
   * renews it; it may reach the node a node timeout later).
   */
  napMillis(now: number): number {
    const renewAt = (this.waiter.leaseEndsAt ?? Infinity) - this.waiter.nodeTimeoutMillis
    const wakeAt = Math.min(this.dueAt, this.waiter.holderGoneAt ?? Infinity, renewAt)
    return Math.max(0, Math.ceil(wakeAt - now))
  }

  /** A nap ended: only announcements from now on count. */
  woke(): void {
    this.announcements?.reset()
  }

  /** The lease of the next attempt's place in line. */
  lease(): number {
    return this.waiter.lease(this.intervalMillis)
  }

  /** The lock a quorum of nodes handed over, if they did (see `Waiter.grantHanded`). */
  handedLock<G>(waiter: Pick<Waiter<G, unknown>, "grantHanded">): G | undefined {
    const handed = this.announcements?.handed
    return handed === undefined || handed.size === 0 ? undefined : waiter.grantHanded(handed)
  }

  stop(): void {
    for (const watch of this.watches) watch.stop()
    this.announcements?.stop()
  }
}

/** How an attempt ended: the granted lock, or the refusal `R`. */
export type AttemptEnd<G, R> = { readonly granted: G } | ({ readonly granted: undefined } & R)

/** How a wait ended: granted, refused (the schedule is done: the last refusal), or its schedule failed. */
export type WaitEnd<G, R> =
  | { readonly _tag: "Granted"; readonly lock: G }
  | { readonly _tag: "Refused"; readonly refused: R }
  | { readonly _tag: "Failed"; readonly cause: unknown }

/** A waiter: what waiting reads of it, and its attempts. */
export interface Waiter<G, R> extends Watched {
  /** One attempt, staying in line for the given lease when refused: `done` is called once. */
  attempt(leaseMillis: number, done: (end: AttemptEnd<G, R>) => void): void
  /**
   * The lock, when a quorum of the nodes that count (attempt.ts, `countsHanded`) handed
   * this waiter the same slot (slot number by node index) and its validity
   * is left; no attempt is sent.
   */
  grantHanded(handed: ReadonlyMap<number, number>): G | undefined
}

/**
 * Attempts again, waiting in between as the schedule says (woken early as
 * described above), until one is granted or the schedule ends. The nap is a
 * timer, the announcement that ends it sends the next attempt at once, and
 * nothing runs between attempts. `done` is called once, with the granted
 * lock, the last refusal, or the failure of the schedule.
 * Returns the cancel, which says whether an attempt was in flight (it may
 * have taken keys: the caller leaves every line then).
 */
export const untilGranted = <G, R>(
  waiter: Waiter<G, R>,
  refused: R,
  retry: Retry<R>,
  time: Time,
  done: (end: WaitEnd<G, R>) => void
): () => { readonly inFlight: boolean } => {
  const wait = new WaitState(waiter, time)
  let stopped = false
  let inFlight = false
  let cancelNap: (() => void) | undefined
  // The attempt out is the re-check of a refusal a missed release may have made stale: it steps no schedule.
  let recheck = false

  const finish = (end: WaitEnd<G, R>) => {
    stopped = true
    wait.stop()
    done(end)
  }
  const granted = (lock: G) => finish({ _tag: "Granted", lock })
  const again = (refused: R) => {
    // Slots handed over while the attempt was out.
    const handed = wait.handedLock(waiter)
    if (handed !== undefined) return granted(handed)
    // The resource's holders use another setting: the schedule is not asked, the refusal is final.
    if (waiter.conflict !== undefined) return finish({ _tag: "Refused", refused })
    // Every refused attempt steps the schedule, an attempt brought forward too: the schedule bounds the attempts.
    const now = wait.now()
    if (recheck) {
      recheck = false
      if (retry.stepsRechecks !== true) return napThenAttempt(now)
    }
    retry.step(refused, time.wallNow(), (delayMillis) => {
      if (stopped) return
      if (delayMillis === undefined) return finish({ _tag: "Refused", refused })
      wait.delayed(now, delayMillis)
      watchThenNap(now)
    }, (cause) => {
      if (!stopped) finish({ _tag: "Failed", cause })
    })
  }
  const watchThenNap = (now: number) => {
    if (!wait.needsWatching()) return napThenAttempt(now)
    const watched = (missed: boolean) => {
      // Watches registered after a cancel are stopped too.
      if (stopped) return wait.stop()
      if (missed) {
        recheck = true
        return attempt()
      }
      napThenAttempt(now)
    }
    wait.watching(watched)
  }
  const napThenAttempt = (now: number) => {
    cancelNap = napThen(time, wait.napMillis(now), wait.announcements, () => {
      cancelNap = undefined
      wait.woke()
      const handed = wait.handedLock(waiter)
      if (handed !== undefined) return granted(handed)
      attempt()
    })
  }
  const attempt = () => {
    inFlight = true
    waiter.attempt(wait.lease(), (end) => {
      inFlight = false
      if (stopped) return
      if (end.granted === undefined) return again(end as R)
      granted(end.granted)
    })
  }

  again(refused)
  return () => {
    stopped = true
    cancelNap?.()
    wait.stop()
    return { inFlight }
  }
}
