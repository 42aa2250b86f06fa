/**
 * The lock manager for promise code: `makeRedlock(nodes, options)` →
 * `acquire` / `release` / `extend` / `using` / `inspect` / `close`, and a
 * semaphore's permits and a read-write lock's holds, the same engine and
 * guarantees as the Effect API, without a runtime call per step. Values are
 * plain: times in milliseconds, `null` for nothing, a hold's `remaining()`
 * and `fencingToken()` as methods.
 *
 * Acquisitions, with their waiting in line, and releases run as plain code
 * over the nodes' promises: no fiber, except for a custom retry schedule's
 * steps (an effect each) in the manager's runtime.
 * Failures reject with the typed errors of `effect-redlock/RedlockError`
 * (`LockNotAcquired`, `LockLost`, ...), which are `Error`s.
 *
 * This facade is part of the Effect 3 line (effect-redlock 0.1.x, with
 * `effect` 3 installed beside it); the Effect 4 line (0.2.x) does not have
 * it yet.
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
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import { describe, nodeEntry, nodeList, Problem } from "@effect-redlock/core/engine/options.js"
import { InvalidOptions, ManagerClosed } from "./internal/errors.js"
import type { HeldLock } from "./internal/lock.js"
import * as Acquisition from "./internal/manager/acquisition.js"
import * as Extension from "./internal/manager/extension.js"
import * as Inspection from "./internal/manager/inspection.js"
import * as ReadWrite from "./internal/manager/readWrite.js"
import * as Release from "./internal/manager/release.js"
import * as Semaphore from "./internal/manager/semaphore.js"
import * as Settings from "./internal/manager/settings.js"
import * as Monotonic from "./internal/monotonic.js"
import * as Retry from "./internal/retry.js"
import type { NodeOutcome, RedisNodes } from "./RedisNode.js"
import { RedisNodes as RedisNodesTag } from "./internal/nodes.js"
import * as Address from "@effect-redlock/core/nodes/address.js"
import type { NodeRedisClient } from "@effect-redlock/core/nodes/nodeRedis/client.js"
import type * as Ioredis from "./RedisNode/Ioredis.js"
import type * as NodeRedis from "./RedisNode/NodeRedis.js"
import type { ReadWriteOptions } from "./ReadWriteLock.js"
import type { AcquireOptions, InspectResult, Options, ReleaseResult, RetryOptions, RetrySchedule } from "./Redlock.js"
import type { PermitOptions } from "./Semaphore.js"

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
 * No retry: one attempt, then the refusal (`LockNotAcquired`).
 *
 * @since 0.1.0
 * @category schedules
 */
export const noRetry: RetrySchedule = Schedule.stop

/**
 * The options of one acquisition (`Redlock.AcquireOptions`: `ttl` in ms,
 * `retry`, `nodeTimeout` in ms, `autoExtend`), and a signal that gives up
 * waiting when it aborts.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromiseAcquireOptions extends AcquireOptions {
  /** Aborting it stops the waiting: the acquisition leaves every line and rejects. */
  readonly signal?: AbortSignal | undefined
}

/**
 * A held lock (or permit, or read or write hold) in plain values: times in
 * milliseconds, methods that return numbers or promises.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromiseLock {
  /** The resources it holds (for a permit or a read hold: its slot). */
  readonly resources: ReadonlyArray<string>
  /** The lock value on the nodes: 160 random bits, unique to this hold. */
  readonly value: string
  /** The ttl it was acquired with, in ms. */
  readonly ttlMillis: number
  /** How long it was valid when granted, in ms (ttl less the attempt's time and the drift allowance). */
  readonly validityMillis: number
  /** Attempts made to acquire it. */
  readonly attempts: number
  /** What each node answered to the attempt that granted it. */
  readonly outcomes: ReadonlyArray<NodeOutcome>
  /** Milliseconds of validity left now (0 once it ran out); extensions move it. */
  remaining(): number
  /** A fencing token for this hold (docs/safety.md); rejects with `LockLost` or `FencingTokenUnavailable`. */
  fencingToken(): Promise<bigint>
}

