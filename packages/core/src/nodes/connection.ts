/**
 * One driver's connection to one Redis server, as a node uses it: the few
 * commands the lock operations need and the connection's life. Each driver
 * (ioredis, node-redis) adapts its client to this; the node itself
 * (driverNode.ts), its server run (serverRun.ts) and its scripts
 * (loadedScripts.ts) are written once, over it.
 *
 * A driver's connection must apply one connection's commands in the order
 * they were sent, and must not send a command again after a reconnect on its
 * own (see loadedScripts.ts): the clients each driver makes are set up so.
 *
 * @internal
 */
import type { Script } from "./scripts.js"
import type { Reading } from "./serverClock.js"

/** What a connection tells of its life. Several `closed` in a row are allowed. */
export interface ConnectionEvents {
  /** Connected and ready for commands, at first or again. */
  readonly ready: () => void
  /** Dropped or ended: the server forgot this connection's state (its scripts may be gone). */
  readonly closed: () => void
  /** A connection error (refused, a wrong password ...), also while connecting. */
  readonly error: (error: Error) => void
  /**
   * A reading of the server's clock (`TIME`) that came with a vote's answer,
   * told before the answer is (serverClock.ts); none from a connection that
   * cannot read it on the vote's server (a cluster's).
   */
  readonly clock?: ((reading: Reading) => void) | undefined
}

export interface Connection {
  /** Whether commands may be sent now. */
  readonly isReady: () => boolean
  /** Report the connection's life to `events` until the returned function is called. */
  readonly follow: (events: ConnectionEvents) => () => void
  /** Run a loaded script by its SHA1 (EVALSHA). */
  readonly evalsha: (
    script: Script,
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string | number>
  ) => Promise<unknown>
  /** Run a script sent whole (EVAL). */
  readonly eval: (script: Script, keys: ReadonlyArray<string>, args: ReadonlyArray<string | number>) => Promise<unknown>
  /** SCRIPT LOAD. */
  readonly loadScript: (script: Script) => Promise<unknown>
  /** SET key value PX ttl NX: the reply as it is (`"OK"` when set), read by the node in its own step. */
  readonly setIfAbsent: (key: string, value: string, ttlMillis: number) => Promise<unknown>
  /** WAIT replicas timeout: how many replicas acknowledged. */
  readonly waitForReplicas: (replicas: number, timeoutMillis: number) => Promise<number>
  /** INFO section, as text. */
  readonly info: (section: string) => Promise<string>
  /** CONFIG GET name: its value, `undefined` when the server has none. */
  readonly configGet: (name: string) => Promise<string | undefined>
  /**
   * `TIME`, sent now on this connection (the node reads it between votes
   * and behind a native SET NX PX, and sends each vote's script in the form
   * that answers it too: serverClock.ts). None: the connection's `TIME` would not reach the
   * vote's server (a cluster's), or its votes bring their own readings
   * (`readClock`).
   */
  readonly time?: (() => Promise<unknown>) | undefined
  /**
   * For a connection whose votes bring their own readings of the server's
   * clock (told to `ConnectionEvents.clock`): take one now, with no vote.
   */
  readonly readClock?: (() => void) | undefined
  /**
   * Called before each command: a driver that writes each command to the
   * socket as it is sent may gather one turn's commands into one write.
   */
  readonly beforeSend: () => void
}

/**
 * The first of `methods` a user's `client` lacks (`undefined`: it has them
 * all): the drivers' checks of what passes for one of their clients.
 */
export const missingMethod = (client: object, methods: ReadonlyArray<string>): string | undefined =>
  methods.find((method) => typeof (client as Record<string, unknown>)[method] !== "function")

/**
 * The value of a `CONFIG GET name` reply, whatever the protocol and client:
 * RESP2's `[name, value]`, RESP3's map as a `Map`, an object, or GLIDE's
 * `[{ key, value }]`; `undefined` when the server has none.
 */
export const configValue = (reply: unknown, name: string): string | undefined => {
  if (reply instanceof Map) return reply.get(name) as string | undefined
  if (!Array.isArray(reply)) return (reply as Record<string, string> | null)?.[name]
  const entry = reply.find((item) =>
    typeof item === "object" && item !== null && (item as { key?: unknown }).key === name
  )
  if (entry !== undefined) return String((entry as { value: unknown }).value)
  return reply[0] === name && reply[1] !== undefined && reply[1] !== null ? String(reply[1]) : undefined
}
