/**
 * Waiting between attempts of an acquisition. The retry schedule says when
 * the next attempt is due, and it bounds the wait as it always did. Two
 * things wake a waiter earlier, for an extra attempt that does not use up the
 * schedule:
 * - a release announced by a majority of nodes since the last attempt began
 *   (see `RedisNode.watchReleases`) that names this waiter as the first in
 *   line, or nobody: the others in line sleep on, so one release wakes one
 *   waiter instead of a herd;
 * - the moment the holder's keys run out on enough nodes, as the last
 *   attempt's answers told (a crashed holder announces nothing);
 * - the end of its place in line coming near: the attempt renews it.
 * Nodes are watched from the first failed attempt on, for as long as the
 * acquisition waits: one that wins at once pays nothing for waiting. A node
 * that had to subscribe first may have missed a release in between: the
 * waiter then tries again at once.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import type * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleIntervals from "effect/ScheduleIntervals"
import * as Scope from "effect/Scope"
import type { RedisNode } from "../RedisNode.js"
import type { LockNotAcquired } from "../RedlockError.js"

/** Who announced a release for us since the current attempt began; `woken` completes at a majority. */
class Announcements {
  private announced = new Set<number>()
  woken = Deferred.unsafeMake<void>(FiberId.none)

  constructor(private readonly quorum: number, private readonly value: string) {}

  heard(index: number, next: string): void {
    if (next !== "" && next !== this.value) return
    this.announced.add(index)
    if (this.announced.size >= this.quorum) Deferred.unsafeDone(this.woken, Effect.void)
  }

  /** A new attempt starts: only announcements from now on count. */
  reset(): void {
    this.announced = new Set()
    this.woken = Deferred.unsafeMake<void>(FiberId.none)
  }
}

export interface RetryOptions<A> {
  /** One attempt, staying in line for the given lease when refused. */
  readonly attempt: (leaseMillis: number) => Effect.Effect<A, LockNotAcquired>
  /** The first attempt's failure. */
  readonly error: LockNotAcquired
  readonly schedule: Schedule.Schedule<unknown, LockNotAcquired>
  readonly nodes: ReadonlyArray<RedisNode>
  readonly keys: ReadonlyArray<string>
  readonly value: string
  readonly quorum: number
  /** Whether every node announces releases. */
  readonly watch: boolean
  /** How long to hold a place in line when the next attempt is due in `intervalMillis`. */
  readonly lease: (intervalMillis: number) => number
  /** Wall-clock ms at which the last attempt expects the holder's keys to have run out on enough nodes. */
  readonly holderGoneAt: () => number | undefined
  /** Wall-clock ms at which the place in line taken by the last attempt ends, if it took one. */
  readonly leaseEndsAt: () => number | undefined
  /** Bound on waiting for the nodes' subscriptions. */
  readonly nodeTimeout: Duration.Duration
}

/**
 * After the first attempt failed: run `attempt` again after each failure,
 * until it succeeds or the schedule stops (then with the last failure).
 */
export const retry = <A>(options: RetryOptions<A>): Effect.Effect<A, LockNotAcquired> =>
  Effect.suspend(() => {
    const { attempt, keys, nodes, schedule } = options
    let state = schedule.initial
    let dueAt: number | undefined
    let intervalMillis = 0
    let watching: { readonly scope: Scope.CloseableScope; readonly announcements: Announcements } | undefined

    /** Watch every node; `true` when a release may have been missed meanwhile. */
    const startWatching = Effect.gen(function*() {
      const scope = yield* Scope.make()
      const announcements = new Announcements(options.quorum, options.value)
      watching = { scope, announcements }
      let missed = false
      return yield* Effect.forEach(
        nodes,
        (node, index) =>
          Effect.forEach(keys, (key) =>
            Effect.map(
              Scope.extend(node.watchReleases!(key, (next) => announcements.heard(index, next)), scope),
              (fresh) => void (missed ||= fresh)
            )),
        { concurrency: "unbounded", discard: true }
      ).pipe(
        Effect.interruptible,
        // Not listening everywhere yet: a release may go unheard until then.
        Effect.timeoutTo({ duration: options.nodeTimeout, onSuccess: () => missed, onTimeout: () => true })
      )
    })

    const again = (error: LockNotAcquired): Effect.Effect<A, LockNotAcquired> =>
      Effect.gen(function*() {
        let now = yield* Clock.currentTimeMillis
        if (dueAt === undefined || now >= dueAt) {
          const [next, , decision] = yield* schedule.step(now, error, state)
          state = next
          if (ScheduleDecision.isDone(decision)) return yield* Effect.fail(error)
          dueAt = ScheduleIntervals.start(decision.intervals)
          intervalMillis = Math.max(0, dueAt - now)
        }
        const missed = watching === undefined && options.watch ? yield* startWatching : false
        if (!missed) {
          // Also before the place in line runs out: the attempt renews it (it may reach the node a node timeout later).
          const renewAt = (options.leaseEndsAt() ?? Infinity) - Duration.toMillis(options.nodeTimeout)
          const wakeAt = Math.min(dueAt, options.holderGoneAt() ?? Infinity, renewAt)
          const sleep = Effect.sleep(Duration.millis(Math.max(0, Math.ceil(wakeAt - now))))
          yield* watching === undefined ? sleep : Effect.raceFirst(sleep, Deferred.await(watching.announcements.woken))
          now = yield* Clock.currentTimeMillis
          if (now >= dueAt) dueAt = undefined
        }
        if (watching !== undefined && !missed) watching.announcements.reset()
        return yield* Effect.catchAll(attempt(options.lease(intervalMillis)), again)
      })

    return again(options.error).pipe(
      Effect.ensuring(Effect.suspend(() => watching === undefined ? Effect.void : Scope.close(watching.scope, Exit.void)))
    )
  })
