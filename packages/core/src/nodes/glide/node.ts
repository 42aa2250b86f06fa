/**
 * The Valkey GLIDE driver: a node over one GLIDE standalone client
 * (`@valkey/valkey-glide` 2), made by us from connection options or the
 * user's own, and its release announcements on a subscriber client of ours
 * (releaseSubscriber.ts). The node itself is driverNode.ts.
 *
 * GLIDE reconnects on its own and tells nobody: the connection is
 * quietConnection.ts's, each command that may cast a vote in one batch with
 * `CLIENT ID` and `LASTSAVE` after it, so that an answer from a new
 * connection or a restarted server is not told as the identified run's.
 * Scripts go by EVALSHA through `customCommand`, never `invokeScript`, which
 * answers NOSCRIPT by sending the script again whole after later commands
 * (see loadedScripts.ts). GLIDE's `requestTimeout` only bounds a command
 * that is never answered; the engine's per-node timeout decides a vote.
 *
 * @internal
 */
import { Batch, Decoder, GlideClient as Glide } from "@valkey/valkey-glide"
import type * as Tls from "node:tls"
import type { Address } from "../address.js"
import type { Connection } from "../connection.js"
import * as DriverNode from "../driverNode.js"
import * as QuietConnection from "../quietConnection.js"
import { configurationOf, type GlideClient } from "./client.js"
import * as ReleaseSubscriber from "./releaseSubscriber.js"
import { asReply, isConnectionFailure } from "./replies.js"

/** Replies as text, whatever `defaultDecoder` the user's client has. */
const asText = { decoder: Decoder.String }

/**
 * How long a command of a client of ours may go unanswered before GLIDE
 * drops it: longer than any per-node timeout, so that the engine decides.
 */
const requestTimeoutMillis = 5000

/** GLIDE's TLS settings from Node's TLS options: the trusted certificates and whether to check the server's. */
export const tlsSettings = (tls: Address["tls"]): object | undefined => {
  if (tls === undefined || tls === false) return undefined
  if (tls === true) return { useTLS: true }
  const { ca, rejectUnauthorized } = tls as Tls.ConnectionOptions
  const certificates = ca === undefined ? undefined : (Array.isArray(ca) ? ca : [ca]).map(String).join("\n")
  const advanced = {
    ...(certificates === undefined ? {} : { rootCertificates: certificates }),
    ...(rejectUnauthorized === false ? { insecure: true } : {})
  }
  return { useTLS: true, advanced: Object.keys(advanced).length === 0 ? undefined : advanced }
}

/** The configuration of a client of ours for `address`, without the advanced part. */
export const configurationFor = (address: Address, connectTimeoutMillis: number): Record<string, unknown> => {
  const tls = tlsSettings(address.tls) as { readonly useTLS: true; readonly advanced?: object } | undefined
  return {
    addresses: [{ host: address.host, port: address.port }],
    ...(address.password === undefined
      ? {}
      : {
        credentials: {
          ...(address.username === undefined ? {} : { username: address.username }),
          password: address.password
        }
      }),
    databaseId: address.db ?? 0,
    ...(tls === undefined ? {} : { useTLS: true }),
    requestTimeout: requestTimeoutMillis,
    // Made at once, connected by the node's first command: a server that is down now is no error.
    lazyConnect: true,
    connectionBackoff: { numberOfRetries: 5, factor: 50, exponentBase: 2 },
    advancedConfiguration: {
      connectionTimeout: connectTimeoutMillis,
      ...(tls?.advanced === undefined ? {} : { tlsAdvancedConfiguration: tls.advanced })
    }
  }
}

/** A client of ours for `address`. */
export const newClient = (address: Address, connectTimeoutMillis: number): Promise<GlideClient> =>
  Glide.createClient(configurationFor(address, connectTimeoutMillis) as never) as Promise<GlideClient>

/**
 * Close a client of ours: once what it sent is answered (a PING answered
 * comes after them), at most 1 s (a hung server would hold the shutdown up),
 * then at once (GLIDE fails what it has not answered). Never rejects.
 */
export const closeClient = async (client: GlideClient): Promise<void> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  await Promise.race([
    client.customCommand(["PING"]).catch(() => {}),
    new Promise<void>((resolve) => void (timer = setTimeout(resolve, 1000)))
  ])
  clearTimeout(timer)
  try {
    client.close()
  } catch {
    // already closed
  }
}

/** A user's client: the node name it gets by default (its first address). */
export const clientName = (client: GlideClient): string => {
  const address = configurationOf(client)?.addresses?.[0]
  return `${address?.host ?? "localhost"}:${address?.port ?? 6379}`
}

/** `command`, then the connection's and the server run's marks and the server's clock (quietConnection.ts). */
const marked = (command: Array<string>) =>
  new Batch(false).customCommand(command).customCommand(["CLIENT", "ID"]).customCommand(["LASTSAVE"]).customCommand([
    "TIME"
  ])

/** The client as a node's connection (quietConnection.ts), and how to stop probing it. */
export const connectionOf = (client: GlideClient): Connection & { readonly stop: () => void } => {
  const address = configurationOf(client)?.addresses?.[0]
  return QuietConnection.connectionOf({
    send: (command) => client.customCommand(command, asText),
    // One batch: GLIDE sends it on one connection, in order; error replies in their place.
    sendMarked: (command) => client.exec(marked(command), false, asText),
    isConnectionFailure,
    asReply,
    address: address === undefined ? undefined : { host: address.host ?? "localhost", port: address.port ?? 6379 }
  })
}

/** The node over `client` (driverNode.ts), with its announcements on a subscriber client of ours. */
export const open = async (client: GlideClient, settings: DriverNode.NodeSettings): Promise<DriverNode.OpenNode> => {
  const connection = connectionOf(client)
  const opened = await DriverNode.open(connection, settings, () => ReleaseSubscriber.open(client))
  return {
    node: opened.node,
    close: async () => {
      await opened.close()
      connection.stop()
    }
  }
}
