/**
 * Which server run a node's connection talks to, whether it keeps its keys
 * across restarts, for the restart quarantine (quarantine.ts), and whether it
 * may evict them (eviction.ts). A restarted server is always a new TCP
 * connection, so the run is unknown from the moment a connection closes
 * until `INFO server` answers on the next one. Persistence and eviction are
 * read on each connection too (`INFO persistence`, `CONFIG GET
 * appendfsync`, `INFO memory`): a change of configuration at run time is
 * seen at the next connection only. A server that was already running while the node
 * talked to another (a Sentinel failover's new master, another server behind
 * the address) counts as started when it first answers, and as keeping no
 * keys: it sits out the quarantine as a restarted server does. So does a
 * server whose clock was seen to jump forward (serverClock.ts), from then.
 *
 * @internal
 */
import type { ClockLead, NodeRun, Persistence } from "../engine/node.js"
import type { Connection } from "./connection.js"
import { type Reading, ServerClock } from "./serverClock.js"

/** The `field:value` lines of an `INFO` reply. */
const infoFields = (reply: string): Map<string, string> => {
  const fields = new Map<string, string>()
  for (const line of reply.split(/\r?\n/)) {
    const colon = line.indexOf(":")
    if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trim())
  }
  return fields
}

/** `run_id` and `uptime_in_seconds` of an `INFO server` reply. */
export const parseInfo = (reply: string): { readonly id: string; readonly uptimeSeconds: number } | undefined => {
  const fields = infoFields(reply)
  const id = fields.get("run_id")
  const uptimeSeconds = Number(fields.get("uptime_in_seconds"))
  return id !== undefined && id.length > 0 && Number.isInteger(uptimeSeconds) && uptimeSeconds >= 0
    ? { id, uptimeSeconds }
    : undefined
}

/**
 * Whether the server keeps its keys across a restart, from its `INFO
 * persistence` reply and its `CONFIG GET appendfsync` value,
 * either of which may be an error where the server refuses it (ACLs, a
 * renamed CONFIG). `declared`: the user says the server is durable; believed
 * only where the server cannot be read, never against what it says.
 */
export const persistenceOf = (
  info: string | Error,
  appendfsync: string | undefined | Error,
  declared: boolean
): Persistence => {
  const unreadable = (what: string): Persistence =>
    declared
      ? { keepsKeys: true, detail: `declared durable; ${what}` }
      : {
        keepsKeys: false,
        detail: `persistence unknown: ${what} (declare the node durable if it runs AOF with appendfsync always)`
      }
  const notAsDeclared = declared ? " (declared durable, but the server says otherwise)" : ""
  if (info instanceof Error) return unreadable(`INFO persistence failed: ${info.message}`)
  const aof = infoFields(info).get("aof_enabled")
  if (aof === undefined) return unreadable("INFO persistence gave no aof_enabled")
  if (aof !== "1") return { keepsKeys: false, detail: `no AOF: a restart loses keys${notAsDeclared}` }
  if (appendfsync instanceof Error) return unreadable(`AOF on, CONFIG GET appendfsync refused: ${appendfsync.message}`)
  const policy = appendfsync
  if (policy === undefined) return unreadable("AOF on, CONFIG GET appendfsync gave nothing")
  return policy === "always"
    ? { keepsKeys: true, detail: "AOF, appendfsync always" }
    : { keepsKeys: false, detail: `AOF, appendfsync ${policy}: a crash may lose the last writes${notAsDeclared}` }
}

/**
 * Why a server may evict keys it holds, from its `INFO memory` reply: a
 * `maxmemory` and a policy other than `noeviction` (the `volatile-*` ones
 * too: lock keys have a ttl, and `volatile-ttl` takes the nearest to expire
 * first). `undefined`: it evicts nothing, or the reply does not say.
 */
export const evictionOf = (info: string | Error): string | undefined => {
  if (info instanceof Error) return undefined
  const fields = infoFields(info)
  const maxmemory = Number(fields.get("maxmemory"))
  const policy = fields.get("maxmemory_policy")
  if (!(maxmemory > 0) || policy === undefined || policy === "noeviction") return undefined
  return `maxmemory ${
    fields.get("maxmemory_human") ?? `${maxmemory}B`
  } with maxmemory-policy ${policy}: it may evict a held lock key`
}

const asError = (cause: unknown): Error => cause instanceof Error ? cause : new Error(String(cause))

export interface RunWatcher {
  readonly current: () => NodeRun
  /** Settles once the server of the connection is identified (or could not be), at once when it is. */
  readonly identified: () => Promise<void>
  /** A reading of the server's clock (serverClock.ts): a forward jump makes the run sit out the quarantine from now. */
  readonly readClock: (reading: Reading) => void
  readonly stop: () => void
}

/**
 * Follow the server run of the connection: each time it is ready, its INFO
 * server (run id, uptime) read as the reply arrives at `now()` (monotonic
 * ms, the shell's timeline), and its persistence, until `stop`.
 */
