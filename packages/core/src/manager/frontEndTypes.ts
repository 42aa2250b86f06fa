/**
 * The options and results every front end shares, documented once here:
 * each front end names its own types for durations (`Duration`: Effect 3's
 * `DurationInput`, Effect 4's `Duration.Input`, the promise API's
 * milliseconds or duration strings), retries, `Option`s and outcomes
 * (`Redlock.Options extends ManagerOptionsOf<Duration.DurationInput,
 * RetrySchedule>`).
 *
 * @since 0.1.0
 */

/**
 * The options of a lock manager.
 *
 * @since 0.1.0
 * @category models
 */
export interface ManagerOptionsOf<Duration, Retry> {
  /** Prefix of every Redis key. Default `"redlock:"`. */
  readonly keyPrefix?: string | undefined
  /** Clock drift allowance as a fraction of the ttl (plus 2 ms). In [0, 1). Default `0.01`. */
  readonly driftFactor?: number | undefined
  /** Default per-node timeout. Default: 1% of the lock's ttl, within [10 ms, 250 ms]. */
  readonly nodeTimeout?: Duration | undefined
  /** Default retry policy. Default: 3 retries, each after 100–200 ms chosen at random (the front end's `defaultRetry`). */
  readonly retry?: Retry | undefined
  /**
   * How many times one lock may be extended (by hand or automatically).
   * Bounded so that a stuck holder cannot keep a resource forever. Default 1000.
   */
  readonly maxExtensions?: number | undefined
  /**
   * Prefix of the fencing counters, one key per resource, kept without
   * expiry. It must not overlap `keyPrefix`. Default `"redlock-fence:"`.
   */
  readonly fencePrefix?: string | undefined
  /**
   * The longest ttl of any lock (acquire and extend reject longer ones). It is
   * also how long a restarted node stays in quarantine. Every client of the
   * same resources must use the same value or larger. Default 30 seconds.
   */
  readonly maxTtl?: Duration | undefined
  /**
   * Restart quarantine: a node whose server started less than `maxTtl` ago
   * (plus the drift allowance) abstains: it is still asked, and its keys are
   * released as usual, but its yes does not count toward a quorum of acquire,
   * extend or fencing. A server that restarted without persistence has lost
   * the keys it held, and counting it could give a second client a quorum
   * while the first still holds the lock. The client cannot tell a restart
   * from a first start, so a freshly started cluster serves no lock for
   * `maxTtl`, except on servers that keep their keys across restarts
   * (`appendonly yes` with `appendfsync always`, read from each server): those
   * vote at once. Turn it off only for a throw-away development server, or
   * when nodes are never restarted sooner than `maxTtl` after a crash.
   * Default `true`.
   */
  readonly restartQuarantine?: boolean | undefined
  /**
   * Fair handoff: waiters are served in line. Each node keeps a line of
   * waiters per resource, ordered by the time of each acquisition's first
   * attempt; a free resource goes only to the first in line, and a release
   * wakes that waiter alone (by name). A refused acquisition joins the line
   * (unless its retry is `noRetry`) and holds its place for a lease renewed
   * by each attempt, so a waiter that crashed drops out within about
   * `2 x` its retry interval (at most the lock's ttl); one that gives up or
   * is interrupted leaves at once. `false` ignores the lines and the
   * release announcements: greedy, the behaviour of other Redlock clients,
   * where waiters poll on their retry schedule and the client that just
   * released usually wins again. Default `true`.
   */
  readonly fairHandoff?: boolean | undefined
}

/**
 * Automatic extension of a held lock.
 *
 * @since 0.1.0
 * @category models
 */
export interface AutoExtendOptionsOf<Duration> {
  /**
   * Stop extending once the lock has been held this long; it then expires at
   * the end of its validity (and `withLock` interrupts its body). Default: no
   * bound other than `maxExtensions`.
   */
  readonly maxHold?: Duration | undefined
}

/**
 * The options of one acquisition.
 *
 * @since 0.1.0
 * @category models
 */
