/**
 * A plain lock manager made from what a user hands `makeRedlock`: node
 * options or clients (each opened over its driver, whose module is loaded
 * only then), or nodes of the engine (in-memory ones); and what a front end
 * adds (the Effect packages read their layers, passwords and Schedules).
 *
 * @internal
 */
import type { Node } from "../engine/node.js"
import * as Options from "../engine/options.js"
import { Problem } from "../engine/options.js"
import * as LiveTime from "../engine/liveTime.js"
import type { Time } from "../engine/time.js"
import { isGlideClient } from "../nodes/glide/client.js"
import type { NodeRedisClient } from "../nodes/nodeRedis/client.js"
import * as NodeOptions from "../nodes/nodeOptions.js"
import { readMillis } from "./durations.js"
import { InvalidOptions, makeNodeError } from "./errors.js"
import * as Manager from "./manager.js"
import * as Settings from "./settings.js"

/** Nodes a front end opened itself (an Effect layer's), on its timeline, and how to close them. */
export interface HostNodes {
  readonly nodes: ReadonlyArray<Node>
  readonly time: Time
  readonly close: () => Promise<void>
}

/** What a front end adds to the plain manager; the plain API adds nothing. */
export interface Host {
  /** Nodes from an input that is no array (an Effect layer); `undefined`: not one of the front end's. */
  readonly nodesOf?: ((input: unknown, logger: Manager.Logger) => Promise<HostNodes> | undefined) | undefined
  /** A password that is no string (an Effect `Redacted`) revealed; `undefined`: not one. */
  readonly password?: ((input: unknown) => string | undefined) | undefined
  readonly customRetry?: Settings.CustomRetry | undefined
}

/** The manager's own timeline: the live clock. */
const liveTime = LiveTime.make(0)

const stderrLogger: Manager.Logger = { warn: (message) => void process.stderr.write(`${message}\n`) }

const loggerOf = (given: unknown): Manager.Logger => {
  if (given === undefined) return stderrLogger
  if (typeof given !== "object" || given === null || typeof (given as Manager.Logger).warn !== "function") {
    throw new InvalidOptions("logger", `expected { warn(message) }, got ${Options.describe(given)}`)
  }
  return given as Manager.Logger
}

/** A node of the engine (an in-memory node), taken as it is. */
export const isEngineNode = (entry: object): entry is Node =>
  typeof (entry as Partial<Node>).promises === "object" && typeof (entry as Partial<Node>).run === "function"

/** A node-redis client (no `status`, which ioredis clients have). */
const isNodeRedis = (entry: object): boolean =>
  "client" in entry && typeof entry.client === "object" && entry.client !== null && !("status" in entry.client) &&
  typeof (entry.client as NodeRedisClient).isOpen === "boolean"

