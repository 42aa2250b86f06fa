/**
 * The listeners a node puts on a user's client. Each set raises the client's
 * listener limit by one while it is on: several managers over one client
 * (node-redlock users make a Redlock per task) would otherwise trip Node's
 * warning of a possible listener leak, which is there for the user's own.
 *
 * @internal
 */

/**
 * A listener as clients' emitters declare it: each event has arguments of its own, so the
 * declaration takes any (a listener of `unknown` arguments would not accept ioredis's types).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Listener = (...args: Array<any>) => void

/** What a client is as an event emitter (ioredis, node-redis and Node's emitters). */
export interface Emitter {
  on(event: string, listener: Listener): unknown
  off(event: string, listener: Listener): unknown
  getMaxListeners?(): number
  setMaxListeners?(limit: number): unknown
}

export type Listeners = ReadonlyArray<readonly [event: string, listener: Listener]>

const raiseLimit = (emitter: Emitter, by: number): void => {
  if (typeof emitter.getMaxListeners !== "function" || typeof emitter.setMaxListeners !== "function") return
  const limit = emitter.getMaxListeners()
  // 0 and Infinity: no limit.
  if (limit === 0 || limit === Infinity) return
  emitter.setMaxListeners(Math.max(1, limit + by))
}

/** Put `listeners` on `emitter`; returns their removal (once). */
export const listen = (emitter: Emitter, listeners: Listeners): () => void => {
  for (const [event, listener] of listeners) emitter.on(event, listener)
  raiseLimit(emitter, 1)
  let on = true
  return () => {
    if (!on) return
    on = false
    for (const [event, listener] of listeners) emitter.off(event, listener)
    raiseLimit(emitter, -1)
  }
}