/**
 * Who holds a resource, node by node, in plain values (`null` where nothing is).
 *
 * @since 0.1.0
 * @category models
 */
export interface PromiseInspection {
  readonly resource: string
  /** The lock value held on a majority of nodes, or `null`: then nobody holds it. */
  readonly holder: string | null
  /** The shortest time to live left among that majority, in ms, or `null`. */
  readonly ttlMillis: number | null
  /** Each node's view: its value and time to live (`null` when none), or why it could not be read. */
  readonly nodes: ReadonlyArray<
    | { readonly node: string; readonly value: string | null; readonly ttlMillis: number | null }
    | { readonly node: string; readonly unreadable: NodeOutcome }
  >
}

/**
 * The nodes of a lock manager for promise code: as `Ioredis.NodeOptions`,
 * with the password a plain string if you like, or a node-redis client of
 * the user's (`NodeRedis.ClientOptions`).
 *
 * @since 0.1.0
 * @category models
 */
export type PromiseNodeOptions =
  | Ioredis.ClientOptions
  | NodeRedis.ClientOptions
  | (Omit<Ioredis.ConnectionOptions, "password"> & {
    readonly password?: string | Redacted.Redacted<string> | undefined
  })

/**
 * Where a lock manager for promise code writes its warnings, each one line
 * of plain text: nodes that do not vote yet when it starts (not reachable
 * yet, or sitting out their restart quarantine), servers listed twice,
 * servers that may evict lock keys. Default: each as a line on stderr.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromiseLogger {
  readonly warn: (message: string) => void
}

/**
 * The options of a lock manager for promise code: the manager's options
 * (`Redlock.Options`), and where it logs.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromiseOptions extends Options {
  readonly logger?: PromiseLogger | undefined
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
  ) => Promise<PromiseLock>
  /** Release on every node (stops its auto-extension first); never rejects for a node's failure. */
  readonly release: (lock: PromiseLock) => Promise<ReleaseResult>
  /** Extend to `ttlMillis` (default: its own); rejects with `LockLost`, `LockNotExtended` or `ExtensionLimitReached`. */
  readonly extend: (lock: PromiseLock, ttlMillis?: number) => Promise<PromiseLock>
  /**
   * Acquire, run `body`, release however it ends. The signal aborts (with
   * the `LockLost` error as its reason) when the lock is lost: its validity
   * ran out, or nodes said it is no longer ours.
   */
  readonly using: <A>(
    resources: string | NonEmptyReadonlyArray<string>,
    options: PromiseAcquireOptions,
    body: (lock: PromiseLock, signal: AbortSignal) => Promise<A>
  ) => Promise<A>
  /** Who holds a resource on each node. */
  readonly inspect: (resource: string) => Promise<PromiseInspection>
  /** One of `limit` permits of a resource (a semaphore: `Semaphore.acquire`); release it with `release`. */
  readonly acquirePermit: (resource: string, options: PermitOptions & PromiseAcquireOptions) => Promise<PromiseLock>
  /** `using` with a permit. */
  readonly usingPermit: <A>(
    resource: string,
    options: PermitOptions & PromiseAcquireOptions,
    body: (permit: PromiseLock, signal: AbortSignal) => Promise<A>
  ) => Promise<A>
  /** A read hold, shared with other readers (a read-write lock: `ReadWriteLock.acquireRead`). */
  readonly acquireRead: (resource: string, options: ReadWriteOptions & PromiseAcquireOptions) => Promise<PromiseLock>
  /** A write hold: no reader, no other writer (`ReadWriteLock.acquireWrite`). */
  readonly acquireWrite: (resource: string, options: ReadWriteOptions & PromiseAcquireOptions) => Promise<PromiseLock>
  /** `using` with a read hold. */
  readonly usingRead: <A>(
    resource: string,
    options: ReadWriteOptions & PromiseAcquireOptions,
    body: (hold: PromiseLock, signal: AbortSignal) => Promise<A>
  ) => Promise<A>
  /** `using` with a write hold. */
  readonly usingWrite: <A>(
    resource: string,
    options: ReadWriteOptions & PromiseAcquireOptions,
    body: (hold: PromiseLock, signal: AbortSignal) => Promise<A>
  ) => Promise<A>
  /**
   * Stop the manager: acquisitions still waiting leave their lines and reject
   * with `ManagerClosed`, auto-extensions stop, the locks, permits and holds
   * still held are released (a `using` body's signal aborts with `LockLost`),
   * connections it opened are closed. Every call made afterwards
   * rejects with `ManagerClosed`, but `release`: over your own clients it
   * still releases; over the connections closed here it answers
   * `Incomplete` (the keys expire with their ttl). Calling it again returns
   * the same promise.
   */
  readonly close: () => Promise<void>
}

