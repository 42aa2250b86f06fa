/**
 * GLIDE's failures as the other drivers' replies read: GLIDE's Rust core
 * renames some server errors (`NoScriptError` for `NOSCRIPT`,
 * `PermissionDenied` for `NOPERM` ...) and puts a colon after the code of
 * others (`WRONGTYPE: ...`); the node tells them apart by the server's code
 * (nodeErrors.ts), so each is written back as `CODE detail`. A failure of
 * the connection (refused, dropped, not answered within GLIDE's
 * `requestTimeout`) reads as quietConnection.ts's `noConnection`, or as the
 * server's code where the connection was refused by it (`WRONGPASS`).
 *
 * @internal
 */
import { noConnection } from "../quietConnection.js"

/** GLIDE's names of server errors, and the server's codes. */
const codeOfKind: Record<string, string> = {
  NoScriptError: "NOSCRIPT",
  PermissionDenied: "NOPERM",
  AuthenticationFailed: "WRONGPASS",
  ReadOnly: "READONLY",
  BusyLoadingError: "LOADING",
  TryAgain: "TRYAGAIN",
  ClusterDown: "CLUSTERDOWN",
  CrossSlot: "CROSSSLOT",
  MasterDown: "MASTERDOWN",
  Moved: "MOVED",
  Ask: "ASK",
  ExecAbortError: "EXECABORT"
}

const renamedKind = /signalled by the server: - (\w+):? ?([\s\S]*)$/
const codeWithColon = /^([A-Z][A-Z_-]+): ([\s\S]*)$/
const refusedBy = /\b(WRONGPASS|NOAUTH|NOPERM)\b:? ?([^\n]*)/

/** The classes of GLIDE's errors that say the command did not reach a connected server. */
const connectionKinds = new Set(["ConnectionError", "ClosingError", "TimeoutError"])

/** Whether `cause` says GLIDE had no working connection (the node then waits until one answers). */
export const isConnectionFailure = (cause: unknown): boolean =>
  cause instanceof Error &&
  (connectionKinds.has(cause.name) || /connect failed|Connection error|inflight requests limit/i.test(cause.message)) &&
  cause.name !== "TimeoutError"

/** `cause` as an error whose message is the server's reply, or as `noConnection`'s. */
export const asReply = (cause: unknown): Error => {
  if (!(cause instanceof Error)) return new Error(String(cause))
  const message = cause.message.trim()
  const renamed = renamedKind.exec(message)
  if (renamed !== null) return withMessage(cause, `${codeOfKind[renamed[1]] ?? renamed[1]} ${renamed[2]}`)
  const coded = codeWithColon.exec(message)
  if (coded !== null) return withMessage(cause, `${coded[1]} ${coded[2]}`)
  if (connectionKinds.has(cause.name) || isConnectionFailure(cause)) {
    const refused = refusedBy.exec(message)
    if (refused !== null) return withMessage(cause, `${refused[1]} ${refused[2]}`)
    const why = cause.name === "TimeoutError" ? `not answered within the client's requestTimeout` : message
    return withMessage(cause, noConnection(`GLIDE: ${why}`).message)
  }
  return cause
}

const withMessage = (cause: Error, message: string): Error => {
  const error = new Error(message, { cause })
  error.name = cause.name
  return error
}
