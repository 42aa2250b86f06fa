/**
 * A node's connection (connection.ts) over a client that reconnects on its
 * own and tells nobody: Valkey GLIDE, or a Redis service of Effect 4's
 * `effect/persistence`. Such a client has no event for a connection that
 * dropped or came back, so:
 *
 * - it is ready once a PING is answered, and not ready from a failure that
 *   says no connection answers until the next PING is (asked again and
 *   again, 50 ms to 1 s apart); while not ready, commands fail at once, as
 *   our other drivers' clients do without an offline queue;
 * - the restart quarantine needs to know which server run answered each
 *   vote: every command that may cast one (an acquire, an extension, a
 *   fencing round; not a release or a reading) is followed, on the same
 *   connection, by `CLIENT ID` and `LASTSAVE` (and `TIME`, the server clock's
 *   reading of serverClock.ts). The connection's id changes
 *   with each new connection, and `LASTSAVE` (the start of a server that does
 *   not save, or its last save) with each restart; a command on a restarted
 *   server is followed by the new run's, never the old one's. Where the two
 *   differ from those read with the server's `INFO server`, the answer is
 *   taken as a new connection's: closed and ready again, before the answer
 *   is told, so that the node does not vote until the server is identified
 *   anew (a save of the server costs the same once). A NOSCRIPT reply (the
 *   server lost its scripts: restarted, or flushed) does the same. A server
 *   that refuses the two (an ACL) is never identified, and never votes.
 *
 * @internal
 */
import * as Net from "node:net"
import type { Connection, ConnectionEvents } from "./connection.js"
import { configValue } from "./connection.js"
import { isNoScript } from "./nodeErrors.js"
import { timeReply } from "./serverClock.js"
import type { Script } from "./scripts.js"
import * as Scripts from "./scripts.js"

/** The few ways a node uses such a client. */
export interface QuietClient {
  /** One command and its reply (an error reply rejects). */
  readonly send: (command: Array<string>) => Promise<unknown>
  /**
   * `command`, then `CLIENT ID`, `LASTSAVE` and `TIME`, on one connection in
   * that order: their four replies, an error reply as an `Error` in its place
   * (`null`: none came, as GLIDE answers a batch it could not run).
   */
  readonly sendMarked: (command: Array<string>) => Promise<ReadonlyArray<unknown> | null>
  /** Whether a failure says that no connection answers (the client's own failure, not a server's reply). */
  readonly isConnectionFailure: (cause: unknown) => boolean
  /** A failure as the server's reply reads (`CODE detail`, see nodeErrors.ts), or as `noConnection(...)`. */
  readonly asReply: (cause: unknown) => Error
  /** Where the server is, so that a refused TCP connection is told at once; none: it is not. */
  readonly address?: { readonly host: string; readonly port: number } | undefined
}

/** How a failure for want of a connection reads (nodeErrors.ts takes it as `Unavailable`). */
export const noConnection = (why: string): Error => new Error(`no connection answers (${why})`)

/** How often a connection that does not answer is asked again, at most. */
const probeMillis = { first: 50, max: 1000 }

/** The connection and server run that answer: what `INFO server` was read with. */
interface Identity {
  readonly clientId: unknown
  readonly lastSave: unknown
}

