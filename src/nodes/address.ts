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

/** A URL as it may be shown: any user and password replaced. */
export const hidePassword = (url: string): string => url.replace(/\/\/[^@/]*@/, "//***@")
