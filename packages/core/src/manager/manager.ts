/**
 * The plain lock manager: acquisitions, releases, extensions, inspection and
 * `close()` over opened nodes, with the bookkeeping that ties them together
 * (the holds `close()` releases, the auto-extensions it stops). The public
 * module (effect-redlock/Promise) opens the nodes and documents the API.
 *
 * @internal
 */
import * as Engine from "../engine/release.js"
import * as StartupNotices from "../engine/startupNotices.js"
import * as Acquisition from "./acquisition.js"
import type { DurationInput } from "./durations.js"
import { InvalidOptions, ManagerClosed, type Outcome } from "./errors.js"
import * as Extension from "./extension.js"
import { HeldLock } from "./heldLock.js"
import * as Inspection from "./inspection.js"
import * as Settings from "./settings.js"
import * as Slots from "./slots.js"
import type * as FrontEnd from "./frontEndTypes.js"

/** What a release found (frontEndTypes.ts). */
export interface ReleaseResult extends FrontEnd.ReleaseResultOf<Outcome> {}

/** A held lock (or permit, or read or write hold) in plain values. */
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
  readonly outcomes: ReadonlyArray<Outcome>
  /** Milliseconds of validity left now (0 once it ran out); extensions move it. */
  remaining(): number
  /** A fencing token for this hold (docs/safety.md); rejects with `LockLost` or `FencingTokenUnavailable`. */
  fencingToken(): Promise<bigint>
}

type Resources = string | readonly [string, ...Array<string>]

/** A lock manager for promise code. */
export interface PromiseRedlock {
  /** Acquire a lock on one resource, or on several at once; rejects with `LockNotAcquired` or `InvalidOptions`. */
  readonly acquire: (resources: Resources, options: Acquisition.AcquireOptions) => Promise<PromiseLock>
  /** Release on every node (stops its auto-extension first); never rejects for a node's failure. */
  readonly release: (lock: PromiseLock) => Promise<ReleaseResult>
  /** Extend to `ttl` (default: its own); rejects with `LockLost`, `LockNotExtended` or `ExtensionLimitReached`. */
  readonly extend: (lock: PromiseLock, ttl?: DurationInput) => Promise<PromiseLock>
  /**
   * Acquire, run `body`, release however it ends. The signal aborts (with
   * the `LockLost` error as its reason) when the lock is lost: its validity
   * ran out, or nodes said it is no longer ours.
   */
  readonly using: <A>(
    resources: Resources,
    options: Acquisition.AcquireOptions,
    body: (lock: PromiseLock, signal: AbortSignal) => Promise<A>
  ) => Promise<A>
  /** Who holds a resource on each node. */
  readonly inspect: (resource: string) => Promise<Inspection.Inspection>
  /** Who holds each of the `limit` permits of a resource. */
  readonly inspectPermits: (resource: string, limit: number) => Promise<Inspection.PermitsInspection>
  /** Who holds a read-write lock (of `maxReaders` read slots, default 16): its readers, or its writer. */
  readonly inspectReadWrite: (resource: string, maxReaders?: number) => Promise<Inspection.ReadWriteInspection>
  /** One of `limit` permits of a resource (a semaphore); release it with `release`. */
  readonly acquirePermit: (resource: string, options: Slots.PermitOptions) => Promise<PromiseLock>
  /** `using` with a permit. */
  readonly usingPermit: <A>(
    resource: string,
    options: Slots.PermitOptions,
    body: (permit: PromiseLock, signal: AbortSignal) => Promise<A>
  ) => Promise<A>
  /** A read hold, shared with other readers (a read-write lock). */
  readonly acquireRead: (resource: string, options: Slots.ReadWriteOptions) => Promise<PromiseLock>
  /** A write hold: no reader, no other writer. */
  readonly acquireWrite: (resource: string, options: Slots.ReadWriteOptions) => Promise<PromiseLock>
  /** `using` with a read hold. */
  readonly usingRead: <A>(
    resource: string,
    options: Slots.ReadWriteOptions,
    body: (hold: PromiseLock, signal: AbortSignal) => Promise<A>
  ) => Promise<A>
  /** `using` with a write hold. */
  readonly usingWrite: <A>(
    resource: string,
    options: Slots.ReadWriteOptions,
    body: (hold: PromiseLock, signal: AbortSignal) => Promise<A>
  ) => Promise<A>
  /**
   * Stop the manager: acquisitions still waiting leave their lines and reject
   * with `ManagerClosed`, auto-extensions stop, the locks, permits and holds
   * still held are released (a `using` body's signal aborts with `LockLost`),
   * connections it opened are closed. Every call made afterwards rejects
   * with `ManagerClosed`, but `release`: over your own clients it still
   * releases; over the connections closed here it answers `Incomplete` (the
   * keys expire with their ttl). Calling it again returns the same promise.
   */
  readonly close: () => Promise<void>
}

