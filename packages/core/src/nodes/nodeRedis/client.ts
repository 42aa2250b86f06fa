/**
 * The part of a node-redis client (`redis` / `@redis/client`, 5 or 6) the
 * node uses, as a structural type: a user's client of either major fits it,
 * and the modules that only take a user's client need no `redis` at run time.
 *
 * @internal
 */
import type { Listener } from "../listeners.js"
import { missingMethod } from "../connection.js"

/** A node-redis client (what `createClient` returns), as the node uses it. */
export interface NodeRedisClient {
  readonly isOpen: boolean
  readonly isReady: boolean
  /** The key prefix of its `createClient` options (node-redis 6.3 and later), which its own commands put before keys. */
  readonly _keyPrefix?: unknown
  /** Its `createClient` options (read as {@link NodeRedisClientOptions}: the drivers' own types differ by major). */
  readonly options?: unknown
  connect(): Promise<unknown>
  sendCommand(args: ReadonlyArray<string>, options?: { readonly typeMapping?: object }): Promise<unknown>
  on(event: string, listener: Listener): unknown
  off(event: string, listener: Listener): unknown
  duplicate(overrides?: { readonly disableOfflineQueue?: boolean }): NodeRedisSubscriber
  close(): Promise<unknown>
  destroy(): void
}

/** A duplicate of a client, subscribing. */
export interface NodeRedisSubscriber extends Omit<NodeRedisClient, "duplicate"> {
  SUBSCRIBE(channels: string, listener: (message: string, channel: string) => unknown): Promise<unknown>
  UNSUBSCRIBE(channels: string, listener: (message: string, channel: string) => unknown): Promise<unknown>
}

/** The options of `createClient` the node reads. */
export interface NodeRedisClientOptions {
  readonly url?: string | undefined
  readonly socket?: {
    readonly host?: string | undefined
    readonly port?: number | undefined
    readonly path?: string | undefined
    readonly tls?: boolean | undefined
    readonly connectTimeout?: number | undefined
    readonly reconnectStrategy?: unknown
    readonly [option: string]: unknown
  } | undefined
  readonly username?: string | undefined
  readonly password?: string | undefined
  readonly database?: number | undefined
  readonly credentialsProvider?: unknown
}

/**
 * What a client puts before every key (node-redis's `keyPrefix`; "" for
 * none). Its commands do it, not `sendCommand`, by which the node sends its
 * own: the node puts it there itself, so that a lock key is where a user's
 * ioredis client with the same prefix puts it.
 */
export const keyPrefixOf = (client: NodeRedisClient): string => {
  const prefix = client._keyPrefix
  return typeof prefix === "string" ? prefix : prefix instanceof Uint8Array ? Buffer.from(prefix).toString() : ""
}

/** A client's options, as far as the node reads them. */
export const optionsOf = (client: NodeRedisClient): NodeRedisClientOptions =>
  (client.options ?? {}) as NodeRedisClientOptions

/**
 * Why a user's `client` cannot be a node's (`undefined`: it can). node-redis
 * also makes client pools, cluster and Sentinel clients, which pass for a
 * client until a waiter needs a release subscriber (a pool has no
 * `duplicate`) or a command goes to the wrong server.
 */
export const userClientProblem = (client: unknown): string | undefined => {
  if (typeof client !== "object" || client === null) return "must be a node-redis client (createClient)"
  if ("totalClients" in client) {
    return "a node-redis client pool (createClientPool) cannot subscribe to releases: pass a client made by createClient (one connection serves every lock)"
  }
  if ("masters" in client) {
    return "a node-redis cluster client (createCluster) is not served: reach a Redis Cluster through ioredis or iovalkey nodes (their cluster option)"
  }
  if ("getMasterNode" in client) {
    return "a node-redis Sentinel client (createSentinel) is not served: follow a Sentinel through ioredis or iovalkey nodes (their sentinel option)"
  }
  const missing = missingMethod(client, ["sendCommand", "duplicate", "connect", "on"])
  return missing === undefined ? undefined : `must be a node-redis client (createClient): it has no ${missing}()`
}