/**
 * A lock manager over Redis nodes: connection options or ioredis clients
 * (`effect-redlock/RedisNode/Ioredis` `NodeOptions`, whose module is loaded
 * only then, a password may be a plain string), node-redis clients
 * (`effect-redlock/RedisNode/NodeRedis`, loaded only for them), or any layer
 * of nodes (`NodeRedis.layer(...)` for connection options over node-redis,
 * `RedisNode.layerMemory` in tests). Rejects with `InvalidOptions` for
 * invalid options.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRedlock = async (
  nodes: ReadonlyArray<PromiseNodeOptions> | Layer.Layer<RedisNodes, unknown>,
  options: PromiseOptions = {}
): Promise<PromiseRedlock> => {
  if (!Layer.isLayer(nodes)) checkNodes(nodes)
  const logs = logsTo(options?.logger)
  const nodesLayer = Layer.isLayer(nodes)
    ? nodes as Layer.Layer<RedisNodes, unknown>
    : await layerOf(nodes as ReadonlyArray<PromiseNodeOptions>)
  // The logger first: the nodes' own start-up logs go to it too.
  const runtime = ManagedRuntime.make(Layer.provideMerge(nodesLayer, logs))
  const made = await runtime.runPromiseExit(Effect.zip(Settings.fromContext(options), Effect.clock))
  if (Exit.isFailure(made)) {
    await runtime.dispose()
    throw Cause.squash(made.cause)
  }
  return fromSettings(runtime, made.value[0], made.value[1])
}

const stderrLogger: PromiseLogger = { warn: (message) => void process.stderr.write(`${message}\n`) }

/** A log line as one line of text: its message, then its annotations (outcomes, say) in parentheses. */
const lineOf = (message: unknown, annotations: ReadonlyArray<readonly [string, unknown]>): string => {
  const text = (Array.isArray(message) ? message : [message]).map(String).join(" ")
  const notes = annotations.map(([key, value]) => `${key}: ${Array.isArray(value) ? value.join("; ") : String(value)}`)
  return notes.length === 0 ? text : `${text} (${notes.join(", ")})`
}

/**
 * The manager's warnings to the user's logger, or to stderr: a promise program
 * did not ask for Effect's logger, its format or its stream (stdout).
 */
const logsTo = (given: PromiseLogger | undefined): Layer.Layer<never, InvalidOptions> => {
  if (given !== undefined && (typeof given !== "object" || given === null || typeof given.warn !== "function")) {
    return Layer.fail(new InvalidOptions({ option: "logger", detail: `expected { warn(message) }, got ${describe(given)}` }, true))
  }
  const logger = given ?? stderrLogger
  return Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ annotations, logLevel, message }) => {
      if (LogLevel.greaterThanEqual(logLevel, LogLevel.Warning)) logger.warn(lineOf(message, [...annotations]))
    })
  )
}

