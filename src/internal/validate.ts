/**
 * Validation of user input at the boundary, before any I/O.
 *
 * @internal
 */
import type { NonEmptyReadonlyArray } from "effect/Array"
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { InvalidOptions } from "./errors.js"
import * as Algorithm from "../engine/algorithm.js"

/** Keys per lock at most: one Lua call carries them all, and a lock on more is almost surely a bug. */
export const maxResources = 1024

/** Longest ttl ever accepted: Redis keeps expiry in milliseconds; beyond a year the lock is not a lease any more. */
export const longestTtlMillis = 365 * 24 * 60 * 60 * 1000

export const invalid = (option: string, detail: string) => Either.left(new InvalidOptions({ option, detail }, true))

export const resources = (
  input: unknown
): Either.Either<NonEmptyReadonlyArray<string>, InvalidOptions> => {
  if (typeof input === "string") {
    // One string, the common case: no list to build or check for repeats.
    const problem = resourceProblem(input)
    return problem === undefined ? Either.right([input]) : invalid("resources", problem)
  }
  if (!Array.isArray(input)) {
    return invalid("resources", `expected a string or an array of strings, got ${describe(input)}`)
  }
  const list: ReadonlyArray<unknown> = input
  if (list.length === 0) return invalid("resources", "at least one resource is required")
  if (list.length > maxResources) {
    return invalid("resources", `at most ${maxResources} resources per lock, got ${list.length}`)
  }
  const seen = new Set<string>()
  for (const resource of list) {
    if (typeof resource !== "string") return invalid("resources", `every resource must be a string, got ${describe(resource)}`)
    const problem = resourceProblem(resource)
    if (problem !== undefined) return invalid("resources", problem)
    if (seen.has(resource)) return invalid("resources", `resource "${resource}" is listed twice`)
    seen.add(resource)
  }
  return Either.right(list as unknown as NonEmptyReadonlyArray<string>)
}

const resourceProblem = (resource: string): string | undefined => {
  if (resource.length === 0) return "a resource must not be the empty string"
  // The keys of a resource's line of waiters are its lock key + NUL + a name (internal/scripts.ts).
  if (resource.includes("\u0000")) return "a resource must not contain the NUL character"
  return undefined
}

/**
 * The most permits of one semaphore: a refused round of an acquisition tries
 * every slot once, so the limit bounds what one round sends.
 */
export const maxPermits = 64

/** A semaphore's resource (one string, checked as a lock's) and its limit. */
export const permits = (
  resourceInput: unknown,
  limitInput: unknown
): Either.Either<{ readonly resource: string; readonly limit: number }, InvalidOptions> => {
  if (typeof resourceInput !== "string") {
    return invalid("resource", `a semaphore guards one resource, a string; got ${describe(resourceInput)}`)
  }
  const resource = resources(resourceInput)
  if (Either.isLeft(resource)) return invalid("resource", resource.left.detail)
  if (!(typeof limitInput === "number" && Number.isInteger(limitInput) && limitInput >= 1 && limitInput <= maxPermits)) {
    return invalid("limit", `must be a whole number from 1 to ${maxPermits}, got ${describe(limitInput)}`)
  }
  return Either.right({ resource: resourceInput, limit: limitInput })
}

/** A duration in whole milliseconds (rounded up), finite and at least 1 ms. */
export const millis = (option: string, input: unknown): Either.Either<number, InvalidOptions> => {
  const decoded = Duration.decodeUnknown(input)
  if (Option.isNone(decoded)) return invalid(option, `expected a Duration input such as "10 seconds", got ${describe(input)}`)
  if (!Duration.isFinite(decoded.value)) return invalid(option, "must be finite")
  const ms = Math.ceil(Duration.toMillis(decoded.value))
  // Named as given: Duration reads NaN and negative inputs as zero.
  if (!(ms >= 1)) return invalid(option, `must be at least 1 millisecond, got ${describeDuration(input)}`)
  return Either.right(ms)
}

const describeDuration = (input: unknown): string =>
  Duration.isDuration(input)
    ? Duration.format(input)
    : Array.isArray(input)
    ? `[${input.map(String).join(", ")}]`
    : describe(input)

/** A retry policy: a `Schedule` (JavaScript callers can pass anything). */
export const schedule = <S>(option: string, input: S): Either.Either<S, InvalidOptions> =>
  Schedule.isSchedule(input) ? Either.right(input) : invalid(option, `must be a Schedule, got ${describe(input)}`)

export const driftFactor = (input: unknown): Either.Either<number, InvalidOptions> =>
  typeof input === "number" && Number.isFinite(input) && input >= 0 && input < 1
    ? Either.right(input)
    : invalid("driftFactor", `must be a number in [0, 1), got ${describe(input)}`)

export const keyPrefix = (input: unknown): Either.Either<string, InvalidOptions> =>
  typeof input !== "string"
    ? invalid("keyPrefix", `must be a string, got ${describe(input)}`)
    : input.includes("\u0000")
    ? invalid("keyPrefix", "must not contain the NUL character")
    : Either.right(input)

export const nodeCount = (count: number): Either.Either<number, InvalidOptions> =>
  count >= 1 ? Either.right(count) : invalid("nodes", "at least one Redis node is required")

