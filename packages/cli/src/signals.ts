/**
 * Where SIGINT, SIGTERM and SIGHUP go: to the command `redlock run`
 * supervises while it runs (it decides how to stop, and redlock releases the
 * lock once it exited), else to redlock itself, which stops what it is doing
 * and releases whatever it holds.
 */
export const handled: ReadonlyArray<NodeJS.Signals> = ["SIGINT", "SIGTERM", "SIGHUP"]

let target: ((signal: NodeJS.Signals) => void) | undefined

/** Send signals to `forward` until the returned function is called. */
export const forwardTo = (forward: (signal: NodeJS.Signals) => void): () => void => {
  target = forward
  return () => {
    if (target === forward) target = undefined
  }
}

/** Install the handlers once: `own` is called for a signal nobody takes. */
export const install = (own: (signal: NodeJS.Signals) => void): void => {
  for (const signal of handled) process.on(signal, () => (target ?? own)(signal))
}
