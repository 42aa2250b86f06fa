/**
 * Restart quarantine (docs/quarantine.md): a node that restarted without
 * persistence has lost the keys it held, so it could grant a resource that a
 * holder still owns on it. Every key it held was set before its restart with
 * a ttl of at most `maxTtl`, so once `maxTtl` has passed since the restart
 * none of them can still be relied on, and the node may vote again. Until
 * then its votes do not count. The client cannot tell a restart from a first
 * start, so a server that started less than `maxTtl` ago abstains either
 * way, unless it keeps its keys across restarts (an append-only file with
 * `appendfsync always`, see `RedisNode.Persistence`): then it lost nothing,
 * and votes at once.
 *
 * @internal
 */
import type { NodeRun } from "./node.js"
import * as Algorithm from "./algorithm.js"

/** How long a restarted node abstains: the longest ttl in use, plus its drift allowance. */
export const durationMillis = (maxTtlMillis: number, driftFactor: number): number =>
  maxTtlMillis + Algorithm.drift(maxTtlMillis, driftFactor)

/**
 * How much longer than the quarantine a server that restarted without its
 * keys abstains: its fencing counters are gone, and the tokens it issues
 * from then on stand on its time alone (scripts.ts), which must pass every
 * token issued before. A token is at most its issuer's time, so the
 * quarantine covers a clock that leads this one by less than `maxTtl`; the
 * jumps the nodes saw tell how far one led (NodeRun's `clockLead`): the most
 * any node's clock led (`runs`: every node's run), against this node's lead
 * now.
 */
export const clockLead = (runs: ReadonlyArray<NodeRun>, run: NodeRun): number => {
  let most = 0
  for (const other of runs) {
    if (other._tag === "Known" && other.clockLead !== undefined) most = Math.max(most, other.clockLead.mostMillis)
  }
  return most === 0 ? 0 : Math.max(0, most - (run._tag === "Known" ? run.clockLead?.nowMillis ?? 0 : 0))
}

/**
 * Why a node's yes must not count, or `undefined` when it counts. `before` is
 * the node's run when the operation was sent at `sentAtMillis`, `after` when
 * its answer came: both must be the same known run, started at least
 * `quarantineMillis` before the operation was sent, and longer where a
 * node's clock was seen to lead its own (`clockLead`; `runs`: the run of
 * every node of the manager, as the caller last read them).
 */
export const abstention = (
  before: NodeRun,
  after: NodeRun,
  sentAtMillis: number,
  quarantineMillis: number,
  runs: ReadonlyArray<NodeRun>
): string | undefined => {
  if (before._tag === "Unknown") return `server run unknown (${before.detail})`
  if (after._tag === "Unknown") return `server run unknown (${after.detail})`
  if (before.id !== after.id) return "the server restarted while the command was in flight"
  // A jump seen while the command was in flight counts: its answer may be the jump's.
  const jump = after.clockJump ?? before.clockJump
  if (jump !== undefined) {
    const sinceJump = sentAtMillis - jump.atMillis
    if (sinceJump < quarantineMillis) {
      return `its clock jumped forward ${jumpSize(jump.byMillis)} ${
        seconds(sinceJump)
      } s ago: keys it holds may have expired early; ` +
        `votes again in ${seconds(quarantineMillis - sinceJump)} s (restart quarantine)`
    }
  }
  const { persistence } = before
  if (persistence?.keepsKeys === true) return undefined
  const upMillis = sentAtMillis - before.startedAtMillis
  if (upMillis >= quarantineMillis) {
    const leadMillis = clockLead(runs, after)
    if (upMillis >= quarantineMillis + leadMillis) return undefined
    return `server started ${seconds(upMillis)} s ago, and another node's clock was seen ${
      jumpSize(leadMillis)
    } ahead of its own: fencing tokens issued before may stand above its time; votes again in ${
      seconds(quarantineMillis + leadMillis - upMillis)
    } s (restart quarantine)`
  }
  return `server started ${seconds(upMillis)} s ago, votes again in ${seconds(quarantineMillis - upMillis)} s ` +
    `(restart quarantine${persistence === undefined ? "" : `; ${persistence.detail}`})`
}

const seconds = (millis: number) => (Math.max(0, millis) / 1000).toFixed(1)

/**
 * What a manager says, once per jump, of a node whose clock it saw jump
 * forward: one line to log as a warning, at the first round of an
 * acquisition whose vote from that node did not count (its refusal or its
 * lock says why, round after round; the log says it once).
 */
export class ClockJumpNotices {
  private readonly told = new Set<string>()

  constructor(private readonly quarantineMillis: number, private readonly warn: (line: string) => void) {}

  afterRound(
    nodes: ReadonlyArray<{ readonly name: string; readonly run: () => NodeRun }>,
    outcomes: ReadonlyArray<{ readonly _tag: string }>
  ): void {
    for (let index = 0; index < outcomes.length; index++) {
      if (outcomes[index]._tag !== "Abstained") continue
      const run = nodes[index].run()
      const jump = run._tag === "Known" ? run.clockJump : undefined
      if (jump === undefined) continue
      const seen = `${index} ${jump.atMillis}`
      if (this.told.has(seen)) continue
      this.told.add(seen)
      this.warn(
        `effect-redlock: ${nodes[index].name}'s clock jumped forward ${
          jumpSize(jump.byMillis)
        }: keys it holds may have ` +
          `expired early, so its votes do not count for ${
            seconds(this.quarantineMillis)
          } s from then (restart quarantine)`
      )
    }
  }
}

// A jump under a second in ms: "0.0 s" would read as none.
const jumpSize = (millis: number) => millis < 1000 ? `${Math.ceil(millis)} ms` : `${seconds(millis)} s`

/** Why a node whose server run is unknown does not vote, as its user reads it: mostly, it is not reachable yet. */
const unknownRun = (run: Extract<NodeRun, { readonly _tag: "Unknown" }>): string =>
  run.unreached === "NotConnected"
    ? "not reachable yet"
    : run.unreached === "Reconnecting"
    ? "not reachable (reconnecting)"
    : `its server run is unknown (${run.detail})`

/**
 * One line for a manager that starts while nodes do not vote (a new
 * cluster, a restart, a server not reachable yet): which nodes, why, and
 * when they vote; `undefined` when every node does. A brand-new development
 * server otherwise only shows as failed acquisitions.
 */
export const startupNotice = (
  nodes: ReadonlyArray<{ readonly name: string; readonly run: () => NodeRun }>,
  quorum: number,
  quarantineMillis: number,
  nowMillis: number
): string | undefined => {
  let restarted = 0
  const runs = nodes.map((node) => node.run())
  const waiting = nodes.flatMap((node, index) => {
    const run = runs[index]
    const why = run._tag === "Unknown" ? unknownRun(run) : abstention(run, run, nowMillis, quarantineMillis, runs)
    if (why !== undefined && run._tag === "Known") restarted++
    return why === undefined ? [] : [`${node.name}: ${why}`]
  })
  if (waiting.length === 0) return undefined
  const voting = nodes.length - waiting.length
  // The advice on persistence only where a server sits out its quarantine, not for one that is down or refuses us.
  return `effect-redlock: ${waiting.length} of ${nodes.length} nodes do not vote yet (${waiting.join("; ")})` +
    (voting < quorum ? `; ${voting} vote, ${quorum} needed: acquisitions fail until then` : "") +
    (restarted === 0 ?
      "" :
      ". A server that keeps its keys (appendonly yes, appendfsync always) votes at once after a restart; " +
      "restartQuarantine: false suits a throw-away development server only (docs/quarantine.md)")
}
