/**
 * node-redlock's API on this library's engine, for programs written for
 * node-redlock: change the import, keep the code. The 5.0 API (`acquire`,
 * `release`, `extend`, `using` with its abort signal and automatic
 * extension, `ExecutionError` with every attempt's votes) and 4.x's
 * (`lock`, `unlock`, `disposer`, `LockError`, callbacks), over the clients
 * node-redlock users pass: ioredis (`Redis` or `Cluster`) and node-redis.
 * No `effect` is needed.
 *
 * What changes (docs/migrating-from-node-redlock.md): a lock's validity is
 * timed on the monotonic clock; refused acquisitions wait in line and are
 * woken by the release, each turn counted as an attempt; extending a lock
 * another took fails instead of taking it back; multi-resource locks work
 * on clusters; fencing tokens (`lock.fencingToken()`); the restart
 * quarantine with `maxTtl`. `quit()` quits the clients given, as
 * node-redlock's does (elsewhere this library never closes a user's client).
 *
 * @example
 * ```ts
 * import Redlock from "effect-redlock/node-redlock"
 * import Redis from "ioredis"
 *
 * const redlock = new Redlock([new Redis(6379), new Redis(6380), new Redis(6381)], { retryCount: 10, retryDelay: 200 })
 * await redlock.using(["orders:42"], 5000, async (signal) => {
 *   // critical section
 *   if (signal.aborted) throw signal.error
 * })
 * ```
 *
 * @since 0.1.0
 */
import { EventEmitter } from "node:events"
import { createRequire } from "node:module"
import * as Path from "node:path"
import type { Node } from "./engine/node.js"
import * as Acquisition from "./manager/acquisition.js"
import { InvalidOptions, LockNotAcquired, ManagerClosed, type Outcome } from "./manager/errors.js"
import * as Extension from "./manager/extension.js"
import { HeldLock } from "./manager/heldLock.js"
import * as Manager from "./manager/manager.js"
import * as OpenNodes from "./manager/openNodes.js"
import * as ManagerSettings from "./manager/settings.js"
import type { IoredisClient } from "./nodes/ioredis/client.js"
import type { IoredisCluster } from "./nodes/ioredis/cluster.js"
import { type GlideClient, isGlideClient } from "./nodes/glide/client.js"
import type { NodeRedisClient } from "./nodes/nodeRedis/client.js"
import * as Config from "./nodeRedlock/settings.js"
import * as Votes from "./nodeRedlock/votes.js"

/**
 * A Redis client node-redlock users pass: an ioredis `Redis` or `Cluster`
 * (iovalkey's too), a node-redis client or a Valkey GLIDE `GlideClient`; or an in-memory node
 * (`memoryNodes` of effect-redlock/Promise), for tests.
 *
 * @since 0.1.0
 * @category models
 */
export type Client = IoredisClient | IoredisCluster | NodeRedisClient | GlideClient | Node

/**
 * node-redlock's settings, each with its default.
 *
 * @since 0.1.0
 * @category models
 */
export type Settings = Config.Settings

/**
 * What the constructor takes: node-redlock's settings, and `maxTtl`,
 * `restartQuarantine` and `keyPrefix` (see docs/migrating-from-node-redlock.md).
 *
 * @since 0.1.0
 * @category models
 */
export type RedlockSettings = Config.EntrySettings

/**
 * One attempt's votes.
 *
 * @since 0.1.0
 * @category models
 */
export type ExecutionStats = Votes.ExecutionStats<Client>

/**
 * Every attempt of an operation.
 *
 * @since 0.1.0
 * @category models
 */
export type ExecutionResult = Votes.ExecutionResult<Client>

/**
 * The signal `using` gives its routine: aborted, with `error` set, when the
 * lock could not be extended or was lost.
 *
 * @since 0.1.0
 * @category models
 */
export type RedlockAbortSignal = AbortSignal & { error?: Error }

/**
 * The settings of one call: node-redlock's, and a `signal` whose abort stops
 * an acquisition still waiting (it leaves its place in line and rejects with
 * the signal's reason).
 *
 * @since 0.1.0
 * @category models
 */
