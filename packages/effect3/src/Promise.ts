/**
 * The lock manager for promise code: `makeRedlock(nodes, options)` →
 * `acquire` / `release` / `extend` / `using` / `inspect` / `close`, and a
 * semaphore's permits and a read-write lock's holds, the same engine and
 * guarantees as the Effect API. Values are plain: times in milliseconds,
 * `null` for nothing, a hold's `remaining()` and `fencingToken()` as methods.
 *
 * It is the plain manager of `@effect-redlock/core` (no Effect runs in it,
 * and a plain Node project needs no `effect` installed: it is an optional
 * peer of this package). Where `effect` is installed, `makeRedlock` also
 * takes a layer of nodes (`NodeRedis.layer(...)`, `RedisNode.layerMemory`
 * in tests), passwords as `Redacted`, and any retry Schedule (those of
 * `Redlock.retry` step as plain code; one built by hand steps as an effect).
 * Failures reject with the typed errors exported here (`LockNotAcquired`,
 * `LockLost`, ...): plain `Error`s with a `_tag`, which the classes of
 * `effect-redlock/RedlockError` recognise too (`instanceof`).
 *
 * For node-redlock users: `new Redlock(clients, { retryCount })` becomes
 * `makeRedlock(clients.map((client) => ({ client })), { retry })`,
 * `redlock.acquire([key], ttl)` becomes `redlock.acquire(key, { ttl })`, and
 * `lock.release()` becomes `redlock.release(lock)`; `using` passes an
 * `AbortSignal` that fires when the lock is lost, as node-redlock's does.
 *
 * @example
 * ```ts
 * import { makeRedlock } from "effect-redlock/Promise"
 *
 * const main = async () => {
 *   const redlock = await makeRedlock([{ port: 6379 }, { port: 6380 }, { port: 6381 }])
 *   const lock = await redlock.acquire("orders:42", { ttl: 10_000 })
 *   try {
 *     // critical section
 *   } finally {
 *     await redlock.release(lock)
 *   }
 *   // or, released however the body ends, extended while it runs:
 *   await redlock.using("cache:rebuild", { ttl: 10_000, autoExtend: true }, async (lock, signal) => {
 *     if (signal.aborted) throw signal.reason
 *   })
 *   await redlock.close()
 * }
 * ```
 *
 * @since 0.1.0
 */
import type { Host } from "@effect-redlock/core/manager/openNodes.js"
import * as OpenNodes from "@effect-redlock/core/manager/openNodes.js"
import type { PromiseNodeOptions as CoreNodeOptions, PromiseOptions, PromiseRedlock } from "@effect-redlock/core/Promise.js"

export {
  type AcquireOptions,
  type DurationInput,
  ExtensionLimitReached,
  FencingTokenUnavailable,
  type Inspection,
  InvalidOptions,
  LockLost,
  LockNotAcquired,
  LockNotExtended,
  type Logger,
  ManagerClosed,
  type ManagerOptions,
  memoryNodes,
  noRetry,
  type Outcome,
  type PermitOptions,
  type PromiseLock,
  type PromiseOptions,
  type PromiseRedlock,
  type ReadWriteOptions,
  type RedlockError,
  RedisNodeError,
  type ReleaseResult,
  retry,
  type RetryInput,
  type RetryOptions,
  type RetryPolicy,
  SettingConflict
} from "@effect-redlock/core/Promise.js"

/**
 * The nodes of a lock manager for promise code: as core's (connection
 * options, a client of the user's, a node of the engine), with the password
 * a plain string or an Effect `Redacted`.
 *
 * @since 0.1.0
 * @category models
 */
export type PromiseNodeOptions =
  | CoreNodeOptions
  | (Omit<Extract<CoreNodeOptions, { readonly host?: unknown }>, "password"> & { readonly password?: string | object | undefined })

/**
 * A layer of nodes of this package (`Ioredis.layer(...)`, `NodeRedis.layer(...)`,
 * `RedisNode.layerMemory(3)`): an Effect value, read only where `effect` is
 * installed (its type is not named here, so that this module's types need no
 * `effect`).
 *
 * @since 0.1.0
 * @category models
 */
export interface NodesLayer {
  readonly pipe: (...args: never) => unknown
}

/** What this package adds, loaded once, where `effect` is installed; none where it is not. */
let hostLoaded: Promise<Host> | undefined

const effectHost = (): Promise<Host> =>
  hostLoaded ??= import("./internal/promiseHost.js").then(
    (loaded) => loaded.host,
    (error: unknown) => {
      if (OpenNodes.isModuleMissing(error, "effect")) return {}
      hostLoaded = undefined
      throw error
    }
  )

/**
 * A lock manager over Redis nodes: connection options or clients (ioredis,
 * iovalkey, node-redis; the driver's module is loaded only then), nodes of
 * the engine, or any layer of nodes. Rejects with `InvalidOptions` for
 * invalid options.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRedlock = async (
  nodes: ReadonlyArray<PromiseNodeOptions> | NodesLayer,
  options: PromiseOptions = {}
): Promise<PromiseRedlock> => OpenNodes.makeRedlock(nodes, options, await effectHost())