/** Where a manager writes its warnings, each one line of plain text. */
export interface Logger {
  readonly warn: (message: string) => void
}

const alreadyReleased: ReleaseResult = { status: "AlreadyReleased", released: 0, outcomes: [] }

/** Send the release of `lock` on every node (its state marked); `done` once decided. */
const sendRelease = (settings: Settings.Settings, lock: HeldLock, done: (result: ReleaseResult) => void): void => {
  if (lock.released) return done(alreadyReleased)
  lock.released = true
  // Released after its validity ran out: it was lost before, unnoticed.
  if (lock.deadline <= settings.time.now()) lock.markLostQuietly("Expired")
  const { nodeError, nodes, quorum, time } = settings
  Engine.release(nodes, quorum, lock.keys, lock.value, lock.nodeTimeoutMillis, nodeError, time, (result) => {
    lock.markLostQuietly("Released", result.outcomes)
    done(result)
  })
}

/** The release of `lock` on every node, resolved once decided. */
export const released = (settings: Settings.Settings, lock: HeldLock): Promise<ReleaseResult> =>
  new Promise((resolve) => sendRelease(settings, lock, resolve))

// A body that is no function is refused before anything is sent: it would fail only once the lock is held.
const notABody = (body: unknown) =>
  Promise.reject(new InvalidOptions("body", `expected a function (lock, signal) => …, got ${typeof body}`))

// Node makes a controller's signal when it is first read: read it now.
const withSignal = (controller: AbortController): AbortController => {
  void controller.signal
  return controller
}

