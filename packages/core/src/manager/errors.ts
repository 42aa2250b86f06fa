/**
 * The typed errors of the plain lock manager (effect-redlock/Promise): the
 * same names, `_tag`s, fields and messages as the Effect packages' errors,
 * as plain `Error` classes. A promise caller tells them apart by `_tag` or
 * `instanceof`; the Effect packages' classes of the same names recognise
 * them too (`instanceof`), so that code written against either keeps working.
 *
 * @internal
 */
import type { RefusalReason } from "../engine/attempt.js"
import type { LossReason } from "../engine/holding.js"
import * as Messages from "../engine/messages.js"
import type { RefusalFields } from "../engine/slots.js"
import type { MakeNodeError, NodeErrorReason, NodeOutcome } from "../engine/node.js"

/** The mark of this module's errors, by which the Effect packages' classes recognise them. */
export const PlainErrorTypeId: unique symbol = Symbol.for("effect-redlock/PlainError") as never

/** Whether `u` is one of this module's errors with `tag`. */
export const isPlainError = (u: unknown, tag: string): boolean =>
  typeof u === "object" && u !== null && (u as { [PlainErrorTypeId]?: unknown })[PlainErrorTypeId] === true &&
  (u as { _tag?: unknown })._tag === tag

/**
 * Make `errorClass` (an Effect package's error of the same name) recognise
 * this module's errors with `tag`: `error instanceof` it holds for both.
 */
export const recognisePlain = (errorClass: object, tag: string): void => {
  Object.defineProperty(errorClass, Symbol.hasInstance, {
    value: (u: unknown): boolean => Function.prototype[Symbol.hasInstance].call(errorClass, u) || isPlainError(u, tag)
  })
}

/**
 * What every error of the plain manager is: an `Error` with a `_tag`, whose
 * fields are own enumerable properties (logged and serialized as data) and
 * whose message is made from them when first read. No stack trace is
 * captured for the errors made on every refused attempt (`withoutStack`).
 */
abstract class PlainError extends Error {
  abstract readonly _tag: string
  declare readonly [PlainErrorTypeId]: true

  override get name(): string {
    return this._tag
  }

  /** The fields, for `JSON.stringify` and logs. */
  toJSON(): object {
    return { ...this, _tag: this._tag, message: this.message }
  }
}

// On the prototype: not one more field in every error's logs.
Object.defineProperty(PlainError.prototype, PlainErrorTypeId, { value: true })

/** An error made without a stack trace: a waiter's refusals are made often and read seldom. */
export const withoutStack = <E>(make: () => E): E => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return make()
  } finally {
    Error.stackTraceLimit = limit
  }
}

/** What a node could not do (documented in the Effect packages' `RedisNode` module). */
export class RedisNodeError extends PlainError {
  readonly _tag = "RedisNodeError"
  readonly node: string
  readonly reason: NodeErrorReason
  readonly detail: string
  declare readonly cause: unknown
  constructor(fields: Parameters<MakeNodeError>[0]) {
    super()
    this.node = fields.node
    this.reason = fields.reason
    this.detail = fields.detail
    if (fields.cause !== undefined) Object.defineProperty(this, "cause", { value: fields.cause, enumerable: false })
  }
  override get message(): string {
    return Messages.nodeError(this)
  }
}

export const makeNodeError: MakeNodeError = (fields) => new RedisNodeError(fields)

/**
 * A failure that is not a node error already (a node that broke its
 * contract) as one. A node an Effect package opened rejects with that
 * package's RedisNodeError, which is kept: the same fields.
 */
export const nodeError = (node: { readonly name: string }, error: unknown): RedisNodeError =>
  error instanceof RedisNodeError || (error as { readonly _tag?: unknown } | undefined)?._tag === "RedisNodeError"
    ? error as RedisNodeError
    : new RedisNodeError({ node: node.name, reason: "Unknown", detail: String(error), cause: error })

