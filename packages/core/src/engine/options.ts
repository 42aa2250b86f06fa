/**
 * The checks of users' options, for every shell: each returns the checked
 * value or a `Problem` naming the option and what is expected, which the
 * shell turns into its own `InvalidOptions`. Durations are read by the
 * shell (`ReadMillis`: its `Duration` module), the rest here.
 *
 * @internal
 */
import * as Algorithm from "./algorithm.js"

/** What is wrong with an option, in the words of `InvalidOptions`. */
export class Problem {
  constructor(readonly option: string, readonly detail: string) {}
}

/** A duration input in milliseconds, as the shell's `Duration` reads it; `undefined`: not a duration. */
export type ReadMillis = (input: unknown) => number | undefined

/** At most this many resources per lock (one script call carries all their keys). */
export const maxResources = 1024

/** The longest ttl a manager accepts (`maxTtl`). */
export const longestTtlMillis = 365 * 24 * 60 * 60 * 1000

/** A resource name or a non-empty list of distinct ones. */
export const resources = (input: unknown): ReadonlyArray<string> | Problem => {
  if (typeof input === "string") {
    // One string, the common case: no list to build or check for repeats.
    const problem = resourceProblem(input)
    return problem === undefined ? [input] : new Problem("resources", problem)
  }
  if (!Array.isArray(input)) {
    return new Problem("resources", `expected a string or an array of strings, got ${describe(input)}`)
  }
  const list: ReadonlyArray<unknown> = input
  if (list.length === 0) return new Problem("resources", "at least one resource is required")
  if (list.length > maxResources) {
    return new Problem("resources", `at most ${maxResources} resources per lock, got ${list.length}`)
  }
  const seen = new Set<string>()
  for (const resource of list) {
    if (typeof resource !== "string") {
      return new Problem("resources", `every resource must be a string, got ${describe(resource)}`)
    }
    const problem = resourceProblem(resource)
    if (problem !== undefined) return new Problem("resources", problem)
    if (seen.has(resource)) return new Problem("resources", `resource "${resource}" is listed twice`)
    seen.add(resource)
  }
  return list as ReadonlyArray<string>
}

const resourceProblem = (resource: string): string | undefined => {
  if (resource.length === 0) return "a resource must not be the empty string"
  // The keys of a resource's line of waiters are its lock key + NUL + a name (the scripts).
  if (resource.includes("\u0000")) return "a resource must not contain the NUL character"
  return undefined
}

/** One resource, as `inspect` reads one: a string (a list is not one resource). */
export const resource = (input: unknown): string | Problem => {
  if (typeof input !== "string") {
    return new Problem("resource", `expected one resource, a string; got ${describe(input)}`)
  }
  const problem = resourceProblem(input)
  return problem === undefined ? input : new Problem("resource", problem)
}

/** At most this many permits per semaphore (readers per read-write lock): a writer's script takes every slot. */
export const maxPermits = 64

/** A semaphore's resource (one string) and its number of permits. */
export const permits = (
  resourceInput: unknown,
  limitInput: unknown
): { readonly resource: string; readonly limit: number } | Problem => {
  if (typeof resourceInput !== "string") {
    return new Problem("resource", `a semaphore guards one resource, a string; got ${describe(resourceInput)}`)
  }
  const problem = resourceProblem(resourceInput)
  if (problem !== undefined) return new Problem("resource", problem)
  if (
    !(typeof limitInput === "number" && Number.isInteger(limitInput) && limitInput >= 1 && limitInput <= maxPermits)
  ) {
    return new Problem("limit", `must be a whole number from 1 to ${maxPermits}, got ${describe(limitInput)}`)
  }
  return { resource: resourceInput, limit: limitInput }
}

/** The lock resource of one slot of a semaphore (`permit`) or of a read-write lock's readers (`read`). */
export const slotResource = (resource: string, slot: number, kind: "permit" | "read"): string =>
  // Users' resources never hold a NUL character (`resources`), so no lock of theirs can take a slot.
  `${resource}\u0000${kind}${slot}`

/** A finite duration of at least 1 ms, rounded up to whole milliseconds. */
export const millis = (option: string, input: unknown, read: ReadMillis): number | Problem => {
  const ms = read(input)
  if (ms === undefined) {
    return new Problem(option, `expected a Duration input such as "10 seconds", got ${describe(input)}`)
  }
  if (!Number.isFinite(ms) && !Number.isNaN(ms)) return new Problem(option, "must be finite")
  const whole = Math.ceil(ms)
  // Named as given (a Duration reads NaN and negative inputs as zero); a Duration value by its milliseconds.
  const given = typeof input === "object" && input !== null && !Array.isArray(input) ? `${ms} ms` : describe(input)
  if (!(whole >= 1)) return new Problem(option, `must be at least 1 millisecond, got ${given}`)
  return whole
}

