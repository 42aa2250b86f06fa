/**
 * The lock manager for promise code: `makeRedlock(nodes, options)` →
 * `acquire` / `release` / `extend` / `using` / `inspect` / `close`, the same
 * engine and guarantees as the Effect API, without a runtime call per step.
 *
 * Acquisitions, with their waiting in line, and releases run as plain code
 * over the nodes' promises: no fiber, except for a custom retry schedule's
 * steps (an effect each) in the manager's runtime.
 * Failures reject with the typed errors of `effect-redlock/RedlockError`
 * (`LockNotAcquired`, `LockLost`, ...), which are `Error`s.
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
import type { NonEmptyReadonlyArray } from "effect/Array"
import * as Cause from "effect/Cause"
import type * as Clock from "effect/Clock"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as FanOut from "./internal/fanOut.js"
import type { HeldLock } from "./internal/lock.js"
import * as Acquisition from "./internal/manager/acquisition.js"
import * as Extension from "./internal/manager/extension.js"
import * as Inspection from "./internal/manager/inspection.js"
import * as Release from "./internal/manager/release.js"
import * as Settings from "./internal/manager/settings.js"
import * as Monotonic from "./internal/monotonic.js"
import * as Retry from "./internal/retry.js"
import type * as Waiting from "./internal/waiting.js"
import type * as Lock from "./Lock.js"
import type { RedisNodes } from "./RedisNode.js"
import type * as Ioredis from "./RedisNode/Ioredis.js"
import type { AcquireOptions, InspectResult, Options, ReleaseResult, RetryOptions, RetrySchedule } from "./Redlock.js"

/**
 * A retry schedule from a delay, its jitter and a number of retries, for the
 * `retry` option (`Redlock.retry`, documented there). The waiting steps it
 * as plain code; a Schedule built by hand is stepped as an effect.
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
export const retry: (options: RetryOptions) => RetrySchedule = Retry.unsafeMake

/**
 * The options of one acquisition (`Redlock.AcquireOptions`: `ttl` in ms or
 * any duration, `retry`, `nodeTimeout`, `autoExtend`), and a signal that
 * gives up waiting when it aborts.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromiseAcquireOptions extends AcquireOptions {
  /** Aborting it stops the waiting: the acquisition leaves every line and rejects. */
  readonly signal?: AbortSignal | undefined
}

/**
 * A lock manager for promise code.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromiseRedlock {
  /** Acquire a lock on one resource, or on several at once; rejects with `LockNotAcquired` or `InvalidOptions`. */
  readonly acquire: (
    resources: string | NonEmptyReadonlyArray<string>,
    options: PromiseAcquireOptions
  ) => Promise<Lock.Lock>
  /** Release on every node (stops its auto-extension first); never rejects for a node's failure. */
  readonly release: (lock: Lock.Lock) => Promise<ReleaseResult>
  /** Extend to `ttl` (default: its own); rejects with `LockLost`, `LockNotExtended` or `ExtensionLimitReached`. */
  readonly extend: (lock: Lock.Lock, ttl?: Duration.DurationInput) => Promise<Lock.Lock>
  /**
   * Acquire, run `body`, release however it ends. The signal aborts (with
   * the `LockLost` error as its reason) when the lock is lost: its validity
   * ran out, or nodes said it is no longer ours.
   */
  readonly using: <A>(
    resources: string | NonEmptyReadonlyArray<string>,
    options: PromiseAcquireOptions,
    body: (lock: Lock.Lock, signal: AbortSignal) => Promise<A>
  ) => Promise<A>
  /** Who holds a resource on each node. */
  readonly inspect: (resource: string) => Promise<InspectResult>
  /** Stop the manager: auto-extensions stop, connections the manager opened are closed. */
  readonly close: () => Promise<void>
}