/** The manager's `maxTtl`: the longest ttl its locks may have. */
export const maxTtl = (input: unknown): Either.Either<number, InvalidOptions> =>
  Either.flatMap(millis("maxTtl", input), (ms) =>
    ms > longestTtlMillis ? invalid("maxTtl", `must be at most one year, got ${ms} ms`) : Either.right(ms))

export const flag = (option: string, input: unknown): Either.Either<boolean, InvalidOptions> =>
  typeof input === "boolean" ? Either.right(input) : invalid(option, `must be true or false, got ${describe(input)}`)

/** The ttl and per-node timeout of one acquisition, checked against each other and the manager's `maxTtl`. */
export const timing = (
  ttlInput: unknown,
  nodeTimeoutInput: unknown,
  drift: number,
  maxTtlMillis: number
): Either.Either<{ readonly ttlMillis: number; readonly nodeTimeoutMillis: number }, InvalidOptions> => {
  if (ttlInput === undefined) return invalid("ttl", "is required, e.g. { ttl: \"10 seconds\" }")
  const ttl = millis("ttl", ttlInput)
  if (Either.isLeft(ttl)) return Either.left(ttl.left)
  const ttlMillis = ttl.right
  if (ttlMillis > maxTtlMillis) {
    return invalid(
      "ttl",
      `${ttlMillis} ms is above the manager's maxTtl of ${maxTtlMillis} ms; raise maxTtl ` +
        `(a restarted node then stays out of quorums that long), or use autoExtend with a shorter ttl`
    )
  }
  const driftMillis = Algorithm.drift(ttlMillis, drift)
  if (ttlMillis <= driftMillis) {
    return invalid("ttl", `${ttlMillis} ms leaves no validity after the clock drift allowance of ${driftMillis} ms`)
  }
  const nodeTimeout = nodeTimeoutInput === undefined
    ? Either.right(Algorithm.defaultNodeTimeoutMillis(ttlMillis))
    : millis("nodeTimeout", nodeTimeoutInput)
  if (Either.isLeft(nodeTimeout)) return Either.left(nodeTimeout.left)
  const nodeTimeoutMillis = nodeTimeout.right
  if (nodeTimeoutMillis >= ttlMillis) {
    return invalid("nodeTimeout", `${nodeTimeoutMillis} ms must be well below the ttl of ${ttlMillis} ms`)
  }
  return Either.right({ ttlMillis, nodeTimeoutMillis })
}

const describe = (u: unknown): string => {
  if (typeof u === "string") return JSON.stringify(u)
  if (typeof u === "number" || typeof u === "boolean" || typeof u === "bigint" || u === null || u === undefined) {
    return String(u)
  }
  return Array.isArray(u) ? "an array" : typeof u
}

/** A whole number of at least zero. */
export const count = (option: string, input: unknown): Either.Either<number, InvalidOptions> =>
  typeof input === "number" && Number.isInteger(input) && input >= 0
    ? Either.right(input)
    : invalid(option, `must be a whole number >= 0, got ${describe(input)}`)

export const positiveCount = (option: string, input: unknown): Either.Either<number, InvalidOptions> =>
  typeof input === "number" && Number.isInteger(input) && input >= 1
    ? Either.right(input)
    : invalid(option, `must be a whole number >= 1, got ${describe(input)}`)

/** `autoExtend`: `undefined` when off, else the longest hold in ms (Infinity when unbounded). */
export const autoExtend = (input: unknown): Either.Either<number | undefined, InvalidOptions> => {
  if (input === undefined || input === false) return Either.right(undefined)
  if (input === true) return Either.right(Infinity)
  if (typeof input !== "object" || input === null) {
    return invalid("autoExtend", `expected a boolean or { maxHold }, got ${describe(input)}`)
  }
  const maxHold = (input as { readonly maxHold?: unknown }).maxHold
  return maxHold === undefined ? Either.right(Infinity) : millis("autoExtend.maxHold", maxHold)
}

/** The fencing counters' prefix: a string whose keys can never be lock keys, and the reverse. */
export const fencePrefix = (input: unknown, keyPrefix: string): Either.Either<string, InvalidOptions> => {
  if (typeof input !== "string" || input.length === 0) {
    return invalid("fencePrefix", `must be a non-empty string, got ${describe(input)}`)
  }
  // With an empty keyPrefix, resources must simply not start with the fence prefix (README).
  return (keyPrefix !== "" && input.startsWith(keyPrefix)) || keyPrefix.startsWith(input)
    ? invalid("fencePrefix", `"${input}" overlaps keyPrefix "${keyPrefix}": a resource's lock key could be a fence key`)
    : Either.right(input)
}

const shortDuration = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/
const shortUnits: Record<string, (n: number) => Duration.Duration> = {
  ms: Duration.millis,
  s: Duration.seconds,
  m: Duration.minutes,
  h: Duration.hours
}

/** `Redlock.parseDuration`: `500ms`, `30s`, `2m`, `1h`, or what `Duration.decode` reads from a string. */
export const parseDuration = (text: string): Option.Option<Duration.Duration> => {
  const short = shortDuration.exec(text)
  if (short !== null) return Option.some(shortUnits[short[2]](Number(short[1])))
  return Option.filter(Duration.decodeUnknown(text), Duration.isFinite)
}