// A list that is none, or an entry that is no object, would fail while the nodes are made, as a TypeError.
const checkNodes = (nodes: unknown): void => {
  const list = nodeList(nodes, "an array of node options or { client }, or a layer of nodes")
  if (list instanceof Problem) throw new InvalidOptions({ option: list.option, detail: list.detail }, true)
  list.forEach((node, index) => {
    const entry = nodeEntry(node, index)
    if (entry instanceof Problem) throw new InvalidOptions({ option: entry.option, detail: entry.detail }, true)
  })
  // The nodes are made one by one (each over its driver), not by a driver's layer, which checks this.
  const twice = Address.listedTwice(list)
  if (twice !== undefined) throw new InvalidOptions({ option: "nodes", detail: twice }, true)
}

/** A node-redis client (no `status`, which ioredis clients have). */
const isNodeRedis = (node: PromiseNodeOptions): node is NodeRedis.ClientOptions =>
  "client" in node && !("status" in node.client) && typeof (node.client as NodeRedisClient).isOpen === "boolean"

/** The nodes over each one's driver, whose module is loaded only when a node needs it. */
const layerOf = async (nodes: ReadonlyArray<PromiseNodeOptions>): Promise<Layer.Layer<RedisNodes, unknown>> => {
  const nodeRedis = nodes.some(isNodeRedis) ? await import("./RedisNode/NodeRedis.js") : undefined
  const ioredis = nodes.some((node) => !isNodeRedis(node)) ? await import("./RedisNode/Ioredis.js") : undefined
  return Layer.scoped(
    RedisNodesTag,
    Effect.forEach(
      nodes,
      (node) => isNodeRedis(node) ? nodeRedis!.make(node) : ioredis!.make(withRedactedPassword(node)),
      { concurrency: "unbounded" }
    )
  )
}

// A password given as a plain string is redacted at once, so that it never shows in logs or errors.
const withRedactedPassword = (node: PromiseNodeOptions): Ioredis.NodeOptions =>
  "client" in node || typeof node.password !== "string" ? node as Ioredis.NodeOptions : { ...node, password: Redacted.make(node.password) }

/** What every hold of one manager reads: its clock, and how it runs an effect. Also the manager's identity. */
interface LockManagerContext {
  readonly clock: Clock.Clock
  readonly runPromise: <A, E>(effect: Effect.Effect<A, E>) => Promise<A>
}

// A body that is no function is refused before anything is sent: it would fail only once the lock is held.
const notABody = (body: unknown) =>
  Promise.reject(new InvalidOptions({ option: "body", detail: `expected a function (lock, signal) => …, got ${describe(body)}` }, true))

// Node makes a controller's signal when it is first read: read it now.
const withSignal = (controller: AbortController): AbortController => {
  void controller.signal
  return controller
}

/** A held lock as `PromiseLock` shows it; the state is the manager's. */
class PlainLock implements PromiseLock {
  constructor(
    readonly held: HeldLock,
    readonly manager: LockManagerContext
  ) {}
  get resources() {
    return this.held.resources
  }
  get value() {
    return this.held.value
  }
  get ttlMillis() {
    return Duration.toMillis(this.held.ttl)
  }
  get validityMillis() {
    return this.held.validityMillis
  }
  get attempts() {
    return this.held.attempts
  }
  get outcomes() {
    return this.held.outcomes
  }
  remaining(): number {
    return Math.max(0, this.held.validUntilMillis - Monotonic.unsafeMonotonicMillis(this.manager.clock))
  }
  fencingToken(): Promise<bigint> {
    return this.manager.runPromise(this.held.fencingToken)
  }
  /** What the lock is, as plain data (`JSON.stringify`, logs): not the manager's state behind it. */
  toJSON() {
    return {
      resources: this.resources,
      value: this.value,
      ttlMillis: this.ttlMillis,
      validityMillis: this.validityMillis,
      remainingMillis: this.remaining(),
      attempts: this.attempts,
      outcomes: this.outcomes
    }
  }
  /** `console.log(lock)` and `util.inspect(lock)` show `toJSON()`'s data. */
  [Symbol.for("nodejs.util.inspect.custom")](
    _depth: number,
    options: { readonly depth?: number | null },
    inspect: (value: unknown, options: object) => string
  ) {
    const depth = options.depth === undefined || options.depth === null ? options.depth : options.depth - 1
    return `PromiseLock ${inspect(this.toJSON(), { ...options, depth })}`
  }
}