/** A duration of 0 or more, in milliseconds (`Lock.guard`'s `minRemaining`). */
export const nonNegativeMillis = (option: string, input: unknown, read: ReadMillis): number | Problem => {
  const ms = read(input)
  if (ms === undefined) {
    return new Problem(option, `expected a Duration input such as "10 seconds", got ${describe(input)}`)
  }
  return ms >= 0 ? ms : new Problem(option, `must be 0 or more, got ${describe(input)}`)
}

/** The ttl and node timeout of an acquisition, checked against each other and the manager's limits. */
export const timing = (
  ttlInput: unknown,
  nodeTimeoutInput: unknown,
  driftFactor: number,
  maxTtlMillis: number,
  read: ReadMillis
): { readonly ttlMillis: number; readonly nodeTimeoutMillis: number } | Problem => {
  if (ttlInput === undefined) return new Problem("ttl", "is required, e.g. { ttl: \"10 seconds\" }")
  const ttlMillis = millis("ttl", ttlInput, read)
  if (ttlMillis instanceof Problem) return ttlMillis
  if (ttlMillis > maxTtlMillis) {
    return new Problem(
      "ttl",
      `${ttlMillis} ms is above the manager's maxTtl of ${maxTtlMillis} ms; raise maxTtl ` +
        `(a restarted node then stays out of quorums that long), or use autoExtend with a shorter ttl`
    )
  }
  const driftMillis = Algorithm.drift(ttlMillis, driftFactor)
  if (ttlMillis <= driftMillis) {
    return new Problem("ttl", `${ttlMillis} ms leaves no validity after the clock drift allowance of ${driftMillis} ms`)
  }
  const nodeTimeoutMillis = nodeTimeoutInput === undefined
    ? Algorithm.defaultNodeTimeoutMillis(ttlMillis)
    : millis("nodeTimeout", nodeTimeoutInput, read)
  if (nodeTimeoutMillis instanceof Problem) return nodeTimeoutMillis
  if (nodeTimeoutMillis >= ttlMillis) {
    return new Problem("nodeTimeout", `${nodeTimeoutMillis} ms must be well below the ttl of ${ttlMillis} ms`)
  }
  return { ttlMillis, nodeTimeoutMillis }
}

export const driftFactor = (input: unknown): number | Problem =>
  typeof input === "number" && Number.isFinite(input) && input >= 0 && input < 1
    ? input
    : new Problem("driftFactor", `must be a number in [0, 1), got ${describe(input)}`)

export const keyPrefix = (input: unknown): string | Problem =>
  typeof input !== "string"
    ? new Problem("keyPrefix", `must be a string, got ${describe(input)}`)
    : input.includes("\u0000")
    ? new Problem("keyPrefix", "must not contain the NUL character")
    : input

// A URL given where connection options or a host go: where it goes instead.
const urlHint = (input: unknown): string =>
  typeof input === "string" && input.includes("://") ? " (a URL goes as { url })" : ""

/** A node list: an array (each entry checked by `nodeEntry`); `expected` says what else the caller takes. */
export const nodeList = (
  input: unknown,
  expected = "an array of node options or { client }"
): ReadonlyArray<unknown> | Problem =>
  Array.isArray(input) ? input : new Problem("nodes", `expected ${expected}, got ${describe(input)}${urlHint(input)}`)

/** One entry of a node list (the `index`th, where known): an object (connection options, or `{ client }`). */
export const nodeEntry = (input: unknown, index?: number): object | Problem =>
  typeof input === "object" && input !== null
    ? input
    : new Problem(
      "nodes",
      `${index === undefined ? "a node" : `node ${index}`} must be connection options or { client }, got ${
        describe(input)
      }${urlHint(input)}`
    )

/**
 * A node's host: a host name or an IP address. A slash or an `@` is in
 * neither: such a host (a URL, `user@host`) could never be resolved, and the
 * node would wait for a connection that never comes.
 */
export const host = (input: unknown): string | Problem =>
  typeof input === "string" && input.length > 0 && !/[/@\s]/.test(input)
    ? input
    : new Problem("host", `must be a host name or an IP address, got ${describe(input)}${urlHint(input)}`)

/** A node's TCP port. */
export const port = (input: unknown): number | Problem =>
  typeof input === "number" && Number.isInteger(input) && input >= 1 && input <= 65535
    ? input
    : new Problem("port", `must be a whole number from 1 to 65535, got ${describe(input)}`)

export const nodeCount = (count: number): number | Problem =>
  count >= 1 ? count : new Problem("nodes", "at least one Redis node is required")

