/**
 * Running commands and scripts on an ioredis client, and turning its failures
 * into node errors.
 *
 * @internal
 */
import type { Redis } from "ioredis"
import { RedisNodeError, type RedisNodeErrorReason } from "../RedisNode.js"
import type { Script } from "./scripts.js"

/** Map a driver failure to a node error; connection failures carry the last connection error's text. */
export const toNodeError = (node: string, cause: unknown, lastConnectionError: Error | undefined): RedisNodeError => {
  const text = cause instanceof Error ? cause.message : String(cause)
  const classify = (message: string): RedisNodeErrorReason | undefined => {
    const code = message.split(" ", 1)[0]
    switch (code) {
      case "WRONGTYPE":
        return "WrongType"
      case "READONLY":
        return "ReadOnly"
      case "OOM":
        return "OutOfMemory"
      case "NOAUTH":
      case "WRONGPASS":
      case "NOPERM":
        return "Auth"
      case "NOSCRIPT":
        return "NoScript"
      case "BUSY":
      case "LOADING":
      case "MASTERDOWN":
      case "TRYAGAIN":
        return "Busy"
    }
    return undefined
  }
  const direct = classify(text)
  if (direct !== undefined) return new RedisNodeError({ node, reason: direct, detail: text, cause }, true)
  const connectionLost = /Stream isn't writeable|Connection is closed|MaxRetriesPerRequest|ECONNREFUSED|ECONNRESET/
    .test(text)
  if (connectionLost) {
    const last = lastConnectionError?.message
    const reason = last === undefined ? "Unavailable" : classify(last) ?? "Unavailable"
    return new RedisNodeError({
      node,
      reason,
      detail: last === undefined ? `not connected (${text})` : `not connected: ${last}`,
      cause
    }, true)
  }
  return new RedisNodeError({ node, reason: "Unknown", detail: text, cause }, true)
}

export const isNoScript = (error: unknown) => error instanceof Error && error.message.startsWith("NOSCRIPT")

/**
 * EVALSHA, and EVAL when the server does not have the script yet (first use,
 * restart, SCRIPT FLUSH); EVAL caches it there for the next EVALSHA.
 */
export const evalScript = (
  client: Redis,
  script: Script,
  keys: ReadonlyArray<string>,
  args: ReadonlyArray<string | number>
): Promise<unknown> =>
  client.evalsha(script.sha, keys.length, ...keys, ...args).catch((error: unknown) =>
    isNoScript(error) ? client.eval(script.lua, keys.length, ...keys, ...args) : Promise.reject(error)
  )

/**
 * Batch the writes of one turn of the event loop into one write to the socket.
 * Commands of many concurrent locks are sent to a node one after another
 * within the same turn (their callers resume together when a reply arrives);
 * corking the socket until the turn's synchronous work and promise callbacks
 * are done turns them into one system call instead of one per command. A lone
 * command waits for nothing: the socket is uncorked before the event loop
 * goes on. Call it before sending each command.
 */
export const writeBatcher = (client: Redis): (() => void) => {
  let corked = false
  return () => {
    const stream = client.stream
    if (corked || stream === undefined || !stream.writable) return
    corked = true
    stream.cork()
    process.nextTick(() => {
      corked = false
      stream.uncork()
    })
  }
}