export interface AcquireOptionsOf<Duration, Retry> {
  /** Time to live of the keys; the lock's validity is a little less. Required. */
  readonly ttl: Duration
  /** Per-node timeout for this lock; must be below the ttl. Default: the manager's. */
  readonly nodeTimeout?: Duration | undefined
  /** Retry policy for this acquisition. Default: the manager's. */
  readonly retry?: Retry | undefined
  /**
   * Extend the lock in the background while it is held: when half the ttl is
   * left, by the full ttl. Extension stops when the lock is released (its
   * scope closes), at `maxHold`, at `maxExtensions`, or when the lock is lost
   * (an extension that finds it taken marks it lost). Default `false`.
   */
  readonly autoExtend?: boolean | AutoExtendOptionsOf<Duration> | undefined
}

/**
 * The options of a semaphore's permit: the acquisition's, and how many
 * permits the resource has.
 *
 * @since 0.1.0
 * @category models
 */
export interface PermitOptionsOf<Duration, Retry> extends AcquireOptionsOf<Duration, Retry> {
  /**
   * How many permits the resource has: a whole number from 1 to 64. Every
   * client of a resource must use the same value: the nodes record the
   * holders' value, and a permit asked for with another fails at once with
   * `SettingConflict`; a new value takes effect once the resource is idle.
   */
  readonly limit: number
}

/**
 * The options of a read or a write hold: the acquisition's, and how many
 * readers at once.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReadWriteOptionsOf<Duration, Retry> extends AcquireOptionsOf<Duration, Retry> {
  /**
   * How many readers may hold at once: a whole number from 1 to 64, default
   * 16. Every client of a resource must use the same value: the nodes
   * record the holders' value, and a read or write asked for with another
   * fails at once with `SettingConflict`; a new value takes effect once the
   * resource is idle. A writer's attempt sets this many keys on each node.
   */
  readonly maxReaders?: number | undefined
}

/**
 * How often and how long apart to retry a refused acquisition (`retry(...)`).
 *
 * @since 0.1.0
 * @category models
 */
export interface RetryOptionsOf<Duration> {
  /**
   * The delay before each retry (a number is milliseconds); at least 1 ms. A
   * waiter in line sleeps at most this long: a release announced for it, the
   * holder's keys running out or its place in line ending brings the retry
   * forward (it adds none).
   */
  readonly delay: Duration
  /**
   * How many retries after the first attempt: a whole number, 0 or more. An
   * acquisition makes at most `times + 1` attempts in all, early ones included.
   */
  readonly times: number
  /** Each delay is multiplied by a factor drawn at random in `[min, max]`. Default `{ min: 0.8, max: 1.2 }`. */
  readonly jitter?: { readonly min: number; readonly max: number } | undefined
}

/**
 * What a release did.
 * - `Released`: a majority of nodes deleted our keys.
 * - `NotHeld`: a majority of nodes no longer held them for us: they expired,
 *   or another client took them after they expired (whose keys are left alone).
 * - `Incomplete`: fewer than a majority answered; the keys left behind expire
 *   within the ttl.
 * - `AlreadyReleased`: the lock was released before; nothing was sent.
 *
 * @since 0.1.0
 * @category models
 */
export type ReleaseStatus = "Released" | "NotHeld" | "Incomplete" | "AlreadyReleased"

/**
 * What each node answered to a release.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReleaseResultOf<Outcome> {
  readonly status: ReleaseStatus
  /** Nodes on which our keys were deleted. */
  readonly released: number
  readonly outcomes: ReadonlyArray<Outcome>
}

/**
 * Who holds a resource, node by node, and whether a majority agrees
 * (`inspect`).
 *
 * @since 0.1.0
 * @category models
 */
export interface InspectResultOf<NodeState, Holder, Ttl> {
  readonly resource: string
  /** Each node's reading of the resource's key, or why it could not be read. */
  readonly nodes: ReadonlyArray<NodeState>
  /** The lock value held on a majority of nodes, if any: then the resource is locked. */
  readonly holder: Holder
  /** The shortest remaining time to live among the majority that holds it. */
  readonly ttl: Ttl
}