export const maxTtl = (input: unknown, read: ReadMillis): number | Problem => {
  const ms = millis("maxTtl", input, read)
  return ms instanceof Problem || ms <= longestTtlMillis
    ? ms
    : new Problem("maxTtl", `must be at most one year, got ${ms} ms`)
}

export const flag = (option: string, input: unknown): boolean | Problem =>
  typeof input === "boolean" ? input : new Problem(option, `must be true or false, got ${describe(input)}`)

/** A whole number, 0 or more (`maxExtensions`). */
export const count = (option: string, input: unknown): number | Problem =>
  typeof input === "number" && Number.isInteger(input) && input >= 0
    ? input
    : new Problem(option, `must be a whole number >= 0, got ${describe(input)}`)

/** A whole number, 1 or more (`maxPendingCommands`). */
export const positiveCount = (option: string, input: unknown): number | Problem =>
  typeof input === "number" && Number.isInteger(input) && input >= 1
    ? input
    : new Problem(option, `must be a whole number >= 1, got ${describe(input)}`)

/** A node's `waitForReplicas`: `undefined` when off, else how many replicas must acknowledge each write, within how long. */
export const waitForReplicas = (
  input: unknown,
  read: ReadMillis
): { readonly count: number; readonly timeoutMillis: number } | undefined | Problem => {
  if (input === undefined) return undefined
  if (typeof input !== "object" || input === null) {
    return new Problem("waitForReplicas", `expected { replicas, timeout }, got ${describe(input)}`)
  }
  const { replicas, timeout } = input as { readonly replicas?: unknown; readonly timeout?: unknown }
  const count = positiveCount("waitForReplicas.replicas", replicas)
  if (count instanceof Problem) return count
  const timeoutMillis = millis("waitForReplicas.timeout", timeout, read)
  return timeoutMillis instanceof Problem ? timeoutMillis : { count, timeoutMillis }
}

/** A node's `sentinel`: the master's name and the Sentinels to ask for it (at least one, each a host and a port). */
export interface Sentinel {
  readonly master: string
  readonly sentinels: ReadonlyArray<{ readonly host: string; readonly port: number }>
}

export const sentinel = (input: unknown): Sentinel | undefined | Problem => {
  if (input === undefined) return undefined
  if (typeof input !== "object" || input === null) {
    return new Problem("sentinel", `expected { master, sentinels }, got ${describe(input)}`)
  }
  const { master, sentinels } = input as { readonly master?: unknown; readonly sentinels?: unknown }
  if (typeof master !== "string" || master.length === 0) {
    return new Problem("sentinel.master", `expected the master's name, got ${describe(master)}`)
  }
  if (!Array.isArray(sentinels) || sentinels.length === 0) {
    return new Problem("sentinel.sentinels", `expected at least one { host, port }, got ${describe(sentinels)}`)
  }
  const checked = hostsAndPorts("sentinel.sentinels", sentinels)
  return checked instanceof Problem ? checked : { master, sentinels: checked }
}

/** A node's `cluster`: some of the cluster's nodes to start from (each a host and a port). */
export interface Cluster {
  readonly nodes: ReadonlyArray<{ readonly host: string; readonly port: number }>
}

/** A node's `cluster`, and what it cannot have beside it. */
export const cluster = (options: {
  readonly cluster?: unknown
  readonly sentinel?: unknown
  readonly db?: unknown
  readonly waitForReplicas?: unknown
}): Cluster | undefined | Problem => {
  const input = options.cluster
  if (input === undefined) return undefined
  if (typeof input !== "object" || input === null) {
    return new Problem("cluster", `expected { nodes }, got ${describe(input)}`)
  }
  const nodes = (input as { readonly nodes?: unknown }).nodes
  if (!Array.isArray(nodes) || nodes.length === 0) {
    return new Problem("cluster.nodes", `expected at least one { host, port }, got ${describe(nodes)}`)
  }
  const checked = hostsAndPorts("cluster.nodes", nodes)
  if (checked instanceof Problem) return checked
  return options.sentinel !== undefined
    ? new Problem("cluster", "a node is a cluster or a Sentinel's master, not both")
    : options.db !== undefined && options.db !== 0
    ? new Problem("db", `a Redis Cluster has database 0 only, got ${describe(options.db)}`)
    : options.waitForReplicas !== undefined
    // WAIT names no key: it would go to any master, not the one that holds the lock's keys.
    ? new Problem("waitForReplicas", "not available on cluster nodes")
    : { nodes: checked }
}