const plainInspection = (view: InspectResult): PromiseInspection => ({
  resource: view.resource,
  holder: Option.getOrNull(view.holder),
  ttlMillis: Option.getOrNull(Option.map(view.ttl, Duration.toMillis)),
  nodes: view.nodes.map((node) =>
    node._tag === "Unreadable"
      ? { node: node.outcome.node, unreadable: node.outcome }
      : {
        node: node.node,
        value: Option.getOrNull(node.state.value),
        ttlMillis: Option.getOrNull(Option.map(node.state.ttl, Duration.toMillis))
      }
  )
})

const fromSettings = (
  runtime: ManagedRuntime.ManagedRuntime<RedisNodes, unknown>,
  settings: Settings.Settings,
  clock: Clock.Clock
): PromiseRedlock => {
  const time = Monotonic.timeOf(clock)
  // The layer was built by makeRedlock: its error cannot come up here.
  const runEffect: Retry.EffectRunner = <X, E>(effect: Effect.Effect<X, E>, done: (exit: Exit.Exit<X, E>) => void) =>
    (runtime.runFork(effect) as Fiber.RuntimeFiber<X, E>).addObserver(done)
  const runner = new Acquisition.PromiseRunner(runEffect)
  // Once close() was called, every call rejects at once with ManagerClosed (not after its connections failed).
  const isClosed = () => runner.closedWith !== undefined
  const closed = () => Promise.reject(new ManagerClosed({}, true))
  const runPromise = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
    isClosed()
      ? closed()
      : runtime.runPromiseExit(effect).then((exit) => Exit.isSuccess(exit) ? exit.value : Promise.reject(Cause.squash(exit.cause)))
  const acquireLock = Acquisition.acquireForPromises(settings, time, runner)
  // The auto-extension of each lock that has one, stopped before its release.
  const extensions = new Map<HeldLock, Fiber.RuntimeFiber<void, unknown>>()
  // The locks, permits and read or write holds not released yet, released by close(). A caller may
  // leave a lock to expire: those past their validity are dropped whenever the set doubled since.
  const holds = new Set<HeldLock>()
  let pruneAt = 64
  const hold = (lock: HeldLock) => {
    holds.add(lock)
    if (holds.size < pruneAt) return
    const now = time.now()
    for (const held of holds) if (!held.isHeldAt(now)) holds.delete(held)
    pruneAt = Math.max(64, 2 * holds.size)
  }
  const context: LockManagerContext = { clock, runPromise }
  let closing: Promise<void> | undefined
  // Releases of grants that came after close() was called, awaited by it before the connections go.
  const releasedOnClose: Array<Promise<unknown>> = []
  const plain = (lock: HeldLock) => new PlainLock(lock, context)

  const heldOf = (lock: PromiseLock): PlainLock => {
    if (lock instanceof PlainLock && lock.manager === context) return lock
    throw new TypeError("effect-redlock: this lock was not acquired by this lock manager")
  }

  // A granted lock or permit, extended automatically if it asked to be, released by close() if not
  // before. Granted after close() was called (its attempt was in flight): released, and the caller's
  // promise rejects.
  const holding = ({ lock, maxHoldMillis }: Acquisition.PromiseGrant) => {
    if (isClosed()) {
      releasedOnClose.push(new Promise((resolve) => Release.send(settings, lock, time, [], resolve)))
      throw new ManagerClosed({}, true)
    }
    hold(lock)
    if (maxHoldMillis !== undefined) {
      const fiber = runtime.runFork(Extension.autoExtend(settings, lock, maxHoldMillis))
      extensions.set(lock, fiber)
      fiber.addObserver(() => extensions.delete(lock))
    }
    return plain(lock)
  }

  // The options are read as AcquireOptions: the signal is not one of them, and copying them costs an object per lock.
  // Options that are no object reject with InvalidOptions (`options?.`: the acquisition checks them).
  const acquire: PromiseRedlock["acquire"] = async (resources, options) =>
    isClosed() ? closed() : holding(await acquireLock(resources, options, options?.signal))

  // Async: a lock of another manager rejects (heldOf throws), it does not throw.
  const release: PromiseRedlock["release"] = async (lock) => {
    const { held } = heldOf(lock)
    holds.delete(held)
    extensions.get(held)?.unsafeInterruptAsFork(FiberId.none)
    return new Promise<ReleaseResult>((resolve) => Release.send(settings, held, time, [], resolve))
  }

  // The controller is made before the acquisition, not after its grant: its signal (~3 µs on
  // Node 20) would delay the body's start, which is when the next holder's turn begins.
  const usingHold = async <A>(
    lock: PromiseLock,
    body: (lock: PromiseLock, signal: AbortSignal) => Promise<A>,
    controller: AbortController
  ): Promise<A> => {
    const { held } = heldOf(lock)
    const stopWatching = held.whenLost(time, () => controller.abort(held.lostBecause))
    try {
      return await body(lock, controller.signal)
    } finally {
      stopWatching()
      await release(lock)
    }
  }

  // A slot's acquire and using (a permit, a read, a write), from its acquisition.
  const slotHolding = <O extends PromiseAcquireOptions>(
    acquireSlot: (resource: string, options: O, signal: AbortSignal | undefined) => Promise<Acquisition.PromiseGrant>
  ) => ({
    // Async: a throw (options that are not an object) rejects.
    acquire: async (resource: string, options: O): Promise<PromiseLock> =>
      isClosed() ? closed() : acquireSlot(resource, options, options?.signal).then(holding),
    // The body starts one promise step after the grant: in the steps between, other callers' code runs
    // (a releaser's next acquisition, say), so there are as few as can be.
    using: async <A>(resource: string, options: O, body: (hold: PromiseLock, signal: AbortSignal) => Promise<A>): Promise<A> => {
      if (isClosed()) return closed()
      if (typeof body !== "function") return notABody(body)
      const controller = withSignal(new AbortController())
      return acquireSlot(resource, options, options?.signal).then((granted) => usingHold(holding(granted), body, controller))
    }
  })
  const permits = slotHolding<PermitOptions & PromiseAcquireOptions>(
    Semaphore.acquireSlotForPromises(settings, time, runner, Semaphore.permitSlots)
  )
  const reads = slotHolding<ReadWriteOptions & PromiseAcquireOptions>(ReadWrite.acquireReadForPromises(settings, time, runner))
  const writes = slotHolding<ReadWriteOptions & PromiseAcquireOptions>(ReadWrite.acquireWriteForPromises(settings, time, runner))

  return {
    acquire,
    release,
    extend: async (lock, ttlMillis) => {
      await runPromise(Extension.extend(settings, heldOf(lock).held, ttlMillis))
      return lock
    },
    using: async (resources, options, body) => {
      if (isClosed()) return closed()
      if (typeof body !== "function") return notABody(body)
      const controller = withSignal(new AbortController())
      return acquireLock(resources, options, options?.signal).then((granted) => usingHold(holding(granted), body, controller))
    },
    inspect: (resource) => runPromise(Effect.map(Inspection.inspect(settings, resource), plainInspection)),
    acquirePermit: permits.acquire,
    usingPermit: permits.using,
    acquireRead: reads.acquire,
    acquireWrite: writes.acquire,
    usingRead: reads.using,
    usingWrite: writes.using,
    // Once: the acquisitions still waiting leave their lines and reject first (their leaving runs in the runtime).
    close: () =>
      closing ??= runner.close(new ManagerClosed({}, true)).then(async () => {
        for (const fiber of extensions.values()) fiber.unsafeInterruptAsFork(FiberId.none)
        const left = [...holds]
        holds.clear()
        await Promise.all(left.map((held) => new Promise((resolve) => Release.send(settings, held, time, [], resolve))))
        await Promise.all(releasedOnClose)
        await runtime.dispose()
      })
  }
}