export interface CallSettings extends Partial<Settings> {
  readonly signal?: AbortSignal | undefined
}

/**
 * node-redlock 4.x's error; `ExecutionError` is one.
 *
 * @since 0.1.0
 * @category errors
 */
export const LockError = Votes.LockError

/**
 * node-redlock 4.x's error.
 *
 * @since 0.1.0
 * @category errors
 */
export type LockError = Votes.LockError

/**
 * An operation no quorum applied within its retries, with every attempt's votes.
 *
 * @since 0.1.0
 * @category errors
 */
export const ExecutionError = Votes.ExecutionError

/**
 * An operation no quorum applied within its retries.
 *
 * @since 0.1.0
 * @category errors
 */
export type ExecutionError = Votes.ExecutionError<Client>

/**
 * A client's vote against: another lock holds a resource there.
 *
 * @since 0.1.0
 * @category errors
 */
export const ResourceLockedError = Votes.ResourceLockedError

/**
 * A client's vote against: another lock holds a resource there.
 *
 * @since 0.1.0
 * @category errors
 */
export type ResourceLockedError = Votes.ResourceLockedError

type Callback<A> = (error: Error | null, value?: A) => void

/** The engine's hold behind a lock (set by `Lock`'s static block). */
let holdOf: (lock: Lock) => HeldLock

/** A 4.x callback, if given, is told the outcome; the promise is returned either way (marked handled). */
const withCallback = <A>(promise: Promise<A>, callback: unknown): Promise<A> => {
  if (typeof callback !== "function") return promise
  promise.then((value) => (callback as Callback<A>)(null, value), (error) => (callback as Callback<A>)(error))
  promise.catch(() => {})
  return promise
}

/** The opened nodes of one Redlock, and what its operations share. */
interface Engine {
  readonly settings: ManagerSettings.Settings
  readonly acquisitions: Acquisition.Acquisitions
  readonly acquire: ReturnType<typeof Acquisition.acquirer>
  readonly close: () => Promise<void>
}

/**
 * A held lock, as node-redlock's: `expiration` is the wall-clock time its
 * validity ends (0 once released or replaced by its extension).
 *
 * @since 0.1.0
 * @category models
 */
export class Lock {
  constructor(
    readonly redlock: Redlock,
    readonly resources: Array<string>,
    readonly value: string,
    readonly attempts: ReadonlyArray<Promise<ExecutionStats>>,
    public expiration: number,
    held: HeldLock
  ) {
    this.#held = held
  }

  /** The engine's hold behind it (an extension's lock shares it). */
  readonly #held: HeldLock