export const watch = (
  connection: Connection,
  declaredDurable: boolean,
  now: () => number,
  watchClock = true
): RunWatcher => {
  let run: NodeRun = { _tag: "Unknown", detail: "not connected yet", unreached: "NotConnected" }
  let identifying = false
  let connectionNumber = 0
  let waiters: Array<() => void> = []
  // The server this node last knew, and when its connection was lost.
  let lastId: string | undefined
  let lostAtMillis = -Infinity
  // A server that was already running while this node talked to another one
  // (a failover's promoted replica, another server behind the same address),
  // from when it first answered: it may lack keys the one before granted.
  let replacement: { readonly id: string; readonly atMillis: number } | undefined
  const known = (
    id: string,
    atMillis: number,
    uptimeSeconds: number,
    persistence: () => Persistence,
    evicts: string | undefined
  ): NodeRun => {
    const startedAtMillis = atMillis - Math.max(0, uptimeSeconds - 1) * 1000
    if (lastId !== undefined && id !== lastId && startedAtMillis < lostAtMillis) replacement = { id, atMillis }
    lastId = id
    if (replacement?.id !== id) return { _tag: "Known", id, startedAtMillis, persistence: persistence(), evicts }
    return {
      _tag: "Known",
      id,
      evicts,
      startedAtMillis: replacement.atMillis,
      // Not even a durable server keeps keys it never received (replication is asynchronous).
      persistence: {
        keepsKeys: false,
        detail:
          "another server than before (a failover's new master?), new to this node: it may lack keys the one before granted"
      }
    }
  }
  // The server's clock through the readings that come with votes; a forward jump seen on a run stays with
  // it, the lead with the node.
  const clock = new ServerClock()
  let clockJump: { readonly id: string; readonly atMillis: number; readonly byMillis: number } | undefined
  let clockLead: ClockLead | undefined
  const withJump = (next: NodeRun): NodeRun => {
    if (next._tag !== "Known") return next
    const jumped = clockJump?.id === next.id ? clockJump : undefined
    if (jumped === undefined && clockLead === undefined) return next
    return {
      ...next,
      ...(jumped === undefined ? {} : { clockJump: { atMillis: jumped.atMillis, byMillis: jumped.byMillis } }),
      ...(clockLead === undefined ? {} : { clockLead })
    }
  }
  const onClock = (reading: Reading) => {
    const jump = clock.read(reading)
    if (jump === undefined) return
    clockLead = { nowMillis: clock.leadMillis, mostMillis: clock.mostLeadMillis }
    if (run._tag !== "Known") return
    if (jump._tag === "Forward") clockJump = { id: run.id, atMillis: now(), byMillis: jump.byMillis }
    run = withJump(run)
  }
  const settle = (next: NodeRun) => {
    run = withJump(next)
    identifying = false
    const woken = waiters
    waiters = []
    woken.forEach((wake) => wake())
  }
  const onClose = () => {
    connectionNumber++
    // The next connection may reach another server: its first reading starts afresh.
    clock.forget()
    if (run._tag === "Known") {
      lostAtMillis = now()
      run = { _tag: "Unknown", detail: "reconnecting", unreached: "Reconnecting" }
    }
  }
  const onReady = () => {
    const asked = connectionNumber
    identifying = true
    // The start is read off the INFO server reply as it arrives; persistence may come after.
    const server = connection.info("server").then((reply) => ({ info: parseInfo(reply), at: now() }))
    const persistence = connection.info("persistence").then((reply) => reply, asError)
    const appendfsync = connection.configGet("appendfsync").then((reply) => reply, asError)
    const memory = connection.info("memory").then((reply) => reply, asError)
    Promise.all([server, persistence, appendfsync, memory]).then(
      ([{ at, info }, persistenceInfo, appendfsyncReply, memoryInfo]) => {
        if (asked !== connectionNumber) return
        settle(
          info === undefined
            ? { _tag: "Unknown", detail: "INFO server gave no run_id and uptime_in_seconds" }
            : known(
              info.id,
              at,
              info.uptimeSeconds,
              () => persistenceOf(persistenceInfo, appendfsyncReply, declaredDurable),
              evictionOf(memoryInfo)
            )
        )
      },
      (error: unknown) => {
        if (asked !== connectionNumber) return
        settle({
          _tag: "Unknown",
          detail: `INFO server failed: ${error instanceof Error ? error.message : String(error)}`
        })
      }
    )
  }
  const unfollow = connection.follow({
    ready: onReady,
    closed: onClose,
    error: () => {},
    clock: watchClock ? onClock : undefined
  })
  if (connection.isReady()) onReady()
  return {
    current: () => run,
    identified: () =>
      !identifying && run._tag === "Known"
        ? Promise.resolve()
        : new Promise<void>((resolve) => void waiters.push(resolve)),
    readClock: watchClock ? onClock : () => {},
    stop: unfollow
  }
}