/** The manager over `settings`' nodes; `closeNodes` closes what was opened for it. */
export const make = (settings: Settings.Settings, logger: Logger, closeNodes: () => Promise<void>): PromiseRedlock => {
  for (
    const notice of StartupNotices.atStart(
      settings.nodes,
      settings.quorum,
      settings.quarantineMillis,
      settings.time.now()
    )
  ) {
    logger.warn(notice)
  }
  const acquisitions = new Acquisition.Acquisitions()
  // Once close() was called, every call rejects at once with ManagerClosed (not after its connections failed).
  const isClosed = () => settings.lifecycle.closed
  const closed = () => Promise.reject(new ManagerClosed())
  const acquireLock = Acquisition.acquirer(settings, acquisitions)
  // The auto-extension of each lock that has one, stopped before its release.
  const extensions = new Map<HeldLock, () => void>()
  // The locks, permits and holds not released yet, released by close(). A caller may leave a lock
  // to expire: those past their validity are dropped whenever the set doubled since.
  const holds = new Set<HeldLock>()
  let pruneAt = 64
  const hold = (lock: HeldLock) => {
    holds.add(lock)
    if (holds.size < pruneAt) return
    const now = settings.time.now()
    for (const held of holds) if (!held.isHeldAt(now)) holds.delete(held)
    pruneAt = Math.max(64, 2 * holds.size)
  }
  let closing: Promise<void> | undefined
  // Releases of grants that came after close() was called, awaited by it before the connections go.
  const releasedOnClose: Array<Promise<unknown>> = []

  const heldOf = (lock: PromiseLock): HeldLock => {
    if (lock instanceof HeldLock && lock.manager === settings) return lock
    throw new TypeError("effect-redlock: this lock was not acquired by this lock manager")
  }

  // A granted lock, extended automatically if it asked to be, released by close() if not before.
  // Granted after close() was called (its attempt was in flight): released, and the caller's promise rejects.
  const holding = ({ lock, maxHoldMillis }: Acquisition.Grant): HeldLock => {
    if (isClosed()) {
      releasedOnClose.push(released(settings, lock))
      throw new ManagerClosed()
    }
    hold(lock)
    if (maxHoldMillis !== undefined) extensions.set(lock, Extension.autoExtend(settings, lock, maxHoldMillis))
    return lock
  }

  const stopExtending = (lock: HeldLock) => {
    const stop = extensions.get(lock)
    if (stop === undefined) return
    extensions.delete(lock)
    stop()
  }

  // Async: a lock of another manager rejects (heldOf throws), it does not throw.
  const release: PromiseRedlock["release"] = async (lock) => {
    const held = heldOf(lock)
    holds.delete(held)
    stopExtending(held)
    return released(settings, held)
  }

  // The controller is made before the acquisition, not after its grant: making its signal would
  // delay the body's start, which is when the next holder's turn begins.
  const usingHold = async <A>(
    lock: HeldLock,
    body: (lock: PromiseLock, signal: AbortSignal) => Promise<A>,
    controller: AbortController
  ): Promise<A> => {
    const stopWatching = lock.whenLost(settings.time, () => controller.abort(lock.lostBecause))
    try {
      return await body(lock, controller.signal)
    } finally {
      stopWatching()
      await release(lock)
    }
  }

  // A kind of hold's acquire and using, from its acquisition.
  const holdingOf = <R, O>(acquireHold: (resources: R, options: O) => Promise<Acquisition.Grant>) => ({
    acquire: async (resources: R, options: O): Promise<PromiseLock> =>
      isClosed() ? closed() : acquireHold(resources, options).then(holding),
    // The body starts one promise step after the grant: in the steps between, other callers' code runs.
    using: async <A>(
      resources: R,
      options: O,
      body: (hold: PromiseLock, signal: AbortSignal) => Promise<A>
    ): Promise<A> => {
      if (isClosed()) return closed()
      if (typeof body !== "function") return notABody(body)
      const controller = withSignal(new AbortController())
      return acquireHold(resources, options).then((granted) => usingHold(holding(granted), body, controller))
    }
  })
  const locks = holdingOf<Resources, Acquisition.AcquireOptions>((resources, options) =>
    acquireLock(resources, options)
  )
  const permits = holdingOf(Slots.permitAcquirer(settings, acquisitions))
  const reads = holdingOf(Slots.readAcquirer(settings, acquisitions))
  const writes = holdingOf(Slots.writeAcquirer(settings, acquisitions))

  return {
    acquire: locks.acquire,
    release,
    extend: async (lock, ttl) => {
      if (isClosed()) return closed()
      await Extension.extend(settings, heldOf(lock), ttl)
      return lock
    },
    using: locks.using,
    inspect: (resource) => isClosed() ? closed() : Inspection.inspect(settings, resource),
    inspectPermits: (resource, limit) => isClosed() ? closed() : Inspection.inspectPermits(settings, resource, limit),
    inspectReadWrite: (resource, maxReaders) =>
      isClosed() ? closed() : Inspection.inspectReadWrite(settings, resource, maxReaders),
    acquirePermit: permits.acquire,
    usingPermit: permits.using,
    acquireRead: reads.acquire,
    acquireWrite: writes.acquire,
    usingRead: reads.using,
    usingWrite: writes.using,
    // Once: the acquisitions still waiting leave their lines and reject first.
    close: () => {
      settings.lifecycle.closed = true
      return closing ??= acquisitions.close(new ManagerClosed()).then(async () => {
        for (const stop of extensions.values()) stop()
        extensions.clear()
        const left = [...holds]
        holds.clear()
        await Promise.all(left.map((held) => released(settings, held)))
        await Promise.all(releasedOnClose)
        await closeNodes()
      })
    }
  }
}
