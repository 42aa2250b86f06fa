/**
 * The part of a Valkey GLIDE standalone client (`GlideClient` of
 * `@valkey/valkey-glide` 2) the node uses, as a structural type, and the
 * checks of what passes for one: the modules that only take a user's client
 * need no GLIDE at run time.
 *
 * @internal
 */
import { missingMethod } from "../connection.js"

/** A GLIDE standalone client (what `GlideClient.createClient` resolves to), as the node uses it. */
export interface GlideClient {
  customCommand(args: Array<string>, options?: { readonly decoder?: unknown }): Promise<unknown>
  exec(batch: unknown, raiseOnError: boolean, options?: { readonly decoder?: unknown }): Promise<Array<unknown> | null>
  close(errorMessage?: string): void
}

/** A GLIDE client of ours that subscribes (its messages go to the callback it was made with). */
export interface GlideSubscriber extends GlideClient {
  subscribe(channels: Iterable<string>, timeoutMs: number): Promise<void>
  unsubscribe(channels: Iterable<string> | null, timeoutMs: number): Promise<void>
}

/** The configuration a GLIDE client was made with, as far as the node reads it (GLIDE keeps it on the client). */
export interface GlideClientConfiguration {
  readonly addresses?: ReadonlyArray<{ readonly host?: string; readonly port?: number }>
  readonly credentials?: { readonly username?: string; readonly password?: string; readonly iamConfig?: unknown }
  readonly databaseId?: number
  readonly useTLS?: boolean
  readonly readFrom?: string
  readonly requestTimeout?: number
  readonly [option: string]: unknown
}

/** The configuration `client` was made with; `undefined` where this GLIDE does not keep it. */
export const configurationOf = (client: GlideClient): GlideClientConfiguration | undefined => {
  const config = (client as unknown as { readonly config?: unknown }).config
  return typeof config === "object" && config !== null ? config as GlideClientConfiguration : undefined
}

/**
 * Why a user's `client` cannot be a node's (`undefined`: it can). A cluster
 * client routes each command by its key, so the server checks of a node
 * (`INFO`, `CLIENT ID`) would go to any master; a client reading from
 * replicas may send them to a replica.
 */
export const userClientProblem = (client: unknown): string | undefined => {
  if (typeof client !== "object" || client === null) return "must be a GLIDE client (GlideClient.createClient)"
  if (typeof (client as { readonly updateConnectionPassword?: unknown }).updateConnectionPassword !== "function") {
    return "must be a GLIDE client (GlideClient.createClient)"
  }
  const missing = missingMethod(client, ["customCommand", "exec", "close"])
  if (missing !== undefined) return `must be a GLIDE client (GlideClient.createClient): it has no ${missing}()`
  if (client.constructor?.name === "GlideClusterClient") {
    return "a GLIDE cluster client (GlideClusterClient) is not served: give each master as a GlideClient, or reach the cluster through ioredis or iovalkey nodes (their cluster option)"
  }
  const readFrom = configurationOf(client as GlideClient)?.readFrom
  if (readFrom !== undefined && readFrom !== "primary") {
    return `a GLIDE client with readFrom "${readFrom}" may send a node's reads to a replica: make it with readFrom "primary" (the default)`
  }
  return undefined
}

/** Whether `client` looks like a GLIDE client (what the promise API picks the GLIDE driver by). */
export const isGlideClient = (client: unknown): boolean =>
  typeof client === "object" && client !== null &&
  typeof (client as { readonly customCommand?: unknown }).customCommand === "function" &&
  typeof (client as { readonly updateConnectionPassword?: unknown }).updateConnectionPassword === "function"
