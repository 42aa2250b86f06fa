/**
 * What a lock manager says of its nodes as it starts, each a line to log as
 * a warning: nodes that are one server (sameServer.ts), servers that may
 * evict keys (eviction.ts), nodes that sit out their restart quarantine
 * (quarantine.ts; `quarantineMillis` `undefined`: it is off).
 *
 * @internal
 */
import * as Eviction from "./eviction.js"
import type { Node } from "./node.js"
import * as Quarantine from "./quarantine.js"
import * as SameServer from "./sameServer.js"

export const atStart = (
  nodes: ReadonlyArray<Pick<Node, "name" | "run">>,
  quorum: number,
  quarantineMillis: number | undefined,
  nowMillis: number
): ReadonlyArray<string> =>
  [
    SameServer.startupNotice(nodes),
    Eviction.startupNotice(nodes),
    quarantineMillis === undefined ? undefined : Quarantine.startupNotice(nodes, quorum, quarantineMillis, nowMillis)
  ].filter((notice) => notice !== undefined)