const hostsAndPorts = (
  option: string,
  entries: ReadonlyArray<unknown>
): ReadonlyArray<{ readonly host: string; readonly port: number }> | Problem => {
  const checked: Array<{ readonly host: string; readonly port: number }> = []
  for (const entry of entries) {
    const { host, port } = (typeof entry === "object" && entry !== null ? entry : {}) as {
      readonly host?: unknown
      readonly port?: unknown
    }
    if (
      typeof host !== "string" || host.length === 0 || typeof port !== "number" || !Number.isInteger(port) ||
      port < 1 || port > 65535
    ) {
      return new Problem(option, `expected { host, port } with a port from 1 to 65535, got ${describe(entry)}`)
    }
    checked.push({ host, port })
  }
  return checked
}

/** `autoExtend`: `undefined` when off, else the longest hold in ms (Infinity when unbounded). */
export const autoExtend = (input: unknown, read: ReadMillis): number | undefined | Problem => {
  if (input === undefined || input === false) return undefined
  if (input === true) return Infinity
  if (typeof input !== "object" || input === null) {
    return new Problem("autoExtend", `expected a boolean or { maxHold }, got ${describe(input)}`)
  }
  const maxHold = (input as { readonly maxHold?: unknown }).maxHold
  return maxHold === undefined ? Infinity : millis("autoExtend.maxHold", maxHold, read)
}

/** The fencing counters' prefix: a string whose keys can never be lock keys, and the reverse. */
export const fencePrefix = (input: unknown, keyPrefix: string): string | Problem => {
  if (typeof input !== "string" || input.length === 0) {
    return new Problem("fencePrefix", `must be a non-empty string, got ${describe(input)}`)
  }
  // With an empty keyPrefix, resources must simply not start with the fence prefix (README).
  return (keyPrefix !== "" && input.startsWith(keyPrefix)) || keyPrefix.startsWith(input)
    ? new Problem(
      "fencePrefix",
      `"${input}" overlaps keyPrefix "${keyPrefix}": a resource's lock key could be a fence key`
    )
    : input
}

/**
 * The detail of a `retry` that is no Schedule (the shells tell one apart: a
 * Schedule of their own Effect). Options of `retry(...)` given as they are
 * (`{ delay, times }`, as node-redlock takes them) are told where they go.
 */
export const notASchedule = (input: unknown): string => {
  const retryOptions = typeof input === "object" && input !== null && ("delay" in input || "times" in input)
  return `must be a Schedule, got ${describe(input)}` +
    (retryOptions ? " (a { delay, times } object makes one through retry(...), as retry: retry({ delay, times }))" : "")
}

// node-redlock's settings, which a caller migrating from it may pass as they were, and where each goes here.
const nodeRedlockSettings: ReadonlyArray<readonly [string, string]> = [
  ["retryCount", "retry: retry({ delay, times })"],
  ["retryDelay", "retry: retry({ delay, times })"],
  ["retryJitter", "retry: retry({ delay, times, jitter })"],
  ["automaticExtensionThreshold", "autoExtend: true on the acquisition"]
]

/**
 * A node-redlock setting among a manager's or an acquisition's options, said
 * where it goes here instead of being ignored (a `retryCount: 0` meant "try
 * once"); `undefined`: none.
 */
export const nodeRedlockSetting = (input: unknown): Problem | undefined => {
  if (typeof input !== "object" || input === null) return undefined
  for (const [name, here] of nodeRedlockSettings) {
    if (name in input) {
      return new Problem(name, `is node-redlock's setting; here it is ${here} (docs/migrating-from-node-redlock.md)`)
    }
  }
  return undefined
}

/**
 * A caller's abort signal, or none. Told by what waiting uses of it (a
 * polyfilled signal is no `AbortSignal` instance): anything else would throw
 * later, in a callback, where no caller could catch it.
 */
export const abortSignal = (input: unknown): AbortSignal | undefined | Problem => {
  if (input === undefined) return undefined
  const signal = input as Partial<AbortSignal> | null
  return typeof input === "object" && signal !== null && typeof signal.aborted === "boolean" &&
      typeof signal.addEventListener === "function" && typeof signal.removeEventListener === "function"
    ? input as AbortSignal
    : new Problem("signal", `expected an AbortSignal, got ${describe(input)}`)
}

/**
 * A URL's user and password in a text, replaced: errors and logs show what
 * they were given, and a `redis://user:password@host` URL put where it does
 * not belong must not show its password.
 */
export const hidePassword = (text: string): string => text.replace(/\/\/[^@/\s"]*@/g, "//***@")

/** A value as an error message names it (a URL's password hidden). */
export const describe = (u: unknown): string => {
  if (typeof u === "string") return JSON.stringify(hidePassword(u))
  if (typeof u === "number" || typeof u === "boolean" || typeof u === "bigint" || u === null || u === undefined) {
    return String(u)
  }
  return Array.isArray(u) ? `[${u.map(String).join(", ")}]` : typeof u
}
