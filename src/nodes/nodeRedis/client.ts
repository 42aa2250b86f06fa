/**
 * The part of a node-redis client (`redis` / `@redis/client`, 5 or 6) the
 * node uses, as a structural type: a user's client of either major fits it,
 * and the modules that only take a user's client need no `redis` at run time.
 *
 * @internal
 */

/** A node-redis client (what `createClient` returns), as the node uses it. */
export interface NodeRedisClient {
  readonly isOpen: boolean
  readonly isReady: boolean
  /** Its `createClient` options (read as {@link NodeRedisClientOptions}: the drivers' own types differ by major). */
  readonly options?: unknown
  connect(): Promise<unknown>
  sendCommand(args: ReadonlyArray<string>, options?: { readonly typeMapping?: object }): Promise<unknown>
  on(event: string, listener: (...args: Array<any>) => void): unknown
  off(event: string, listener: (...args: Array<any>) => void): unknown
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

/** A client's options, as far as the node reads them. */
export const optionsOf = (client: NodeRedisClient): NodeRedisClientOptions =>
  (client.options ?? {}) as NodeRedisClientOptions