/** The client as a node's connection, and how to stop probing it. */
export const connectionOf = (client: QuietClient): Connection & { readonly stop: () => void } => {
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
  const lost = (cause: unknown) => {
    identity = undefined
    if (ready) {
      ready = false
      each((events) => events.closed())
    }
    const error = client.asReply(cause)
    each((events) => events.error(error))
    probeLater()
  }
  const probeLater = () => {
    if (probe !== undefined || stopped) return
    const delay = probes === 0 ? 0 : Math.min(probeMillis.first * 2 ** (probes - 1), probeMillis.max)
    probes++
    probe = setTimeout(() => {
      probe = undefined
      client.send(["PING"]).then(becameReady, (cause: unknown) => {
        if (stopped) return
        if (client.isConnectionFailure(cause)) lost(cause)
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
    if (client.isConnectionFailure(cause)) lost(cause)
    const reply = client.asReply(cause)
    if (isNoScript(reply)) replaced()
    throw reply
  }
  const notConnected = () => Promise.reject(noConnection("the server does not answer yet"))
  const send = (command: Array<string>): Promise<unknown> => ready ? client.send(command).catch(failed) : notConnected()
  // A command that may cast a vote, followed by the connection's and the server run's marks.
  const marked = (command: Array<string>): Promise<unknown> => {
    if (!ready) return notConnected()
    const sentAtMillis = performance.now()
    return client.sendMarked(command).then((replies) => {
      const [reply, clientId, lastSave, time] = replies ?? []
      if (identity !== undefined && (clientId !== identity.clientId || lastSave !== identity.lastSave)) replaced()
      else tellClock(time, sentAtMillis)
      if (reply instanceof Error) return failed(reply)
      return reply
    }, failed)
  }
  // The server's clock as the vote's answer read it (serverClock.ts), told before the answer.
  const tellClock = (time: unknown, sentAtMillis: number) => {
    const serverMillis = timeReply(time)
    if (serverMillis === undefined) return
    const reading = { serverMillis, sentAtMillis, answeredAtMillis: performance.now() }
    each((events) => events.clock?.(reading))
  }
  const script = (
    loaded: Script,
    command: string,
    body: string,
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string | number>
  ) => {
    const words = [command, body, String(keys.length), ...keys]
    for (const arg of args) words.push(String(arg))
    return Scripts.castsVote(loaded) ? marked(words) : send(words)
  }
  const identify = (): Promise<string> => {
    if (!ready) return notConnected() as Promise<never>
    return client.sendMarked(["INFO", "server"]).then((replies) => {
      const [info, clientId, lastSave] = replies ?? []
      for (const reply of [info, clientId, lastSave]) {
        if (reply instanceof Error) throw client.asReply(reply)
      }
      identity = { clientId, lastSave }
      return String(info)
    }, failed)
  }
  probeLater()
  if (client.address !== undefined) {
    refusedAtOnce(client.address, (error) => {
      if (!ready && !stopped) each((events) => events.error(error))
    })
  }
  return {
    isReady: () => ready,
    follow: (events) => {
      followers.add(events)
      return () => void followers.delete(events)
    },
    evalsha: (loaded, keys, args) => script(loaded, "EVALSHA", loaded.sha, keys, args),
    eval: (whole, keys, args) => script(whole, "EVAL", whole.lua, keys, args),
    loadScript: (loaded) => send(["SCRIPT", "LOAD", loaded.lua]),
    setIfAbsent: (key, value, ttlMillis) => marked(["SET", key, value, "PX", String(ttlMillis), "NX"]),
    waitForReplicas: (replicas, timeoutMillis) => send(["WAIT", String(replicas), String(timeoutMillis)]).then(Number),
    info: (section) => section === "server" ? identify() : send(["INFO", section]).then(String),
    configGet: (name) => send(["CONFIG", "GET", name]).then((reply) => configValue(reply, name)),
    // With the marks: a restart GLIDE did not tell of is seen here too, within a second, not at the next vote.
    readClock: () => {
      if (ready) marked(["PING"]).catch(() => {})
    },
    // Such clients gather the commands of a turn into their writes themselves.
    beforeSend: () => {},
    stop: () => {
      stopped = true
      clearTimeout(probe)
    }
  }
}

/**
 * Such clients may try a connection nobody accepts again and again until
 * their own connect timeout (GLIDE does): a plain TCP connection tells at
 * once that nobody listens there, so that opening a node does not wait for
 * a server that is down.
 */
const refusedAtOnce = (
  address: { readonly host: string; readonly port: number },
  refused: (error: Error) => void
): void => {
  const socket = Net.connect({ host: address.host, port: address.port })
  socket.once("connect", () => socket.destroy())
  socket.once("error", (error: NodeJS.ErrnoException) => {
    socket.destroy()
    if (error.code === "ECONNREFUSED") refused(noConnection(error.message))
  })
  socket.unref()
}
