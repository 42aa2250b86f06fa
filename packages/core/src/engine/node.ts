/**
 * The node interface as the engine speaks it: plain values and promises, no
 * `effect` import, so that every shell (Effect 3, Effect 4, promises) and
 * every driver (memory, ioredis ...) meet here. Each shell's public
 * `RedisNode` module documents these types for its users and builds its own
 * values (errors, `Option`s, `Duration`s) from them.
 *
 * @internal
 */

/**
 * Why a node could not carry out an operation (every front end's
 * `RedisNodeErrorReason`, its `RedisNodeError`'s `reason`):
 *
 * - `WrongType`: a key holds a value that is not a string (Redis `WRONGTYPE`).
 * - `ReadOnly`: the node is a replica (Redis `READONLY`).
 * - `OutOfMemory`: the node refuses writes (Redis `OOM`, `maxmemory` reached).
 * - `Auth`: authentication failed or is missing (`NOAUTH`, `WRONGPASS`, `NOPERM`).
 * - `NoScript`: the server lost the lock scripts (`NOSCRIPT`): the command did not run.
 * - `Busy`: the node is loading, busy running a script, or its master is down.
 * - `CrossSlot`: a Redis Cluster node was given keys of several hash slots (resources of one lock without a common `{tag}`),
 *   or a node that is no cluster node talks to a cluster's master (its `detail` says so; so does a `MOVED` reply's, as `Unknown`).
 * - `Unavailable`: no connection to the node right now, or it does not answer.
 * - `Unknown`: any other error reply or driver failure.
 */
export const nodeErrorReasons = [
  "WrongType",
  "ReadOnly",
  "OutOfMemory",
  "Auth",
  "NoScript",
  "Busy",
  "CrossSlot",
  "Unavailable",
  "Unknown"
] as const

/** One of {@link nodeErrorReasons}. */
export type NodeErrorReason = typeof nodeErrorReasons[number]

/** What the engine reads of a node's error: each shell's `RedisNodeError` has these fields. */
export interface NodeError {
  readonly node: string
  readonly reason: NodeErrorReason
  readonly detail: string
}

/**
 * How a driver makes its errors: the shell that builds the node gives its own
 * `RedisNodeError` constructor, so a node's promises reject with that shell's
 * error class.
 */
export type MakeNodeError = (fields: {
  readonly node: string
  readonly reason: NodeErrorReason
  readonly detail: string
  readonly cause?: unknown
}) => NodeError

/** What one node answered to one operation (documented in each shell's RedisNode module). */
export type NodeOutcome<E extends NodeError = NodeError> =
  | { readonly _tag: "Ok"; readonly node: string; readonly millis: number }
  | { readonly _tag: "Held"; readonly node: string; readonly millis: number }
  | { readonly _tag: "TimedOut"; readonly node: string; readonly millis: number }
  | { readonly _tag: "Failed"; readonly node: string; readonly millis: number; readonly error: E }
  | { readonly _tag: "NotAwaited"; readonly node: string; readonly millis: number }
  | { readonly _tag: "Abstained"; readonly node: string; readonly millis: number; readonly detail: string }

/** Whether a server keeps every key it acknowledged across a restart (see each shell's `Persistence`). */
export interface Persistence {
  readonly keepsKeys: boolean
  readonly detail: string
}

/** How far the jumps a node saw moved its server's clock (NodeRun's `clockLead`). */
export interface ClockLead {
  readonly nowMillis: number
  readonly mostMillis: number
}

/** The server run a node talks to (see each shell's `NodeRun`). */
export type NodeRun =
  | {
    readonly _tag: "Known"
    readonly id: string
    readonly startedAtMillis: number
    readonly persistence?: Persistence | undefined
    /** Why the server may evict a key it holds, lock keys included (a `maxmemory` with an evicting policy); none: it does not, or unknown. */
    readonly evicts?: string | undefined
    /**
     * When this node saw the server's clock jump forward, and by how much:
     * its keys may have expired early, so it sits out the restart quarantine
     * from then, whatever its persistence. None: never seen.
     */
    readonly clockJump?: { readonly atMillis: number; readonly byMillis: number } | undefined
    /**
     * How far the jumps this node saw moved its server's clock against this
     * process's (ms, forward positive; whatever the run): now, and the most
     * it has been. None: no jump seen.
     */
    readonly clockLead?: ClockLead | undefined
  }
  | {
    readonly _tag: "Unknown"
    readonly detail: string
    /** Why, where it is only that the server is not reached: no connection yet, or one being made again. */
    readonly unreached?: "NotConnected" | "Reconnecting" | undefined
  }