/** What each node answered, with this module's node errors. */
export type Outcome = NodeOutcome<RedisNodeError>

/** An option or argument is invalid. Raised before any node is contacted. */
export class InvalidOptions extends PlainError {
  readonly _tag = "InvalidOptions"
  constructor(readonly option: string, readonly detail: string) {
    super()
  }
  override get message(): string {
    return Messages.invalidOptions(this.option, this.detail)
  }
}

/** The lock could not be acquired within the retry schedule; `outcomes` are the last attempt's. */
export class LockNotAcquired extends PlainError {
  readonly _tag = "LockNotAcquired"
  readonly resources: ReadonlyArray<string>
  readonly reason: RefusalReason
  /** Attempts made, including the last one. */
  readonly attempts: number
  /** Time from the start of the first attempt to the end of the last one. */
  readonly elapsedMillis: number
  /** How many nodes had to agree. */
  readonly quorum: number
  /** What each node answered on the last attempt. */
  readonly outcomes: ReadonlyArray<Outcome>
  constructor(fields: RefusalFields<Outcome>) {
    super()
    this.resources = fields.resources
    this.reason = fields.reason
    this.attempts = fields.attempts
    this.elapsedMillis = fields.elapsedMillis
    this.quorum = fields.quorum
    this.outcomes = fields.outcomes
  }
  override get message(): string {
    return Messages.notAcquired(this)
  }
}

/** The lock is no longer held: work under it must stop. */
export class LockLost extends PlainError {
  readonly _tag = "LockLost"
  constructor(
    readonly resources: ReadonlyArray<string>,
    readonly reason: LossReason,
    /** What each node answered, when nodes were asked. */
    readonly outcomes: ReadonlyArray<Outcome>
  ) {
    super()
  }
  override get message(): string {
    return Messages.lost(this.resources, this.reason)
  }
}

/** An extension did not reach a majority of nodes in time; the lock is still valid until its deadline. */
export class LockNotExtended extends PlainError {
  readonly _tag = "LockNotExtended"
  constructor(readonly resources: ReadonlyArray<string>, readonly outcomes: ReadonlyArray<Outcome>) {
    super()
  }
  override get message(): string {
    return Messages.notExtended(this.resources, this.outcomes)
  }
}

/** The lock was extended as often as `maxExtensions` allows. */
export class ExtensionLimitReached extends PlainError {
  readonly _tag = "ExtensionLimitReached"
  constructor(readonly resources: ReadonlyArray<string>, readonly maxExtensions: number) {
    super()
  }
  override get message(): string {
    return Messages.extensionLimitReached(this.resources, this.maxExtensions)
  }
}

/** A semaphore's `limit` or a read-write lock's `maxReaders` differs from the one its holders use. */
export class SettingConflict extends PlainError {
  readonly _tag = "SettingConflict"
  constructor(
    readonly resource: string,
    readonly setting: "limit" | "maxReaders",
    readonly requested: number,
    readonly recorded: number
  ) {
    super()
  }
  override get message(): string {
    return Messages.settingConflict(this)
  }
}

/** The lock manager was closed: every call made after `close()` rejects with it. */
export class ManagerClosed extends PlainError {
  readonly _tag = "ManagerClosed"
  override get message(): string {
    return Messages.managerClosed
  }
}

/** No fencing token could be issued: fewer than a majority of nodes answered in time. */
export class FencingTokenUnavailable extends PlainError {
  readonly _tag = "FencingTokenUnavailable"
  constructor(readonly resources: ReadonlyArray<string>, readonly outcomes: ReadonlyArray<Outcome>) {
    super()
  }
  override get message(): string {
    return Messages.fencingTokenUnavailable(this.resources, this.outcomes)
  }
}

/** Every error the plain lock manager rejects with. */
export type RedlockError =
  | InvalidOptions
  | LockNotAcquired
  | LockLost
  | LockNotExtended
  | ExtensionLimitReached
  | SettingConflict
  | ManagerClosed
  | FencingTokenUnavailable
