/**
 * The lock manager for promise code, with no Effect: `makeRedlock(nodes,
 * options)` → `acquire` / `release` / `extend` / `using` / `inspect` /
 * `close`, and a semaphore's permits and a read-write lock's holds; the
 * same engine and guarantees as the Effect API. Values are plain: times in
 * milliseconds, `null` for nothing, a hold's `remaining()` and
 * `fencingToken()` as methods. Failures reject with the typed errors
 * exported here (`LockNotAcquired`, `LockLost`, ...), which are `Error`s
 * with a `_tag`.
 *
 * Both Effect packages re-export this module as `effect-redlock/Promise`
 * (there it also takes their layers of nodes and their Schedules); a plain
 * Node project needs no `effect` installed.
 *
 * @example
 * ```ts
 * import { makeRedlock } from "effect-redlock/Promise"
 *
 * const redlock = await makeRedlock([{ port: 6379 }, { port: 6380 }, { port: 6381 }])
 * const lock = await redlock.acquire("orders:42", { ttl: 10_000 })
 * try {
 *   // critical section
 * } finally {
 *   await redlock.release(lock)
 * }
 * // or, released however the body ends, extended while it runs:
 * await redlock.using("cache:rebuild", { ttl: 10_000, autoExtend: true }, async (lock, signal) => {
 *   if (signal.aborted) throw signal.reason
 * })
 * await redlock.close()
 * ```
 *
 * @since 0.1.0
 */
import type { Node } from "./engine/node.js"
import * as LiveTime from "./engine/liveTime.js"
import { Problem } from "./engine/options.js"
import { MemoryFleet } from "./nodes/memory.js"
import type { IoredisClient } from "./nodes/ioredis/client.js"
import type { IoredisCluster } from "./nodes/ioredis/cluster.js"
import type { GlideClient } from "./nodes/glide/client.js"
import type { NodeRedisClient } from "./nodes/nodeRedis/client.js"
import type * as NodeOptions from "./nodes/nodeOptions.js"
import type { DurationInput } from "./manager/durations.js"
import { InvalidOptions, makeNodeError } from "./manager/errors.js"
import type { Logger, PromiseRedlock } from "./manager/manager.js"
import * as OpenNodes from "./manager/openNodes.js"
import * as Retry from "./manager/retry.js"
import type { ManagerOptions } from "./manager/settings.js"

export type { AcquireOptions } from "./manager/acquisition.js"
export type { DurationInput, DurationUnit, EffectDuration } from "./manager/durations.js"
export {
  ExtensionLimitReached,
  FencingTokenUnavailable,
  InvalidOptions,
  LockLost,
  LockNotAcquired,
  LockNotExtended,
  ManagerClosed,
  type Outcome,
  RedisNodeError,
  type RedlockError,
  SettingConflict
} from "./manager/errors.js"
export type { Inspection, PermitsInspection, ReadWriteInspection } from "./manager/inspection.js"
export type { Logger, PromiseLock, PromiseRedlock, ReleaseResult } from "./manager/manager.js"
export type { RetryOptions, RetryPolicy } from "./manager/retry.js"
export type { ManagerOptions, RetryInput } from "./manager/settings.js"
export type { PermitOptions, ReadWriteOptions } from "./manager/slots.js"

/**
 * The nodes of a lock manager: where each server is (ioredis is used, or
 * node-redis where only `redis` is installed), a client of the user's own
 * (ioredis or iovalkey, a `Redis` or a `Cluster`, node-redis, or a Valkey
 * GLIDE `GlideClient`; never closed by us), or a node of the engine
 * (`memoryNodes`).
 *
 * @since 0.1.0
 * @category models
 */
export type PromiseNodeOptions =
  | NodeOptions.ConnectionOptions<string, DurationInput>
  | NodeOptions.ClientOptions<IoredisClient | IoredisCluster | NodeRedisClient | GlideClient, DurationInput>
  | Node

/**
 * The options of a lock manager for promise code (documented in the Effect
 * packages' `Redlock.Options`), and where it writes its warnings: nodes
 * that do not vote yet when it starts (not reachable yet, or sitting out
 * their restart quarantine), servers listed twice, servers that may evict
 * lock keys. Default: each as a line on stderr.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromiseOptions extends ManagerOptions {
  readonly logger?: Logger | undefined
}

/**
 * A lock manager over Redis nodes; rejects with `InvalidOptions` for
 * invalid options.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRedlock = (
  nodes: ReadonlyArray<PromiseNodeOptions>,
  options: PromiseOptions = {}
): Promise<PromiseRedlock> => OpenNodes.makeRedlock(nodes, options, {})

/**
 * A retry policy from a delay, its jitter and a number of retries, for the
 * `retry` option. Throws `InvalidOptions` for options out of range.
 *
 * @example
 * ```ts
 * import { makeRedlock, retry } from "effect-redlock/Promise"
 *
 * // node-redlock's { retryCount: 100, retryDelay: 10, retryJitter: 2 }
 * const redlock = await makeRedlock([{ port: 6379 }], { retry: retry({ delay: 10, times: 100 }) })
 * ```
 *
 * @since 0.1.0
 * @category schedules
 */
export const retry = (options: Retry.RetryOptions): Retry.RetryPolicy => {
  const policy = Retry.make(options)
  if (policy instanceof Problem) throw new InvalidOptions(policy.option, policy.detail)
  return policy
}

/**
 * No retry: one attempt, then the refusal (`LockNotAcquired`).
 *
 * @since 0.1.0
 * @category schedules
 */
export const noRetry: Retry.RetryPolicy = Retry.noRetry

/**
 * `count` in-memory nodes, for tests of code that takes locks: they keep
 * keys, lines and announcements as Redis does, on the live clock, in this
 * process only.
 *
 * @since 0.1.0
 * @category constructors
 */
export const memoryNodes = (count: number): ReadonlyArray<Node> =>
  new MemoryFleet(count, LiveTime.make(0), makeNodeError).nodes.map((node) => node.toNode())