/** Whether `error` says the package `name` is not installed (as an ES module's import or CommonJS's require says it). */
export const isModuleMissing = (error: unknown, name: string): boolean => {
  const code = (error as { readonly code?: unknown } | undefined)?.code
  const text = String(error)
  return (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") &&
    (text.includes(`'${name}'`) || text.includes(`'${name}/`))
}

/** The ioredis driver, or node-redis's where only `redis` is installed (for connection options). */
const connectionDriver = async (): Promise<NodeOptions.Driver<unknown>> => {
  try {
    return (await import("../nodes/ioredis/driver.js")).driver as NodeOptions.Driver<unknown>
  } catch (error) {
    if (!isModuleMissing(error, "ioredis")) throw error
    try {
      return (await import("../nodes/nodeRedis/driver.js")).driver as NodeOptions.Driver<unknown>
    } catch (missing) {
      if (!isModuleMissing(missing, "redis")) throw missing
      throw new InvalidOptions(
        "nodes",
        "connection options need a Redis client library: npm install ioredis (or redis)"
      )
    }
  }
}

/** A Valkey GLIDE client. */
const isGlide = (entry: object): boolean => "client" in entry && isGlideClient(entry.client)

const driverFor = async (entry: object): Promise<NodeOptions.Driver<unknown>> =>
  isGlide(entry)
    ? (await import("../nodes/glide/driver.js")).driver as NodeOptions.Driver<unknown>
    : isNodeRedis(entry)
    ? (await import("../nodes/nodeRedis/driver.js")).driver as NodeOptions.Driver<unknown>
    : "client" in entry
    ? (await import("../nodes/ioredis/driver.js")).driver as NodeOptions.Driver<unknown>
    : connectionDriver()

/** Every node of the list opened; if one cannot be, those opened are closed again and it rejects. */
export const openAll = async (list: ReadonlyArray<unknown>, host: Host): Promise<HostNodes> => {
  const readers: NodeOptions.Readers = {
    millis: readMillis,
    password: (input) => host.password?.(input)
  }
  // Checked, every one, before any connection is opened.
  const checked = await Promise.all(list.map(async (entry, index) => {
    const object = Options.nodeEntry(entry, index)
    if (object instanceof Problem) throw new InvalidOptions(object.option, object.detail)
    if (isEngineNode(object)) return object
    const driver = await driverFor(object)
    const node = NodeOptions.check(driver, object, readers)
    if (node instanceof Problem) throw new InvalidOptions(node.option, node.detail)
    return { driver, node }
  }))
  const opened = await Promise.allSettled(checked.map((entry) =>
    "driver" in entry
      ? NodeOptions.open(entry.driver, entry.node, makeNodeError, liveTime.now)
      : Promise.resolve({ node: entry, close: () => Promise.resolve() })
  ))
  const closeAll = () =>
    Promise.all(opened.map((result) => result.status === "fulfilled" ? result.value.close() : undefined)).then(() => {})
  const failed = opened.find((result) => result.status === "rejected")
  if (failed !== undefined) {
    await closeAll()
    throw failed.reason
  }
  return {
    nodes: opened.map((result) => (result as PromiseFulfilledResult<NodeOptions.Opened>).value.node),
    time: liveTime,
    close: closeAll
  }
}

/** The manager for `input`'s nodes and `options`; rejects with InvalidOptions for invalid ones. */
export const makeRedlock = async (
  input: unknown,
  options: Settings.ManagerOptions & { readonly logger?: Manager.Logger | undefined },
  host: Host
): Promise<Manager.PromiseRedlock> => {
  const logger = loggerOf(options?.logger)
  let opened: HostNodes
  const hostNodes = Array.isArray(input) ? undefined : host.nodesOf?.(input, logger)
  if (hostNodes !== undefined) {
    opened = await hostNodes
  } else {
    // A node of the engine is its own server, as a client is.
    const entries = Array.isArray(input)
      ? input.map((entry) =>
        typeof entry === "object" && entry !== null && isEngineNode(entry) ? { client: entry } : entry
      )
      : input
    const problem = NodeOptions.listProblem(entries, "an array of node options or { client }")
    if (problem !== undefined) throw new InvalidOptions(problem.option, problem.detail)
    opened = await openAll(input as ReadonlyArray<unknown>, host)
  }
  let settings: Settings.Settings
  try {
    settings = Settings.make(opened.nodes, options ?? {}, opened.time, host.customRetry, (line) => logger.warn(line))
  } catch (error) {
    await opened.close()
    throw error
  }
  return Manager.make(settings, logger, opened.close)
}

/**
 * The nodes the Effect packages' `makeRedlock` takes: core's, with the
 * password a plain string or an Effect `Redacted`.
 */
export type EffectNodeOptions<Options> =
  | Options
  | (Omit<Extract<Options, { readonly host?: unknown }>, "password"> & {
    readonly password?: string | object | undefined
  })

/**
 * A layer of nodes of an Effect package (`Ioredis.layer(...)`,
 * `RedisNode.layerMemory(3)`): an Effect value, read only where `effect` is
 * installed (its type is not named, so that the promise API's types need no
 * `effect`).
 */
export interface NodesLayer {
  readonly pipe: (...args: never) => unknown
}

/**
 * `makeRedlock` of an Effect package: its host (`load`) is loaded on first
 * use where `effect` is installed; where it is not, the plain manager is
 * all there is (a layer, a `Redacted` or a Schedule cannot be made without
 * `effect` anyway).
 */
export const withHostOf = (load: () => Promise<{ readonly host: Host }>) => {
  let loaded: Promise<Host> | undefined
  const hostOf = (): Promise<Host> =>
    loaded ??= load().then(
      (module) => module.host,
      (error: unknown) => {
        if (isModuleMissing(error, "effect")) return {}
        loaded = undefined
        throw error
      }
    )
  return async <Options>(
    nodes: ReadonlyArray<EffectNodeOptions<Options>> | NodesLayer,
    options: Settings.ManagerOptions & { readonly logger?: Manager.Logger | undefined } = {}
  ): Promise<Manager.PromiseRedlock> => makeRedlock(nodes, options, await hostOf())
}
