/**
 * Servers that may evict keys. A server with a `maxmemory` and an evicting
 * policy drops keys under memory pressure, a held lock key among them (a
 * lock key has a ttl, so the `volatile-*` policies take it too,
 * `volatile-ttl` first): another client can then take the lock on that
 * server while its holder still counts it. A lock server wants
 * `maxmemory-policy noeviction` (a full server then refuses new locks with
 * `OutOfMemory`, and drops no held one). The node reads the policy on each
 * connection (`NodeRun.evicts`, serverRun.ts); the manager says so at start.
 *
 * @internal
 */
import type { Node } from "./node.js"

/** One line for a manager that starts over servers that may evict keys: which, and why; `undefined` when none. */
export const startupNotice = (nodes: ReadonlyArray<Pick<Node, "name" | "run">>): string | undefined => {
  const evicting = nodes.flatMap((node) => {
    const run = node.run()
    return run._tag === "Known" && run.evicts !== undefined ? [`${node.name}: ${run.evicts}`] : []
  })
  if (evicting.length === 0) return undefined
  return `effect-redlock: ${evicting.length} of ${nodes.length} nodes may evict keys (${evicting.join("; ")}). ` +
    "A lock key evicted while held lets another client take the lock there: " +
    "set maxmemory-policy noeviction on lock servers (docs/safety.md)"
}
