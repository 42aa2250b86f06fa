/**
 * Waiting between attempts of an acquisition. The retry schedule says when
 * the next attempt is due, and it bounds the wait as it always did. A release
 * announced by a majority of nodes since the last attempt began (see
 * `RedisNode.watchReleases`) wakes the waiter earlier; such an extra attempt
 * does not use up the schedule. Nodes are watched from the first failed
 * attempt on, for as long as the acquisition waits: one that wins at once
 * pays nothing for waiting.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Random from "effect/Random"
import type * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleIntervals from "effect/ScheduleIntervals"
import * as Scope from "effect/Scope"
import type { RedisNode } from "../RedisNode.js"
import type { LockNotAcquired } from "../RedlockError.js"
import * as Monotonic from "./clock.js"

/**
 * Every waiter hears a release at about the same moment; if all tried at once
 * their votes would split and nobody would win. A random pause of up to 1 ms
 * (about the length of an attempt on a LAN) spreads them. Not on a test
 * clock, whose time would stop on the fraction of a millisecond.
 */
const spreadWake: Effect.Effect<void> = Effect.clockWith((clock) =>
  Monotonic.liveScheduler(clock) === undefined
    ? Effect.void
    : Effect.flatMap(Random.nextIntBetween(0, 1000), (micros) => Effect.sleep(Duration.micros(BigInt(micros))))
)

/** Who announced a release since the current attempt began; `woken` completes at a majority. */
class Announcements {
  private announced = new Set<number>()
  woken = Deferred.unsafeMake<void>(FiberId.none)

  constructor(private readonly quorum: number) {}

  heardFrom(index: number): void {
    this.announced.add(index)
    if (this.announced.size >= this.quorum) Deferred.unsafeDone(this.woken, Effect.void)
  }

  /** A new attempt starts: only announcements from now on count. */
  reset(): void {
    this.announced = new Set()
    this.woken = Deferred.unsafeMake<void>(FiberId.none)
  }
}

/**
 * After the first attempt failed with `error`: run `attempt` again after each
 * failure, until it succeeds or the schedule stops (then with the last
 * failure). `watch` says whether every node announces releases.
 */
export const retry = <A>(options: {
  readonly attempt: Effect.Effect<A, LockNotAcquired>
  readonly error: LockNotAcquired
  readonly schedule: Schedule.Schedule<unknown, LockNotAcquired>
  readonly nodes: ReadonlyArray<RedisNode>
  readonly keys: ReadonlyArray<string>
  readonly quorum: number
  readonly watch: boolean
}): Effect.Effect<A, LockNotAcquired> =>
  Effect.suspend(() => {
    const { attempt, keys, nodes, schedule } = options
    let state = schedule.initial
    let dueAt: number | undefined
    let watching: { readonly scope: Scope.CloseableScope; readonly announcements: Announcements } | undefined

    const startWatching = Effect.gen(function*() {
      const scope = yield* Scope.make()
      const announcements = new Announcements(options.quorum)
      watching = { scope, announcements }
      yield* Effect.forEach(
        nodes,
        (node, index) =>
          Effect.forEach(keys, (key) => Scope.extend(node.watchReleases!(key, () => announcements.heardFrom(index)), scope)),
        { discard: true }
      )
    })

    const again = (error: LockNotAcquired): Effect.Effect<A, LockNotAcquired> =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (dueAt === undefined || now >= dueAt) {
          const [next, , decision] = yield* schedule.step(now, error, state)
          state = next
          if (ScheduleDecision.isDone(decision)) return yield* Effect.fail(error)
          dueAt = ScheduleIntervals.start(decision.intervals)
        }
        if (watching === undefined && options.watch) yield* startWatching
        const due = Effect.as(Effect.sleep(Duration.millis(Math.max(0, dueAt - now))), false)
        const wokenEarly = watching === undefined
          ? yield* due
          : yield* Effect.raceFirst(due, Effect.as(Deferred.await(watching.announcements.woken), true))
        if (wokenEarly) yield* spreadWake
        else dueAt = undefined
        watching?.announcements.reset()
        return yield* Effect.catchAll(attempt, again)
      })

    return again(options.error).pipe(
      Effect.ensuring(Effect.suspend(() => watching === undefined ? Effect.void : Scope.close(watching.scope, Exit.void)))
    )
  })
