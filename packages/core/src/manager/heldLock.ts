/**
 * A lock (or permit, or read or write hold) the plain manager granted: the
 * engine's holding (its deadline, release and loss), what the caller reads
 * of it in plain values, and its fencing tokens and extensions.
 *
 * @internal
 */
import * as Fencing from "../engine/fencing.js"
import { Holding, type LossReason } from "../engine/holding.js"
import { FencingTokenUnavailable, LockLost, ManagerClosed, type Outcome, type RedisNodeError } from "./errors.js"
import type { Settings } from "./settings.js"

export interface HeldLockFields {
  readonly resources: ReadonlyArray<string>
  readonly keys: ReadonlyArray<string>
  readonly value: string
  readonly ttlMillis: number
  readonly validityMillis: number
  readonly validUntilMillis: number
  readonly attempts: number
  readonly outcomes: ReadonlyArray<Outcome>
  readonly nodeTimeoutMillis: number
  readonly acquiredAtMillis: number
}

export class HeldLock extends Holding<RedisNodeError> {
  /** The resources it holds (for a permit or a read hold: its slot). */
  readonly resources: ReadonlyArray<string>
  /** The ttl it was acquired with, in ms. */
  readonly ttlMillis: number
  /** How long it was valid when granted, in ms (ttl less the attempt's time and the drift allowance). */
  readonly validityMillis: number
  /** Attempts made to acquire it. */
  readonly attempts: number
  /** What each node answered to the attempt that granted it. */
  readonly outcomes: ReadonlyArray<Outcome>
  /** The per-node timeout chosen at acquisition, used by extension and release too. */
  readonly nodeTimeoutMillis: number
  /** When it was acquired, on the monotonic timeline. */
  readonly acquiredAtMillis: number
  private lostError: LockLost | undefined
  private tokens: ReadonlyArray<bigint> | undefined
  /** Tokens being issued: callers at the same time wait for the same ones. */
  private issuing: Promise<ReadonlyArray<bigint>> | undefined
  /** The last extension asked for (none yet: most locks are never extended by hand); they run one at a time. */
  private lastExtension: Promise<unknown> | undefined

  constructor(fields: HeldLockFields, private readonly settings: Settings) {
    super(fields.validUntilMillis, fields.keys, fields.value)
    this.resources = fields.resources
    this.ttlMillis = fields.ttlMillis
    this.validityMillis = fields.validityMillis
    this.attempts = fields.attempts
    this.outcomes = fields.outcomes
    this.nodeTimeoutMillis = fields.nodeTimeoutMillis
    this.acquiredAtMillis = fields.acquiredAtMillis
  }

  /** The manager's settings: which manager granted it. */
  get manager(): Settings {
    return this.settings
  }

  /** Milliseconds of validity left now (0 once it ran out); extensions move it. */
  remaining(): number {
    return Math.max(0, this.deadline - this.settings.time.now())
  }

  /** Why the lock was lost, if it was. Built on first use: every release marks a loss, few ask why. */
  get lostBecause(): LockLost | undefined {
    if (this.lostAs === undefined) return undefined
    this.lostError ??= new LockLost(this.resources, this.lostAs.reason, this.lostAs.outcomes)
    return this.lostError
  }

  /** Record the loss (the first reason wins), wake everything waiting for it, and return its error. */
  markLost(reason: LossReason, outcomes: ReadonlyArray<Outcome> = []): LockLost {
    this.markLostQuietly(reason, outcomes)
    return this.lostBecause!
  }

  protected lostFor(): void {}

  /**
   * A fencing token for this hold (docs/safety.md): issued once per lock,
   * and only while it is held (a token is a claim to write).
   */
  fencingToken(): Promise<bigint> {
    return this.fencingTokens().then((tokens) => tokens[0])
  }

  /** One token per resource; rejects with `LockLost` or `FencingTokenUnavailable`. */
  fencingTokens(): Promise<ReadonlyArray<bigint>> {
    if (this.settings.lifecycle.closed) return Promise.reject(new ManagerClosed())
    if (this.lossAt(this.settings.time.now()) !== undefined) return Promise.reject(this.lostBecause)
    if (this.tokens !== undefined) return Promise.resolve(this.tokens)
    return this.issuing ??= new Promise<ReadonlyArray<bigint>>((resolve, reject) => {
      const { settings } = this
      const fenceKeys = this.resources.map((resource) => settings.fencePrefix + resource)
      Fencing.issue(settings, this, fenceKeys, this.nodeTimeoutMillis, settings.time, (end) => {
        this.issuing = undefined
        if (end._tag === "Issued") {
          this.tokens = end.tokens
          return resolve(end.tokens)
        }
        reject(
          end._tag === "Lost"
            ? this.lostBecause!
            : new FencingTokenUnavailable(this.resources, end.outcomes)
        )
      })
    })
  }

  /**
   * Run extensions of this lock one at a time: two at once could leave the
   * deadline of the one that finished last, not of the one the nodes applied
   * last.
   */
  oneExtensionAtATime<A>(extension: () => Promise<A>): Promise<A> {
    const next = this.lastExtension === undefined ? extension() : this.lastExtension.then(extension, extension)
    this.lastExtension = next.catch(() => {})
    return next
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
