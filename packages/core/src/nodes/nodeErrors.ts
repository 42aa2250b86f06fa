/**
 * A driver's failure as a node error: server errors by their code (the
 * first word of the reply, the same for every driver), failures of the
 * connection as `Unavailable` (or as what the last connection error says,
 * e.g. a wrong password), anything else `Unknown`.
 *
 * @internal
 */
import type { MakeNodeError, NodeError, NodeErrorReason } from "../engine/node.js"

/** What the drivers say when a command could not be sent or answered for want of a connection. */
const connectionLostText = new RegExp(
  [
    // ioredis
    "Stream isn't writeable",
    "Connection is closed",
    "MaxRetriesPerRequest",
    // node-redis
    "The client is offline",
    "The client is closed",
    "Socket closed unexpectedly",
    "Disconnects client",
    "Connection timeout",
    // the clients that reconnect without telling (quietConnection.ts)
    "no connection answers",
    // the socket's own
    "ECONNREFUSED",
    "ECONNRESET",
    "EPIPE",
    // ioredis's Cluster
    "Cluster isn't ready",
    "Cluster is ended",
    "Too many Cluster redirections"
  ].join("|")
)

/**
 * A server's MOVED, ASK or CROSSSLOT reaches us only from a node that is
 * not a cluster node but talks to a Redis Cluster's master: a cluster node's
 * client follows redirections, and its keys share one slot or are refused
 * before anything is sent (clusterKeys.ts).
 */
const clusterServer =
  " (the server is a Redis Cluster master: give the whole cluster as one node, with the cluster option)"

/** Map a driver failure to a node error; connection failures carry the last connection error's text. */
export const toNodeError = <E extends NodeError>(
  makeError: (fields: Parameters<MakeNodeError>[0]) => E,
  node: string,
  cause: unknown,
  lastConnectionError: Error | undefined
): E => {
  const text = cause instanceof Error ? cause.message : String(cause)
  const classify = (message: string): NodeErrorReason | undefined => {
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
      case "CLUSTERDOWN":
        return "Busy"
      case "CROSSSLOT":
        return "CrossSlot"
    }
    return undefined
  }
  const direct = classify(text)
  if (direct === "CrossSlot" || /^(MOVED|ASK) /.test(text)) {
    return makeError({ node, reason: direct ?? "Unknown", detail: text + clusterServer, cause })
  }
  if (direct !== undefined) return makeError({ node, reason: direct, detail: text, cause })
  const connectionLost = connectionLostText.test(text)
  if (connectionLost) {
    const last = lastConnectionError?.message
    const reason = last === undefined ? "Unavailable" : classify(last) ?? "Unavailable"
    return makeError({
      node,
      reason,
      detail: last === undefined ? `not connected (${text})` : `not connected: ${last}`,
      cause
    })
  }
  return makeError({ node, reason: "Unknown", detail: text, cause })
}

export const isNoScript = (error: unknown) => error instanceof Error && error.message.startsWith("NOSCRIPT")
