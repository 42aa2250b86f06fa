/**
 * The Valkey GLIDE driver: a node over one GLIDE standalone client
 * (`@valkey/valkey-glide` 2), made by us from connection options or the
 * user's own, and its release announcements on a subscriber client of ours
 * (releaseSubscriber.ts). The node itself is driverNode.ts.
 *
 * GLIDE reconnects on its own and tells nobody: it has no event for a
 * connection that dropped or came back. The restart quarantine needs to
 * know which server run answered each vote, so every command that may cast
 * one goes in one batch behind `CLIENT ID` and `LASTSAVE`: the connection's
 * id changes with each new connection, and `LASTSAVE` (the start of a server
 * that does not save, or its last save) with each restart. An answer whose
 * two differ from those read with the server's `INFO server` is taken as
 * a new connection, closed and ready again, before the answer is told: the
 * node does not vote until the server is identified anew. A server that
 * refuses the two (an ACL) is never identified, and never votes.
 *
 * While no connection answers, commands fail at once (as our other
 * drivers' clients do without an offline queue), and the connection is
 * probed until one does. Scripts go by EVALSHA through `customCommand`,
 * never `invokeScript`, which answers NOSCRIPT by sending the script again
 * whole after later commands (see loadedScripts.ts). GLIDE's `requestTimeout`
 * only bounds a command that is never answered; the engine's per-node
 * timeout decides a vote.
 *
 * @internal
 */
import { Batch, Decoder, GlideClient as Glide } from "@valkey/valkey-glide"
import * as Net from "node:net"
import type * as Tls from "node:tls"
import type { Address } from "../address.js"
import type { Connection, ConnectionEvents } from "../connection.js"
import * as DriverNode from "../driverNode.js"
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
      : { credentials: { ...(address.username === undefined ? {} : { username: address.username }), password: address.password } }),
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

/** How often a connection that does not answer is asked again, at most. */
const probeMillis = { first: 50, max: 1000 }

/** The connection and server run that answer: what `INFO server` was read with. */
interface Identity {
  readonly clientId: unknown
  readonly lastSave: unknown
}

