/**
 * The lock scripts on the server of one node's connection.
 *
 * The engine relies on each node applying one connection's commands in the
 * order they were sent (a late SET is always followed by its release). A
 * script that the server does not have answers NOSCRIPT; sending it again
 * whole (EVAL) once that reply is in would land it after the commands sent
 * meanwhile (the next attempt's SET, a release) and could delete a key that a
 * later attempt counted. So the scripts are loaded (SCRIPT LOAD) on each
 * connection as soon as it is ready, ahead of any command of ours, and called
 * only by EVALSHA: a NOSCRIPT reply (the server lost them: SCRIPT FLUSH,
 * eviction) means that command did not run. It is reported as a `NoScript`
 * failure, never sent again, and the scripts are loaded again ahead of the
 * commands that follow.
 *
 * Where SCRIPT LOAD is refused (an ACL that allows EVAL only), the
 * connection sends each script whole, by EVAL, on every call: one command
 * each, in order.
 *
 * @internal
 */
import type { Connection } from "./connection.js"
import type { Script } from "./scripts.js"

export interface LoadedScripts {
  /** Whether scripts go by EVALSHA (loaded, or being loaded ahead of the command); otherwise whole, by EVAL. */
  readonly bySha: () => boolean
  /** A command met NOSCRIPT: load the scripts again, ahead of the commands that follow (once at a time). */
  readonly reload: () => void
  /** Settles (never failing) once the loading under way, if any, has been answered. */
  readonly settled: () => Promise<void>
}

/** Load `scripts` each time the connection is ready from now on, until `stop`. */
export const watch = (
  connection: Connection,
  scripts: ReadonlyArray<Script>
): { readonly loaded: LoadedScripts; readonly stop: () => void } => {
  let bySha = true
  let loading: Promise<void> | undefined
  // Answers that come from an earlier connection decide nothing.
  let connectionNumber = 0
  const load = () => {
    if (loading !== undefined) return
    const asked = connectionNumber
    const done = (loaded: boolean) => {
      if (asked !== connectionNumber) return
      bySha = loaded
      loading = undefined
    }
    loading = Promise.all(scripts.map((script) => connection.loadScript(script))).then(
      () => done(true),
      () => done(false)
    )
  }
  // What was being loaded on the closed connection is lost with it.
  const onClose = () => {
    connectionNumber++
    loading = undefined
  }
  const unfollow = connection.follow({ ready: load, closed: onClose, error: () => {} })
  if (connection.isReady()) load()
  return {
    loaded: { bySha: () => bySha, reload: load, settled: () => loading ?? Promise.resolve() },
    stop: unfollow
  }
}