  static {
    holdOf = (lock) => {
      if (!(#held in lock)) throw new TypeError("effect-redlock: this lock was not acquired by a Redlock")
      return lock.#held
    }
  }

  /** Release it on every client. */
  release(): Promise<ExecutionResult> {
    return this.redlock.release(this)
  }

  /** A new lock for the same resources, valid for `duration` ms from now; this one's `expiration` becomes 0. */
  extend(duration: number, callback?: Callback<Lock>): Promise<Lock> {
    return withCallback(this.redlock.extend(this, duration), callback)
  }

  /** node-redlock 4.x's `release`. */
  unlock(callback?: Callback<ExecutionResult>): Promise<ExecutionResult> {
    return withCallback(this.release(), callback)
  }

  /** node-redlock 4.x's name of the resources: one string for one resource. */
  get resource(): string | Array<string> {
    return this.resources.length === 1 ? this.resources[0]! : this.resources
  }

  /** Milliseconds of validity left, on the monotonic clock (0 once it ran out or was released). */
  remaining(): number {
    return holdOf(this).remaining()
  }

  /** A fencing token for this hold (docs/safety.md): a number that grows with each holder of the resource. */
  fencingToken(): Promise<bigint> {
    return holdOf(this).fencingToken()
  }
}

const resourcesOf = (input: unknown): Array<string> =>
  typeof input === "string" ? [input] : Array.isArray(input) ? [...input] : input as never

// The wall-clock end of a lock's validity, node-redlock's `expiration`.
const expirationOf = (held: HeldLock): number => Date.now() + held.remaining()

interface Closable {
  readonly quit?: () => Promise<unknown>
  readonly close?: () => Promise<unknown>
  readonly disconnect?: () => unknown
  readonly destroy?: () => unknown
  /** ioredis's connection state. */
  readonly status?: unknown
  /** node-redis's. */
  readonly isReady?: unknown
}

/**
 * QUIT where the client is connected; a client that is not (its server down
 * or restarting) is disconnected at once: QUIT would wait in its offline
 * queue through every reconnection, then reject.
 */
const quitClient = async (client: Client): Promise<void> => {
  const closable = client as Closable
  if (closable.status !== undefined) {
    if (closable.status === "end") return
    if (closable.status !== "ready" || typeof closable.quit !== "function") return void closable.disconnect?.()
    await closable.quit().catch(() => closable.disconnect?.())
    return
  }
  // GLIDE: close() fails what it has not answered; the node waited for its own answers before.
  if (isGlideClient(client)) return void (client as GlideClient).close()
  // node-redis: close() (quit() before node-redis 5); destroy() where it is not connected.
  if (closable.isReady !== true) return void closable.destroy?.()
  const polite = typeof closable.close === "function" ? closable.close() : closable.quit?.()
  await polite?.catch(() => closable.destroy?.())
}

/**
 * A lock manager with node-redlock's API. Its clients are opened for it on
 * first use (a Redis client library is loaded then); a subscriber of its own
 * is made from a client's options to hear releases.
 *
 * Events: "error" for each client's vote against (a node's failure, or a
 * resource held there), as node-redlock emits; "clientError" for a node's
 * failure, as node-redlock 4.x did.
 *
 * @since 0.1.0
 * @category constructors
 */
export class Redlock extends EventEmitter {
  /** node-redlock 4.x's `Redlock.LockError`. */
  static readonly LockError = Votes.LockError
  /** node-redlock 4.x's `Redlock.Lock`. */
  static readonly Lock = Lock

  readonly clients: Set<Client>
  readonly #settings: Config.EntrySettings
  readonly #clients: ReadonlyArray<Client>
  readonly #defaultRetry: ReturnType<typeof Config.retryPolicy>
  #engine: Promise<Engine> | undefined
  /** The engine once opened: calls after the first take it without a promise step. */
  #ready: Engine | undefined

  constructor(clients: Iterable<Client>, settings: Partial<RedlockSettings> = {}) {
    super()
    // node-redlock's: an "error" with no listener would throw; votes against are expected.
    this.on("error", () => {})
    if (clients === null || typeof (clients as Partial<Iterable<Client>>)?.[Symbol.iterator] !== "function") {
      throw new InvalidOptions("clients", "expected an array (or any iterable) of Redis clients")
    }
    this.clients = new Set(clients)
    if (this.clients.size === 0) {
      throw new InvalidOptions("clients", "Redlock must be instantiated with at least one redis client")
    }
    this.#clients = [...this.clients]
    for (const client of this.#clients) {
      if (typeof client !== "object" || client === null) {
        throw new InvalidOptions("clients", `expected Redis clients, got ${String(client)}`)
      }
    }
    this.#settings = Config.merge(Config.defaults, settings)
    this.#defaultRetry = Config.retryPolicy(this.#settings)
  }

  /** node-redlock's settings in use. */
  get settings(): Settings {
    const { automaticExtensionThreshold, driftFactor, retryCount, retryDelay, retryJitter } = this.#settings
    return { automaticExtensionThreshold, driftFactor, retryCount, retryDelay, retryJitter }
  }

  #open(): Promise<Engine> {
    return this.#engine ??= this.#opened().then((engine) => this.#ready = engine)
  }

  async #opened(): Promise<Engine> {
    const { driftFactor, keyPrefix, maxTtl, restartQuarantine } = this.#settings
    const opened = await OpenNodes.openAll(
      this.#clients.map((client) => OpenNodes.isEngineNode(client) ? client : { client }),
      {}
    )
    let settings: ManagerSettings.Settings
    try {
      const made = ManagerSettings.make(
        opened.nodes,
        {
          keyPrefix,
          driftFactor,
          maxTtl,
          maxExtensions: Number.MAX_SAFE_INTEGER,
          restartQuarantine: maxTtl !== undefined && restartQuarantine !== false,
          retry: this.#defaultRetry
        },
        opened.time,
        undefined
      )
      // With no maxTtl, any duration, as node-redlock takes.
      settings = maxTtl === undefined ? { ...made, maxTtlMillis: Number.MAX_SAFE_INTEGER } : made
    } catch (error) {
      await opened.close()
      throw error
    }
    const acquisitions = new Acquisition.Acquisitions()
    return { settings, acquisitions, acquire: Acquisition.acquirer(settings, acquisitions), close: opened.close }
  }

