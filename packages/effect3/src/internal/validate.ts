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
import * as Options from "@effect-redlock/core/engine/options.js"
import { configMillis } from "@effect-redlock/core/manager/durations.js"

/** At most this many resources per lock (one script call carries all their keys). */
export const maxResources = Options.maxResources

/** The longest ttl a manager accepts (`maxTtl`). */
export const longestTtlMillis = Options.longestTtlMillis

export const invalid = (option: string, detail: string) => Either.left(new InvalidOptions({ option, detail }, true))

/** A resource name or a non-empty list of distinct ones (engine/options.ts). */
export const resources = (input: unknown): Either.Either<NonEmptyReadonlyArray<string>, InvalidOptions> =>
  checked(Options.resources(input)) as Either.Either<NonEmptyReadonlyArray<string>, InvalidOptions>

/** A caller's abort signal, or none (engine/options.ts). */
export const abortSignal = (input: unknown): Either.Either<AbortSignal | undefined, InvalidOptions> =>
  checked(Options.abortSignal(input))

/** One resource (engine/options.ts). */
export const resource = (input: unknown): Either.Either<string, InvalidOptions> => checked(Options.resource(input))

export const maxPermits = Options.maxPermits

/** A semaphore's resource and its number of permits (engine/options.ts). */
export const permits = (
  resourceInput: unknown,
  limitInput: unknown
): Either.Either<{ readonly resource: string; readonly limit: number }, InvalidOptions> =>
  checked(Options.permits(resourceInput, limitInput))

/** A Duration input in milliseconds (`undefined`: not one). */
export const readMillis: Options.ReadMillis = (input) => {
  const decoded = Duration.decodeUnknown(input)
  return Option.isSome(decoded) ? Duration.toMillis(decoded.value) : undefined
}

/** A finite duration of at least 1 ms, in whole milliseconds (engine/options.ts). */
export const millis = (option: string, input: unknown): Either.Either<number, InvalidOptions> =>
  checked(Options.millis(option, input, readMillis))

export const schedule = <S>(option: string, input: S): Either.Either<S, InvalidOptions> =>
  Schedule.isSchedule(input) ? Either.right(input) : invalid(option, Options.notASchedule(input))

export const driftFactor = (input: unknown): Either.Either<number, InvalidOptions> =>
  checked(Options.driftFactor(input))

export const keyPrefix = (input: unknown): Either.Either<string, InvalidOptions> => checked(Options.keyPrefix(input))

/** A node list (an array), one of its entries (an object), a node's host and port (engine/options.ts). */
export const nodeList = (input: unknown): Either.Either<ReadonlyArray<unknown>, InvalidOptions> =>
  checked(Options.nodeList(input))
export const nodeEntry = (input: unknown): Either.Either<object, InvalidOptions> => checked(Options.nodeEntry(input))
export const host = (input: unknown): Either.Either<string, InvalidOptions> => checked(Options.host(input))
export const port = (input: unknown): Either.Either<number, InvalidOptions> => checked(Options.port(input))

export const nodeCount = (count: number): Either.Either<number, InvalidOptions> => checked(Options.nodeCount(count))

export const maxTtl = (input: unknown): Either.Either<number, InvalidOptions> =>
  checked(Options.maxTtl(input, readMillis))

export const flag = (option: string, input: unknown): Either.Either<boolean, InvalidOptions> =>
  checked(Options.flag(option, input))

/** The ttl and node timeout of an acquisition, checked against each other and the manager's limits (engine/options.ts). */
export const timing = (
  ttlInput: unknown,
  nodeTimeoutInput: unknown,
  drift: number,
  maxTtlMillis: number
): Either.Either<{ readonly ttlMillis: number; readonly nodeTimeoutMillis: number }, InvalidOptions> =>
  checked(Options.timing(ttlInput, nodeTimeoutInput, drift, maxTtlMillis, readMillis))

/** A checked value, or its problem as InvalidOptions. */
const checked = <A>(value: A | Options.Problem): Either.Either<A, InvalidOptions> =>
  value instanceof Options.Problem ? invalid(value.option, value.detail) : Either.right(value)

export const count = (option: string, input: unknown): Either.Either<number, InvalidOptions> =>
  checked(Options.count(option, input))

export const positiveCount = (option: string, input: unknown): Either.Either<number, InvalidOptions> =>
  checked(Options.positiveCount(option, input))

/** A node's `waitForReplicas`: `undefined` when off (engine/options.ts). */
export const waitForReplicas = (
  input: unknown
): Either.Either<{ readonly count: number; readonly timeoutMillis: number } | undefined, InvalidOptions> =>
  checked(Options.waitForReplicas(input, readMillis))

/** A node's `cluster` (engine/options.ts), and what it cannot have beside it. */
export const cluster = (
  options: Parameters<typeof Options.cluster>[0]
): Either.Either<Options.Cluster | undefined, InvalidOptions> => checked(Options.cluster(options))

/** A node's `sentinel` (engine/options.ts). */
export const sentinel = (input: unknown): Either.Either<Options.Sentinel | undefined, InvalidOptions> =>
  checked(Options.sentinel(input))

/** `autoExtend`: `undefined` when off, else the longest hold in ms (Infinity when unbounded; engine/options.ts). */
export const autoExtend = (input: unknown): Either.Either<number | undefined, InvalidOptions> =>
  checked(Options.autoExtend(input, readMillis))

/** The fencing counters' prefix (engine/options.ts). */
export const fencePrefix = (input: unknown, keyPrefix: string): Either.Either<string, InvalidOptions> =>
  checked(Options.fencePrefix(input, keyPrefix))

/** `Redlock.parseDuration` (core's manager/durations.ts). */
export const parseDuration = (text: string): Option.Option<Duration.Duration> =>
  Option.map(Option.fromNullable(configMillis(text)), Duration.millis)
