/**
 * Where a node is and how to log in, whatever the driver: the shells'
 * connection options, and `redis://` URLs.
 *
 * @internal
 */
import type * as Tls from "node:tls"

/** Where a node is and how to log in, as the shells' connection options say it (the password revealed). */
export interface Address {
  readonly host: string
  readonly port: number
  readonly username?: string | undefined
  readonly password?: string | undefined
  readonly db?: number | undefined
  readonly tls?: boolean | Tls.ConnectionOptions | undefined
  /** Reach the master the Sentinels name instead of `host` and `port` (ioredis and iovalkey only). */
  readonly sentinel?: {
    readonly master: string
    readonly sentinels: ReadonlyArray<{ readonly host: string; readonly port: number }>
  } | undefined
  /** A Redis Cluster as one node, reached first at any of `nodes` instead of `host` and `port` (ioredis and iovalkey only). */
  readonly cluster?: {
    readonly nodes: ReadonlyArray<{ readonly host: string; readonly port: number }>
  } | undefined
}

/** A `redis://` or `rediss://` URL's parts (`redis://user:password@host:port/db`); `undefined`: not one. */
export const parseUrl = (url: string): Address | undefined => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return undefined
  }
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") return undefined
  const db = parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : undefined
  if (db !== undefined && !Number.isInteger(db)) return undefined
  return {
    host: parsed.hostname || "127.0.0.1",
    port: parsed.port ? Number(parsed.port) : 6379,
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    db,
    tls: parsed.protocol === "rediss:"
  }
}

/**
 * The server a node entry (connection options, or `{ client }`) names, as
 * far as it is known before connecting: the user's client itself, or `host:port`
 * (the host in lower case) from its url and fields; `undefined` for a Sentinel's
 * master, a cluster, or an entry the node's own checks will refuse.
 */
const serverOf = (entry: unknown): unknown => {
  if (typeof entry !== "object" || entry === null) return undefined
  if ("client" in entry) return entry.client
  const options = entry as {
    readonly url?: unknown
    readonly host?: unknown
    readonly port?: unknown
    readonly sentinel?: unknown
    readonly cluster?: unknown
  }
  if (options.sentinel !== undefined || options.cluster !== undefined) return undefined
  const parsed = typeof options.url === "string" ? parseUrl(options.url) : undefined
  if (options.url !== undefined && parsed === undefined) return undefined
  const host = options.host ?? parsed?.host ?? "127.0.0.1"
  return typeof host === "string" ? `${host.toLowerCase()}:${String(options.port ?? parsed?.port ?? 6379)}` : undefined
}

/**
 * Why a node list names one server twice (one client, or one host and port,
 * whatever the `db`), or `undefined`. Redlock's majority is of independent
 * servers: one server counted twice could make a majority alone. (Nodes that
 * turn out to be one server only once connected, by two names, vote once:
 * engine/sameServer.ts.)
 */
export const listedTwice = (entries: ReadonlyArray<unknown>): string | undefined => {
  const seen = new Map<unknown, number>()
  for (let index = 0; index < entries.length; index++) {
    const server = serverOf(entries[index])
    if (server === undefined) continue
    const earlier = seen.get(server)
    if (earlier !== undefined) {
      return `nodes ${earlier} and ${index} are one server (${
        typeof server === "string" ? server : "the same client"
      }): ` +
        "a majority must come from independent servers, list each once"
    }
    seen.set(server, index)
  }
  return undefined
}