/** A place in the line of waiters for a resource (see `acquireInTurn`). */
export interface Turn {
  /**
   * The order among waiters: lower comes first, and equal tickets are ordered
   * by lock value, so that every node orders the same waiters the same way.
   * The lock manager uses the wall-clock time of an acquisition's first
   * attempt.
   */
  readonly ticket: number
  /**
   * When not granted, stay in line this long (refreshed by each attempt); `0`
   * takes no place, and leaves the place held, if any (a waiter that cannot
   * hear releases: a key handed to it would sit idle). A waiter that stops
   * asking drops out of the line when its lease ends.
   */
  readonly leaseMillis: number
  /**
   * How long ago, by the waiter's own monotonic clock, it took its ticket
   * (the lock manager sends it with every attempt). A node then seats the
   * waiter at its ticket, bounded to within a second of when the node's own
   * clock says the waiter began, at every attempt: every node orders the
   * same waiters alike whatever it lost or when it was reached, so the lines
   * converge (see scripts.ts, placeOf). Without it a node keeps the place a
   * waiter got when it joined, bounded by the node's time then.
   */
  readonly ageMillis?: number | undefined
  /**
   * The setting every holder of a resource's slots must share (a semaphore's
   * `limit`, a read-write lock's `maxReaders`), sent with the acquisition of
   * a slot: a node that has another one recorded for the resource answers
   * `SettingConflict` and writes nothing; a grant records it, kept as long
   * as any slot of the resource is held there (scripts.ts, settingKey).
   */
  readonly setting?: string | undefined
}

/**
 * What a node answered to `acquireInTurn` or `acquireSlot`; `SettingConflict`
 * only to a turn with a `setting`; `slot` only to `acquireSlot` (the index,
 * in the keys it was sent, of the slot set).
 */
export type TurnAnswer =
  | { readonly _tag: "Granted"; readonly slot?: number }
  | { readonly _tag: "Held"; readonly ttlMillis: number | undefined }
  | { readonly _tag: "NotYourTurn" }
  | { readonly _tag: "SettingConflict"; readonly recorded: string }

/** One key as `inspect` reads it: its value and remaining time to live, when it has them. */
export interface KeyReading {
  readonly value: string | undefined
  readonly ttlMillis: number | undefined
}

/** One registered watch of a key's releases on one node. */
export interface ReleaseWatch {
  /**
   * `undefined` when the node was already listening to the key's releases
   * (a very recent one was then replayed to the new watcher). Otherwise the
   * node starts listening now, and this settles, never failing, once it does:
   * a release until then may go unheard.
   */
  readonly ready: Promise<void> | undefined
  /** Stop calling `onRelease`. Calling it again does nothing. */
  readonly stop: () => void
}

/**
 * A node's atomic operations, each a promise that rejects only with the
 * node's error (see `MakeNodeError`). The semantics are documented on each
 * shell's `RedisNode`.
 */
export interface NodePromises {
  readonly acquire: (keys: ReadonlyArray<string>, value: string, ttlMillis: number) => Promise<boolean>
  readonly acquireInTurn: (
    keys: ReadonlyArray<string>,
    value: string,
    ttlMillis: number,
    turn: Turn
  ) => Promise<TurnAnswer>
  /**
   * One slot of a resource's slots (`keys`, all of them, in the order to try
   * them) in turn: the slot already holding `value`, else the first free one
   * when fewer waiters stand before this one in the resource's line than
   * slots are free (and no waiting writer does); `Held` when every slot is
   * held (with the soonest expiry).
   */
  readonly acquireSlot: (
    keys: ReadonlyArray<string>,
    value: string,
    ttlMillis: number,
    turn: Turn
  ) => Promise<TurnAnswer>
  readonly release: (
    keys: ReadonlyArray<string>,
    value: string,
    announce: boolean,
    keepPlace?: boolean
  ) => Promise<number>
  readonly extend: (keys: ReadonlyArray<string>, value: string, ttlMillis: number) => Promise<boolean>
  readonly inspect: (key: string) => Promise<KeyReading>
  /** The new counts; `undefined` when any key is not ours. */
  readonly incrementFences: (
    keys: ReadonlyArray<string>,
    value: string,
    fenceKeys: ReadonlyArray<string>
  ) => Promise<ReadonlyArray<bigint> | undefined>
  readonly commitFences: (
    keys: ReadonlyArray<string>,
    value: string,
    fenceKeys: ReadonlyArray<string>,
    tokens: ReadonlyArray<bigint>
  ) => Promise<boolean>
}

/** The names of a node's operations. */
export type NodeOperation = keyof NodePromises

/** One Redis master as the engine talks to it. */
export interface Node {
  readonly name: string
  readonly run: () => NodeRun
  readonly promises: NodePromises
  /** Register a watch of `key`'s releases at once; none: waiters only poll and take no place in line. */
  readonly watchReleasesNow?: ((key: string, onRelease: (next: string | null) => void) => ReleaseWatch) | undefined
  /** Whether the node's release announcements reach this process now; none: `true` where it watches. */
  readonly hearsReleases?: (() => boolean) | undefined
  /**
   * Whether a slot this node hands a waiter by a release counts without the
   * waiter's own call; none: `true`. Not where the node confirms each grant
   * with its replicas (`waitForReplicas`): the release that handed the slot
   * waited for none, and only the waiter's own call, which finds the slot
   * already its own, waits for them.
   */
  readonly countsHandOvers?: boolean | undefined
}
