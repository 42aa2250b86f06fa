/**
 * What the ioredis driver uses of a client, as a structural type: clients of
 * ioredis 5 and 6 and of iovalkey (the ioredis fork Valkey maintains) all
 * fit it, and each public module hands in its own library (`IoredisLibrary`).
 *
 * @internal
 */
import type { Listener } from "../listeners.js"
import type * as Tls from "node:tls"
import { missingMethod } from "../connection.js"
import type { NewCluster } from "./cluster.js"

/** A client of the ioredis family, as the driver uses it. */
export interface IoredisClient {
  readonly status: string
  readonly options: IoredisClientOptions
  /** The socket, once connecting. */
  readonly stream?: { readonly writable: boolean; cork(): void; uncork(): void } | undefined
  on(event: string, listener: Listener): unknown
  off(event: string, listener: Listener): unknown
  once(event: string, listener: Listener): unknown
  connect(): Promise<unknown>
  quit(): Promise<unknown>
  disconnect(reconnect?: boolean): void
  duplicate(override?: Partial<IoredisClientOptions>): IoredisSubscriber
  eval(script: string, numkeys: number, ...args: Array<string | number>): Promise<unknown>
  evalsha(sha: string, numkeys: number, ...args: Array<string | number>): Promise<unknown>
  /** A command of the library's `Command` class. */
  sendCommand(command: never): unknown
  set(key: string, value: string, px: "PX", milliseconds: number, nx: "NX"): Promise<string | null>
  wait(replicas: number, timeout: number): Promise<number>
  info(section: string): Promise<string>
  config(subcommand: "GET", parameter: string): Promise<unknown>
  script(subcommand: "LOAD", script: string): Promise<unknown>
  time(): Promise<unknown>
}

/** A duplicate of a client, subscribing. */
export interface IoredisSubscriber {
  readonly status: string
  on(event: string, listener: Listener): unknown
  subscribe(channel: string): Promise<unknown>
  unsubscribe(channel: string): Promise<unknown>
  disconnect(reconnect?: boolean): void
}

/** The options the driver reads or sets (the libraries' own `RedisOptions` have many more). */
export interface IoredisClientOptions {
  readonly host?: string | undefined
  readonly port?: number | undefined
  readonly path?: string | null | undefined
  readonly username?: string | undefined
  readonly password?: string | undefined
  readonly db?: number | undefined
  readonly keyPrefix?: string | undefined
  /** Connection options, or (ioredis 6) the name of a TLS profile. */
  readonly tls?: object | string | undefined
  readonly sentinels?: ReadonlyArray<unknown> | null | undefined
  /** The master's name, for a client of a Sentinel's master. */
  readonly name?: string | undefined
  readonly Connector?: unknown
  readonly showFriendlyErrorStack?: boolean | undefined
  readonly enableAutoPipelining?: boolean | undefined
  readonly connectTimeout?: number | undefined
  readonly lazyConnect?: boolean | undefined
  readonly enableOfflineQueue?: boolean | undefined
  readonly autoResubscribe?: boolean | undefined
  readonly autoResendUnfulfilledCommands?: boolean | undefined
  readonly maxRetriesPerRequest?: number | null | undefined
}

/** The options the driver makes its own clients with. */
export interface NewClientOptions {
  readonly host?: string
  readonly port?: number
  /** The Sentinels to ask, and the master's name there, instead of `host` and `port`. */
  readonly sentinels?: Array<{ host: string; port: number }>
  readonly name?: string
  readonly username?: string
  readonly password?: string
  readonly db: number
  readonly tls?: Tls.ConnectionOptions
  readonly connectTimeout: number
  readonly enableOfflineQueue: false
  readonly autoResendUnfulfilledCommands: false
  readonly maxRetriesPerRequest: 0
  readonly retryStrategy: (times: number) => number
}

/** The class a library builds its commands with (ioredis's and iovalkey's `Command`). */
export interface CommandClass {
  new(
    name: string,
    args: Array<string>,
    options: { readonly replyEncoding: "utf8" }
  ): { toWritable(socket: never): string | Buffer }
}

/** One library of the ioredis family: how to make a client, and its command class. */
export interface IoredisLibrary<Client extends IoredisClient> {
  /** Its package's name, as errors name it. */
  readonly name: "ioredis" | "iovalkey"
  readonly newClient: (options: NewClientOptions) => Client
  readonly Command: CommandClass
  /** Its `Cluster` client. */
  readonly newCluster: NewCluster
}

/** Why a user's `client` cannot be a node's (`undefined`: it can): it must be a client or a cluster client of `library`'s kind. */
export const userClientProblem = (client: unknown, library: string): string | undefined => {
  const kind = `an ${library} client (new Redis(...) or new Cluster(...))`
  if (typeof client !== "object" || client === null) return `must be ${kind}`
  const missing = missingMethod(client, ["sendCommand", "duplicate", "connect", "on"])
  if (missing !== undefined) return `must be ${kind}: it has no ${missing}()`
  return typeof (client as { readonly status?: unknown }).status === "string"
    ? undefined
    : `must be ${kind}: it has no status`
}