/**
 * Who holds the permits of a semaphore, slot by slot (`inspectPermits`).
 *
 * @since 0.1.0
 * @category models
 */
export interface PermitsInspectionOf<Inspection> {
  readonly resource: string
  readonly limit: number
  /** Each slot as `inspect` reads a lock; a slot's `resource` is its lock's name. */
  readonly slots: ReadonlyArray<Inspection>
  /** How many slots a majority of nodes holds: the permits in use. */
  readonly held: number
}

/**
 * Who holds a read-write lock: its read slots, its readers, or its writer
 * (`inspectReadWrite`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ReadWriteInspectionOf<Inspection, Writer> {
  readonly resource: string
  readonly maxReaders: number
  /** Each read slot as `inspect` reads a lock. */
  readonly slots: ReadonlyArray<Inspection>
  /** How many read slots a majority holds for readers. */
  readonly readers: number
  /**
   * The writer's lock value, when one value holds every slot on a majority
   * (with `maxReaders` 1, a reader looks the same, and is reported as one);
   * none otherwise.
   */
  readonly writer: Writer
}

/**
 * The types a front end's in-memory node controls are written in: the
 * results of its controls (an effect of nothing, of the live keys, of a
 * count), its duration input, and how it names a failure to inject or none.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryControlTypes {
  readonly Done: unknown
  readonly Keys: unknown
  readonly Count: unknown
  readonly Duration: unknown
  readonly Failure: unknown
}

/**
 * Fault controls of the in-memory nodes, by node index.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryNodesControlOf<T extends MemoryControlTypes> {
  /** The nodes, in the same order as they are provided. */
  readonly size: number
  /** A down node drops every operation: it neither applies nor answers it. */
  readonly setDown: (index: number, down: boolean) => T["Done"]
  /** Added latency before each operation is applied and answered. */
  readonly setLatency: (index: number, latency: T["Duration"]) => T["Done"]
  /** Every following operation fails with this error reason, until set to none. */
  readonly setFailure: (index: number, reason: T["Failure"]) => T["Done"]
  /**
   * The node's release announcements reach watchers this much after the
   * release's answer (on Redis they travel on another connection). Default 0.
   */
  readonly setAnnouncementDelay: (index: number, delay: T["Duration"]) => T["Done"]
  /** Every fault of the node cleared: up, no added latency, no failure, announcements with the answers. Its keys are kept. */
  readonly heal: (index: number) => T["Done"]
  /**
   * A restart: the node's run starts now (the nodes' first run started long
   * before they were made). Every key is lost, unless the node was made
   * durable.
   */
  readonly restart: (index: number) => T["Done"]
  /**
   * Whether the node keeps its keys across a restart, as a server with an
   * append-only file and `appendfsync always` does; its run says so from now
   * on. Default `false` (no persistence).
   */
  readonly setDurable: (index: number, durable: boolean) => T["Done"]
  /**
   * The node's wall clock jumps `millis` forward (negative: back), the
   * shell's clock untouched: keys whose ttl it passes expire at once, as on a
   * server whose clock was set. A node that read the clock before (with a
   * vote) sees the jump in its next vote's reading, and sits out the restart
   * quarantine from then (docs/safety.md, Kleppmann's scenarios).
   */
  readonly jumpClock: (index: number, millis: number) => T["Done"]
  /** Store a key of another type (as `LPUSH` would), to exercise `WrongType`. */
  readonly putForeign: (index: number, key: string) => T["Done"]
  /** Store a plain string key, with an optional time to live. */
  readonly putString: (index: number, key: string, value: string, ttlMillis?: number) => T["Done"]
  /** The live (unexpired) keys of a node; a resource's line of waiters shows as its key + `"\u0000queue"`. */
  readonly keys: (index: number) => T["Keys"]
  /** How many operations the node has been asked to do, applied or not. */
  readonly operations: (index: number) => T["Count"]
  /** How many waiters watch a node for releases (any key). */
  readonly releaseWatchers: (index: number) => T["Count"]
}