/**
 * A lock manager over Redis nodes: connection options or ioredis clients
 * (`effect-redlock/RedisNode/Ioredis` `NodeOptions`, whose module is loaded
 * only then), or any layer of nodes (`RedisNode.layerMemory` in tests).
 * Rejects with `InvalidOptions` for invalid options.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRedlock = async (
  nodes: ReadonlyArray<Ioredis.NodeOptions> | Layer.Layer<RedisNodes, unknown>,
  options: Options = {}
): Promise<PromiseRedlock> => {
  const nodesLayer = Layer.isLayer(nodes)
    ? nodes as Layer.Layer<RedisNodes, unknown>
    : (await import("./RedisNode/Ioredis.js")).layer(nodes as ReadonlyArray<Ioredis.NodeOptions>)
  const runtime = ManagedRuntime.make(nodesLayer)
  const made = await runtime.runPromiseExit(Effect.zip(Settings.fromContext(options), Effect.clock))
  if (Exit.isFailure(made)) {
    await runtime.dispose()
    throw Cause.squash(made.cause)
  }
  return fromSettings(runtime, made.value[0], made.value[1])
}

const fromSettings = (
  runtime: ManagedRuntime.ManagedRuntime<RedisNodes, unknown>,
  settings: Settings.Settings,
  clock: Clock.Clock
): PromiseRedlock => {
  const engine = FanOut.promiseEngine(settings.nodes, clock)
  const scheduler = Monotonic.liveScheduler(clock)!
  const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
    runtime.runPromiseExit(effect).then((exit) => Exit.isSuccess(exit) ? exit.value : Promise.reject(Cause.squash(exit.cause)))
  // The layer was built by makeRedlock: its error cannot come up here.
  const runThen: Waiting.Runner = <X, E>(effect: Effect.Effect<X, E>, done: (exit: Exit.Exit<X, E>) => void) =>
    (runtime.runFork(effect) as Fiber.RuntimeFiber<X, E>).addObserver(done)
  const acquireLock = Acquisition.acquireForPromises(settings, clock, (effect, signal) =>
    // The fiber's end is taken as a value from an uninterruptible region: a
    // lock granted just as the signal aborts is still handed over, never lost.
    runtime.runPromiseExit(Effect.uninterruptibleMask((restore) => Effect.exit(restore(effect))), { signal }).then(
      (outer) => {
        if (Exit.isFailure(outer)) return rejectWith(outer.cause, signal)
        return Exit.isSuccess(outer.value) ? outer.value.value : rejectWith(outer.value.cause, signal)
      }
    ), runThen)
  // The auto-extension of each lock that has one, stopped before its release.
  const extensions = new Map<HeldLock, Fiber.RuntimeFiber<void, unknown>>()

  // The options are read as AcquireOptions: the signal is not one of them, and copying them costs an object per lock.
  const acquire: PromiseRedlock["acquire"] = async (resources, options) => {
    const { lock, maxHoldMillis } = await acquireLock(resources, options, options.signal)
    if (maxHoldMillis !== undefined) {
      const fiber = runtime.runFork(Extension.autoExtend(settings, lock, maxHoldMillis))
      extensions.set(lock, fiber)
      fiber.addObserver(() => extensions.delete(lock))
    }
    return lock
  }

  const release: PromiseRedlock["release"] = (lock) => {
    let state: HeldLock
    try {
      state = Settings.held(settings, lock)
    } catch (error) {
      return Promise.reject(error)
    }
    extensions.get(state)?.unsafeInterruptAsFork(FiberId.none)
    if (engine === undefined) return run(Release.release(settings, state))
    return new Promise((resolve) => Release.releaseWithPromises(settings, state, engine, [], resolve))
  }

  const using: PromiseRedlock["using"] = async (resources, options, body) => {
    const lock = await acquire(resources, options)
    const held = lock as HeldLock
    const controller = new AbortController()
    const stopWatching = held.whenLost(clock, scheduler, () => controller.abort(held.lostBecause))
    try {
      return await body(lock, controller.signal)
    } finally {
      stopWatching()
      await release(lock)
    }
  }

  return {
    acquire,
    release,
    extend: (lock, ttl) => run(Extension.extend(settings, lock, ttl)),
    using,
    inspect: (resource) => run(Inspection.inspect(settings, resource)),
    close: async () => {
      for (const fiber of extensions.values()) fiber.unsafeInterruptAsFork(FiberId.none)
      await runtime.dispose()
    }
  }
}

/** An interruption by the caller's signal rejects with the signal's reason, as fetch does. */
const rejectWith = (cause: Cause.Cause<unknown>, signal: AbortSignal | undefined): Promise<never> =>
  Promise.reject(Cause.isInterruptedOnly(cause) && signal?.aborted ? signal.reason : Cause.squash(cause))
