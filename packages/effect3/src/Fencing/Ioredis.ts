/**
 * Writes to Redis protected by a fencing token: the storage side of fencing.
 *
 * A lock holder that was paused past its validity does not know that it lost
 * the lock. If every write carries the lock's fencing token and the storage
 * refuses a token smaller than one it has already seen, that holder's late
 * write is refused instead of overwriting the work of the next holder.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type { Redis } from "ioredis"
import { makeNodeError } from "../internal/nodes.js"
import { fencedSet } from "@effect-redlock/core/nodes/ioredis/fencedSet.js"
import type { RedisNodeError } from "../RedisNode.js"
import { StaleFencingToken } from "../RedlockError.js"

/**
 * Options of a fenced write.
 *
 * @since 0.1.0
 * @category models
 */
export interface FencedSetOptions {
  readonly key: string
  readonly value: string
  readonly token: bigint
  /** Where the highest token seen for `key` is kept. Default `${key}:fencing-token`. */
  readonly tokenKey?: string | undefined
}

/**
 * `SET key value` in one atomic script, only if `token` is at least every
 * token seen for `key`; fails with `StaleFencingToken` otherwise. An equal
 * token is the same holder writing again (every acquisition gets a larger
 * one), so a holder may write as often as it needs.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Redlock } from "effect-redlock"
 * import * as Fenced from "effect-redlock/Fencing/Ioredis"
 * import { Redis } from "ioredis"
 *
 * const storage = new Redis()
 * const save = Effect.gen(function*() {
 *   const lock = yield* Redlock.acquire("report", { ttl: "10 seconds" })
 *   const token = yield* lock.fencingToken
 *   yield* Fenced.set(storage, { key: "report:latest", value: "...", token })
 * }).pipe(Effect.scoped)
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const set = (
  client: Redis,
  options: FencedSetOptions
): Effect.Effect<void, StaleFencingToken | RedisNodeError> =>
  Effect.flatMap(
    Effect.tryPromise({
      try: () => fencedSet(client, makeNodeError, options),
      catch: (error) => error as RedisNodeError
    }),
    (stale) => stale === undefined ? Effect.void : Effect.fail(new StaleFencingToken(stale, true))
  )