/** The client as a node's connection (connection.ts), and how to stop probing it. */
export const connectionOf = (client: GlideClient): Connection & { readonly stop: () => void } => {
  const followers = new Set<ConnectionEvents>()
  let ready = false
  let identity: Identity | undefined
  let probe: ReturnType<typeof setTimeout> | undefined
  let probes = 0
  let stopped = false
  const each = (tell: (events: ConnectionEvents) => void) => [...followers].forEach(tell)

  const becameReady = () => {
    if (ready || stopped) return
    ready = true
    probes = 0
    each((events) => events.ready())
  }
  // No connection answers: the node fails fast, and the connection is asked until one does.
  const lost = (cause: unknown) => {
    identity = undefined
    if (ready) {
      ready = false
      each((events) => events.closed())
    }
    const error = asReply(cause)
    each((events) => events.error(error))
    probeLater()
  }
  const probeLater = () => {
    if (probe !== undefined || stopped) return
    const delay = probes === 0 ? 0 : Math.min(probeMillis.first * 2 ** (probes - 1), probeMillis.max)
    probes++
    probe = setTimeout(() => {
      probe = undefined
      client.customCommand(["PING"], asText).then(becameReady, (cause: unknown) => {
        if (stopped) return
        if (isConnectionFailure(cause)) lost(cause)
        else becameReady()
      })
    }, delay)
    probe.unref?.()
  }
  // Another connection, or another server run, answered: the node knows nothing of it until it is identified.
  const replaced = () => {
    identity = undefined
    if (!ready) return
    each((events) => events.closed())
    each((events) => events.ready())
  }
  const failed = (cause: unknown): never => {
    if (isConnectionFailure(cause)) lost(cause)
    throw asReply(cause)
  }
  const notConnected = () => Promise.reject(new Error("GLIDE: not connected (the server does not answer yet)"))
  const send = (command: Array<string>): Promise<unknown> =>
    ready ? client.customCommand(command, asText).catch(failed) : notConnected()
  // A command that may cast a vote, behind the connection's and the server run's marks.
  const checked = (command: Array<string>): Promise<unknown> => {
    if (!ready) return notConnected()
    const batch = new Batch(false).customCommand(["CLIENT", "ID"]).customCommand(["LASTSAVE"]).customCommand(command)
    return client.exec(batch, false, asText).then((replies) => {
      const [clientId, lastSave, reply] = replies ?? []
      if (identity !== undefined && (clientId !== identity.clientId || lastSave !== identity.lastSave)) replaced()
      if (reply instanceof Error) throw asReply(reply)
      return reply
    }, failed)
  }
  const script = (command: string, body: string, keys: ReadonlyArray<string>, args: ReadonlyArray<string | number>) => {
    const words = [command, body, String(keys.length), ...keys]
    for (const arg of args) words.push(String(arg))
    return checked(words)
  }
  const identify = (): Promise<string> => {
    if (!ready) return notConnected() as Promise<never>
    const batch = new Batch(false).customCommand(["CLIENT", "ID"]).customCommand(["LASTSAVE"]).customCommand(["INFO", "server"])
    return client.exec(batch, false, asText).then((replies) => {
      const [clientId, lastSave, info] = replies ?? []
      for (const reply of [clientId, lastSave, info]) {
        if (reply instanceof Error) throw asReply(reply)
      }
      identity = { clientId, lastSave }
      return String(info)
    }, failed)
  }
  probeLater()
  refusedAtOnce(client, (error) => {
    if (!ready && !stopped) each((events) => events.error(error))
  })
  return {
    isReady: () => ready,
    follow: (events) => {
      followers.add(events)
      return () => void followers.delete(events)
    },
    evalsha: (loaded, keys, args) => script("EVALSHA", loaded.sha, keys, args),
    eval: (whole, keys, args) => script("EVAL", whole.lua, keys, args),
    loadScript: (loaded) => send(["SCRIPT", "LOAD", loaded.lua]),
    setIfAbsent: (key, value, ttlMillis) => checked(["SET", key, value, "PX", String(ttlMillis), "NX"]),
    waitForReplicas: (replicas, timeoutMillis) => send(["WAIT", String(replicas), String(timeoutMillis)]).then(Number),
    info: (section) => section === "server" ? identify() : send(["INFO", section]).then(String),
    configGet: (name) => send(["CONFIG", "GET", name]).then((reply) => configValue(reply, name)),
    // GLIDE's core gathers the commands of a turn into its writes itself.
    beforeSend: () => {},
    stop: () => {
      stopped = true
      clearTimeout(probe)
    }
  }
}

/**
 * GLIDE tries a connection nobody accepts again and again until its
 * `connectionTimeout`: a plain TCP connection to the client's first
 * address tells at once that nobody listens there, so that opening a node
 * does not wait for a server that is down.
 */
const refusedAtOnce = (client: GlideClient, refused: (error: Error) => void): void => {
  const address = configurationOf(client)?.addresses?.[0]
  if (address === undefined) return
  const socket = Net.connect({ host: address.host ?? "localhost", port: address.port ?? 6379 })
  socket.once("connect", () => socket.destroy())
  socket.once("error", (error: NodeJS.ErrnoException) => {
    socket.destroy()
    if (error.code === "ECONNREFUSED") refused(new Error(`GLIDE: not connected (${error.message})`))
  })
  socket.unref()
}

/** CONFIG GET's value: RESP3 answers a map (GLIDE: `[{ key, value }]`), RESP2 `[name, value]`. */
const configValue = (reply: unknown, name: string): string | undefined => {
  if (!Array.isArray(reply)) {
    return reply instanceof Map ? reply.get(name) : (reply as Record<string, string> | null)?.[name]
  }
  const entry = reply.find((item) => typeof item === "object" && item !== null && (item as { key?: unknown }).key === name)
  if (entry !== undefined) return String((entry as { value: unknown }).value)
  return reply[0] === name && reply[1] !== undefined ? String(reply[1]) : undefined
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