  #heldBy(lock: unknown): HeldLock {
    if (lock instanceof Lock && lock.redlock === this) return holdOf(lock)
    throw new TypeError("effect-redlock: this lock was not acquired by this Redlock")
  }

  // One attempt's votes, each vote against told as node-redlock's events (when someone listens but our own no-op).
  #votes(engine: Engine, outcomes: ReadonlyArray<Outcome>, keys: number): Promise<ExecutionStats> {
    let against: Array<Error> | undefined
    const stats = Votes.statsOf(this.#clients, engine.settings.quorum, outcomes, keys, (error) => {
      ;(against ??= []).push(error)
    })
    if (against !== undefined && (this.listenerCount("error") > 1 || this.listenerCount("clientError") > 0)) {
      const told = against
      queueMicrotask(() => {
        for (const error of told) {
          this.emit("error", error)
          if (!(error instanceof Votes.ResourceLockedError)) this.emit("clientError", error)
        }
      })
    }
    return Promise.resolve(stats)
  }

  #retry(settings: Config.EntrySettings): ReturnType<typeof Config.retryPolicy> {
    return settings === this.#settings ? this.#defaultRetry : Config.retryPolicy(settings)
  }

  // A per-call driftFactor would time this lock differently from the manager's: refused unless the same.
  #callSettings(given: unknown): Config.EntrySettings {
    const settings = Config.merge(this.#settings, given)
    if (settings.driftFactor !== this.#settings.driftFactor) {
      throw new InvalidOptions("driftFactor", "is set on the Redlock (the constructor's settings), not per call")
    }
    return settings
  }

  /**
   * Acquire a lock on `resources` (one string, or several) for `duration`
   * ms; rejects with `ExecutionError` once `retryCount + 1` attempts were
   * refused.
   */
  async acquire(resources: string | ReadonlyArray<string>, duration: number, settings?: CallSettings): Promise<Lock> {
    const ttl = Config.duration(duration)
    const retry = this.#retry(this.#callSettings(settings))
    const signal = settings?.signal
    const list = resourcesOf(resources)
    const engine = this.#ready ?? await this.#open()
    const attempts: Array<Promise<ExecutionStats>> = []
    const observer: Acquisition.AttemptObserver = (end) => {
      const outcomes = end.granted === undefined ? end.result.outcomes : end.granted.outcomes
      attempts.push(this.#votes(engine, outcomes, list.length))
    }
    try {
      const { lock } = await engine.acquire(list, { ttl, retry, signal }, undefined, undefined, undefined, observer)
      return new Lock(this, list, lock.value, attempts, expirationOf(lock), lock)
    } catch (error) {
      throw error instanceof LockNotAcquired ? new Votes.ExecutionError(Votes.noQuorum, attempts, error) : error
    }
  }

  /**
   * Release `lock` on every client; rejects with `ExecutionError` when
   * fewer than a quorum still held it (it had expired, or was taken).
   */
  async release(lock: Lock, _settings?: Partial<Settings>): Promise<ExecutionResult> {
    const held = this.#heldBy(lock)
    lock.expiration = 0
    const engine = this.#ready ?? await this.#open()
    const result = await Manager.released(engine.settings, held)
    if (result.status === "AlreadyReleased") return { attempts: [] }
    const attempts = [this.#votes(engine, result.outcomes, lock.resources.length)]
    if (result.status === "Released") return { attempts }
    throw new Votes.ExecutionError(Votes.noQuorum, attempts)
  }

  /**
   * A new lock for `existing`'s resources, valid for `duration` ms from now
   * (`existing.expiration` becomes 0); rejects with `ExecutionError` when it
   * has expired, was released or replaced, or no quorum extended it.
   */
  async extend(existing: Lock, duration: number, settings?: Partial<Settings> | Callback<Lock>): Promise<Lock> {
    if (typeof settings === "function") return withCallback(this.extend(existing, duration), settings)
    const ttl = Config.duration(duration)
    const held = this.#heldBy(existing)
    this.#callSettings(settings)
    // Replaced by its extension or released (expiration 0), or past its validity on the monotonic clock.
    if (existing.expiration === 0 || held.remaining() === 0) {
      throw new Votes.ExecutionError("Cannot extend an already-expired lock.", [])
    }
    const engine = this.#ready ?? await this.#open()
    let outcomes: ReadonlyArray<Outcome>
    try {
      outcomes = await Extension.extend(engine.settings, held, ttl)
    } catch (error) {
      const refused = (error as { readonly outcomes?: ReadonlyArray<Outcome> }).outcomes ?? []
      throw new Votes.ExecutionError(Votes.noQuorum, [this.#votes(engine, refused, existing.resources.length)], error)
    }
    existing.expiration = 0
    const attempts = [this.#votes(engine, outcomes, existing.resources.length)]
    return new Lock(this, existing.resources, existing.value, attempts, expirationOf(held), held)
  }

  /**
   * Acquire, run `routine`, release however it ends; the lock is extended by
   * `duration` whenever `automaticExtensionThreshold` ms of it are left. The
   * signal aborts (with `error`) when an extension fails for good or the
   * lock is lost.
   */
  using<T>(
    resources: string | ReadonlyArray<string>,
    duration: number,
    settings: CallSettings,
    routine: (signal: RedlockAbortSignal) => Promise<T>
  ): Promise<T>
  using<T>(
    resources: string | ReadonlyArray<string>,
    duration: number,
    routine: (signal: RedlockAbortSignal) => Promise<T>
  ): Promise<T>
  async using<T>(
    resources: string | ReadonlyArray<string>,
    duration: number,
    settingsOrRoutine: CallSettings | ((signal: RedlockAbortSignal) => Promise<T>) | undefined,
    optionalRoutine?: (signal: RedlockAbortSignal) => Promise<T>
  ): Promise<T> {
    const ttl = Config.duration(duration)
    const given = typeof settingsOrRoutine === "function" ? undefined : settingsOrRoutine
    const routine = optionalRoutine ?? settingsOrRoutine
    if (typeof routine !== "function") {
      throw new InvalidOptions("routine", `expected a function (signal) => Promise, got ${typeof routine}`)
    }
    const settings = this.#callSettings(given)
    if (settings.automaticExtensionThreshold > ttl - 100) {
      throw new Config.ThresholdTooLong(settings.automaticExtensionThreshold, ttl)
    }
    // Made before the acquisition: making a signal delays the routine's start.
    const controller = new AbortController()
    const signal = controller.signal as RedlockAbortSignal
    let lock = await this.acquire(resources, ttl, given)
    // The call's signal stops the acquisition only: the routine's signal is the lock's.
    const extensionSettings = given?.signal === undefined ? given : { ...given, signal: undefined }
    const engine = this.#ready ?? await this.#open()
    const { time } = engine.settings
    const held = holdOf(lock)
    let ended = false
    let extension: Promise<void> | undefined
    let cancelTimer = () => {}
    const abort = (error: Error) => {
      if (signal.aborted) return
      signal.error = error
      controller.abort(error)
    }
    const stopWatching = held.whenLost(time, () => abort(held.lostBecause ?? new Error("the lock was lost")))
    const queue = (millis: number) => {
      cancelTimer = time.schedule(Math.max(0, millis), () => void (extension = extend()))
    }
    const extend = async (): Promise<void> => {
      try {
        lock = await this.extend(lock, ttl, extensionSettings)
        if (!ended) queue(held.remaining() - settings.automaticExtensionThreshold)
      } catch (error) {
        if (ended) return
        // Not extended this time, not lost: again after a node timeout, while it is valid.
        const lost = (error as { readonly cause?: { readonly _tag?: string } }).cause?._tag === "LockLost"
        if (!lost && held.isHeldAt(time.now())) return queue(held.nodeTimeoutMillis)
        abort(error as Error)
      }
    }
    queue(held.remaining() - settings.automaticExtensionThreshold)
    const end = async () => {
      ended = true
      cancelTimer()
      stopWatching()
      await extension
      await lock.release()
    }
    let result: T
    try {
      result = await routine(signal)
    } catch (error) {
      await end().catch(() => {})
      throw error
    }
    await end()
    return result
  }

  /** Stop: acquisitions still waiting reject, the connections opened for it close, and `quit()` is sent to each client given. */
  async quit(callback?: Callback<void>): Promise<void> {
    const quitting = (async () => {
      const engine = await this.#engine?.catch(() => undefined)
      if (engine !== undefined) {
        engine.settings.lifecycle.closed = true
        await engine.acquisitions.close(new ManagerClosed())
        await engine.close()
      }
      await Promise.all(this.#clients.map(quitClient))
    })()
    return withCallback(quitting, callback)
  }

  /** node-redlock 4.x's `lock(resource, ttl, callback?)`: `acquire`. */
  lock(resource: string | ReadonlyArray<string>, ttl: number, callback?: Callback<Lock>): Promise<Lock> {
    return withCallback(this.acquire(resource, ttl), callback)
  }

  /** node-redlock 4.x's `lockWithOptions(resource, ttl, settings, callback?)`. */
  lockWithOptions(
    resource: string | ReadonlyArray<string>,
    ttl: number,
    settings: CallSettings,
    callback?: Callback<Lock>
  ): Promise<Lock> {
    return withCallback(this.acquire(resource, ttl, settings), callback)
  }

  /** node-redlock 4.x's `acquireWithOptions`: `lockWithOptions`. */
  acquireWithOptions(
    resource: string | ReadonlyArray<string>,
    ttl: number,
    settings: Partial<Settings>,
    callback?: Callback<Lock>
  ): Promise<Lock> {
    return this.lockWithOptions(resource, ttl, settings, callback)
  }

  /** node-redlock 4.x's `unlock(lock, callback?)`: `release`. */
  unlock(lock: Lock, callback?: Callback<ExecutionResult>): Promise<ExecutionResult> {
    return withCallback(this.release(lock), callback)
  }

  /**
   * node-redlock 4.x's `disposer(resource, ttl, errorHandler?)`: a Bluebird
   * disposer for `Promise.using`, which releases the lock (a failed release
   * goes to `errorHandler`). Needs Bluebird, as 4.x did: your project's
   * `bluebird` is loaded.
   */
  disposer(resource: string | ReadonlyArray<string>, ttl: number, errorHandler?: (error: Error) => void): unknown {
    const Bluebird = loadBluebird()
    return Bluebird.resolve(this.acquire(resource, ttl)).disposer((lock: Lock) =>
      lock.release().catch((error: Error) => errorHandler?.(error))
    )
  }
}

type LockOfRedlock = Lock
type SettingsOfRedlock = Settings

/**
 * node-redlock 4.x's types under the class's name, as its typings declare
 * them: `Redlock.Lock`, `Redlock.LockError`, `Redlock.Options`.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace Redlock {
  /** A held lock. */
  export type Lock = LockOfRedlock
  /** node-redlock 4.x's error. */
  export type LockError = Votes.LockError
  /** The constructor's settings, each optional. */
  export type Options = Partial<SettingsOfRedlock>
}

interface BluebirdLike {
  readonly resolve: (value: Promise<Lock>) => { readonly disposer: (dispose: (lock: Lock) => unknown) => unknown }
}

// The Bluebird of the program's own project: its Promise.using must know its own Disposer.
const loadBluebird = (): BluebirdLike => {
  try {
    return createRequire(Path.join(process.cwd(), "index.js"))("bluebird") as BluebirdLike
  } catch {
    throw new InvalidOptions(
      "disposer",
      "needs Bluebird (npm install bluebird), as node-redlock 4 did; or use redlock.using"
    )
  }
}

/**
 * node-redlock's default export.
 *
 * @since 0.1.0
 * @category constructors
 */
export default Redlock
