/**
 * Closing a client of ours, a client or a cluster client of the ioredis family.
 *
 * @internal
 */

import type { Listener } from "../listeners.js"

/** What closing uses of a client. */
export interface Closable {
  readonly status: string
  on(event: string, listener: Listener): unknown
  quit(): Promise<unknown>
  disconnect(reconnect?: boolean): void
}

/**
 * QUIT politely, at most 1 s (a hung server would hold the shutdown up),
 * then drop the sockets. Never rejects.
 */
export const close = async (client: Closable): Promise<void> => {
  // The node's own error listener is gone by now: a reconnection still under
  // way may fail as it is dropped, and ioredis prints an error nobody listens to.
  client.on("error", () => {})
  if (client.status === "ready") {
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([
      client.quit().catch(() => {}),
      new Promise<void>((resolve) => void (timer = setTimeout(resolve, 1000)))
    ])
    clearTimeout(timer)
  }
  client.disconnect()
}
