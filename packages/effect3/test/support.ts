/** Helpers shared by this package's own test files (those of both lines are in the shared suites' support.ts). */
import { assert } from "@effect/vitest"
import { Effect, Fiber, Schedule } from "effect"
import * as Shared from "@effect-redlock/effect-suites/support.js"
import type * as Lock from "../src/Lock.js"
import type * as Redlock from "../src/Redlock.js"
import type * as RedisNode from "../src/RedisNode.js"

// What the shared Effect suites' helpers already give (written once for both lines).
export {
  expectEmpty,
  failureOf,
  memory,
  overlaps,
  recordSection,
  redis,
  redisManager,
  type Section
} from "@effect-redlock/effect-suites/support.js"
export { aclUser } from "@effect-redlock/fleet/effect3.js"

/** A retry that never comes within a test: only a wake can explain an acquisition. */
export const slowRetry = Schedule.spaced("10 seconds").pipe(Schedule.intersect(Schedule.recurs(5)))

/** Holds "key" from `holder`, lets `waiter` wait past its first renewal, releases: the milliseconds until it acquired. */
export const wokenAfterRelease = (
  holder: Redlock.Redlock["Type"],
  waiter: Redlock.Redlock["Type"],
  key: string,
  beforeRelease: Effect.Effect<void, unknown> = Effect.void,
  // The holder's release by default; another process's (a script on the test's own connections) where only the channel may tell.
  release?: (held: Lock.Lock) => Effect.Effect<void, unknown>
) =>
  Effect.gen(function*() {
    const held = yield* holder.acquire(key, { ttl: "10 seconds" })
    const waiting = yield* Effect.fork(Effect.scoped(Effect.zipRight(
      // A node timeout a loaded machine meets: with the 10 s ttl's default (100 ms) one late answer
      // refuses the woken attempt, and the next is 10 s away.
      waiter.acquire(key, { ttl: "10 seconds", retry: slowRetry, nodeTimeout: "1 second" }),
      Effect.sync(() => performance.now())
    )))
    // Past the renewal of the place taken by the first attempt (~350 ms): the next attempt on its own is 10 s away.
    yield* Effect.sleep("1 second")
    yield* beforeRelease
    const released = performance.now()
    if (release !== undefined) yield* release(held)
    else assert.strictEqual((yield* holder.release(held)).status, "Released")
    const acquired = yield* Fiber.join(waiting).pipe(Effect.timeout("5 seconds"))
    return acquired - released
  })

/** A node with its operations as effects too (see `effectsOf`). */
export type TestNode = RedisNode.RedisNode & RedisNode.EffectNode

/** A node with its operations as effects too, for tests that call a node directly (the shared suites' `effectsOf`, keeping its promises). */
export const effectsOf = (node: RedisNode.RedisNode): TestNode => ({ ...node, ...Shared.effectsOf(node) })
