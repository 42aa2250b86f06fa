/**
 * The restart quarantine's rule (src/engine/quarantine.ts) and what it reads
 * from a server (src/nodes/serverRun.ts): when a node's vote counts, what the
 * start-up notice says, and how a server's run and persistence are told from
 * its INFO and CONFIG replies. The quarantine's behaviour through each front
 * end is in the shared Effect suites (packages/fleet/effectSuites/quarantine.ts).
 */
import { assert, describe, it } from "vitest"
import type { NodeRun, Persistence } from "../src/engine/node.js"
import * as Quarantine from "../src/engine/quarantine.js"
import type { Connection, ConnectionEvents } from "../src/nodes/connection.js"
import * as ServerRun from "../src/nodes/serverRun.js"

describe("abstention rule", () => {
  const known = (id: string, startedAtMillis: number): NodeRun => ({ _tag: "Known", id, startedAtMillis })

  it("counts a vote exactly when the same known run started at least the quarantine before the command", () => {
    assert.isUndefined(Quarantine.abstention(known("a", 0), known("a", 0), 1000, 1000, []))
    assert.include(Quarantine.abstention(known("a", 1), known("a", 1), 1000, 1000, []), "votes again in 0.0 s")
    assert.include(Quarantine.abstention(known("a", 0), known("b", 0), 5000, 1000, []), "restarted while the command")
    const unknown: NodeRun = { _tag: "Unknown", detail: "reconnecting" }
    assert.include(Quarantine.abstention(unknown, known("a", 0), 5000, 1000, []), "unknown (reconnecting)")
    assert.include(Quarantine.abstention(known("a", 0), unknown, 5000, 1000, []), "unknown (reconnecting)")
  })

  it("a server that restarted without its keys abstains longer by as far as another node's clock was seen to lead its own", () => {
    const led = (id: string, startedAtMillis: number, nowMillis: number, mostMillis: number): NodeRun => ({
      _tag: "Known",
      id,
      startedAtMillis,
      clockLead: { nowMillis, mostMillis }
    })
    // Node a's clock leapt 3 s ahead, then stepped back 1 s: tokens it issued at its most may stand 3 s ahead.
    const leader = led("a", -1e9, 2000, 3000)
    const restarted = known("b", 0)
    assert.strictEqual(Quarantine.clockLead([leader, restarted], restarted), 3000)
    assert.include(
      Quarantine.abstention(restarted, restarted, 2500, 1000, [leader, restarted]),
      "another node's clock was seen 3.0 s ahead of its own"
    )
    assert.isUndefined(Quarantine.abstention(restarted, restarted, 4000, 1000, [leader, restarted]))
    // The leader itself, restarted, against its own lead now (2 s): 1 s more.
    const leaderRestarted = led("a2", 0, 2000, 3000)
    assert.strictEqual(Quarantine.clockLead([leaderRestarted], leaderRestarted), 1000)
    assert.include(
      Quarantine.abstention(leaderRestarted, leaderRestarted, 1500, 1000, [leaderRestarted]),
      "votes again in 0.5 s"
    )
    // A server that keeps its keys keeps its counters: no wait; nor where no jump was seen.
    const durable: NodeRun = {
      _tag: "Known",
      id: "b",
      startedAtMillis: 0,
      persistence: { keepsKeys: true, detail: "AOF, appendfsync always" }
    }
    assert.isUndefined(Quarantine.abstention(durable, durable, 1500, 1000, [leader]))
    assert.isUndefined(Quarantine.abstention(restarted, restarted, 1000, 1000, [known("c", -1e9)]))
  })

  it("the start-up notice says a server not reached is not reachable, by the run's tag, not by its detail's words", () => {
    const node = (run: NodeRun) => ({ name: "a:1", run: () => run })
    const notice = (run: NodeRun) => Quarantine.startupNotice([node(run)], 1, 1000, 5000)
    assert.include(
      notice({ _tag: "Unknown", detail: "not connected yet", unreached: "NotConnected" }),
      "a:1: not reachable yet"
    )
    assert.include(
      notice({ _tag: "Unknown", detail: "reconnecting", unreached: "Reconnecting" }),
      "a:1: not reachable (reconnecting)"
    )
    // A node of the user's own whose run is unknown for another reason says so, whatever its detail reads.
    assert.include(notice({ _tag: "Unknown", detail: "reconnecting" }), "a:1: its server run is unknown (reconnecting)")
    assert.isUndefined(notice({ _tag: "Known", id: "x", startedAtMillis: 0 }))
  })

  it("a server that keeps its keys votes at once after a restart; any other says why it waits", () => {
    const durable = { keepsKeys: true, detail: "AOF, appendfsync always" }
    const everysec = { keepsKeys: false, detail: "AOF, appendfsync everysec: a crash may lose the last writes" }
    const run = (persistence: Persistence): NodeRun => ({ _tag: "Known", id: "a", startedAtMillis: 900, persistence })
    assert.isUndefined(Quarantine.abstention(run(durable), run(durable), 1000, 1000, []))
    assert.include(
      Quarantine.abstention(run(everysec), run(everysec), 1000, 1000, []),
      "(restart quarantine; AOF, appendfsync everysec"
    )
    // Still: a restart in flight, or an unknown run, never counts.
    const restarted: NodeRun = { _tag: "Known", id: "b", startedAtMillis: 900, persistence: durable }
    assert.include(Quarantine.abstention(run(durable), restarted, 1000, 1000, []), "restarted while the command")
  })

  it("persistence is durable only for AOF with appendfsync always, or as declared where the server cannot be read", () => {
    const aofOn = "# Persistence\r\nloading:0\r\naof_enabled:1\r\n"
    const aofOff = "# Persistence\r\nloading:0\r\naof_enabled:0\r\n"
    const noPerm = new Error("NOPERM this user has no permissions to run the 'config|get' command")
    const cases: ReadonlyArray<[string | Error, string | undefined | Error, boolean, boolean, string]> = [
      [aofOn, "always", false, true, "AOF, appendfsync always"],
      [aofOn, "everysec", false, false, "appendfsync everysec"],
      [aofOn, "everysec", true, false, "declared durable, but the server says otherwise"],
      [aofOn, "no", false, false, "appendfsync no"],
      [aofOff, "always", false, false, "no AOF"],
      [aofOff, "always", true, false, "no AOF: a restart loses keys (declared durable, but"],
      [aofOn, noPerm, false, false, "persistence unknown: AOF on, CONFIG GET appendfsync refused: NOPERM"],
      [aofOn, noPerm, true, true, "declared durable; AOF on, CONFIG GET appendfsync refused: NOPERM"],
      [noPerm, noPerm, false, false, "persistence unknown: INFO persistence failed"],
      [noPerm, noPerm, true, true, "declared durable; INFO persistence failed"],
      [aofOn, undefined, false, false, "CONFIG GET appendfsync gave nothing"]
    ]
    for (const [info, appendfsync, declared, keepsKeys, detail] of cases) {
      const persistence = ServerRun.persistenceOf(info, appendfsync, declared)
      assert.strictEqual(persistence.keepsKeys, keepsKeys, persistence.detail)
      assert.include(persistence.detail, detail)
    }
  })

  it("reads run_id and uptime from INFO server, and refuses a reply without them", () => {
    const reply = "# Server\r\nredis_version:7.0.15\r\nrun_id:4f1c2e\r\ntcp_port:6379\r\nuptime_in_seconds:42\r\n"
    assert.deepStrictEqual(ServerRun.parseInfo(reply), { id: "4f1c2e", uptimeSeconds: 42 })
    assert.isUndefined(ServerRun.parseInfo("# Server\r\nrun_id:4f1c2e\r\n"))
    assert.isUndefined(ServerRun.parseInfo("uptime_in_seconds:42\r\n"))
    assert.isUndefined(ServerRun.parseInfo("run_id:x\r\nuptime_in_seconds:-1\r\n"))
  })

  it("reads from INFO memory whether a server may evict keys: a maxmemory with any policy but noeviction", () => {
    const memory = (maxmemory: number, policy: string) =>
      `# Memory\r\nused_memory:1000\r\nmaxmemory:${maxmemory}\r\nmaxmemory_human:100.00M\r\nmaxmemory_policy:${policy}\r\n`
    assert.strictEqual(
      ServerRun.evictionOf(memory(104_857_600, "volatile-ttl")),
      "maxmemory 100.00M with maxmemory-policy volatile-ttl: it may evict a held lock key"
    )
    assert.include(ServerRun.evictionOf(memory(104_857_600, "allkeys-lru")), "allkeys-lru")
    assert.isUndefined(ServerRun.evictionOf(memory(104_857_600, "noeviction")))
    assert.isUndefined(ServerRun.evictionOf(memory(0, "allkeys-lru")), "no maxmemory: nothing is evicted")
    assert.isUndefined(ServerRun.evictionOf("# Memory\r\nused_memory:1000\r\n"))
    assert.isUndefined(ServerRun.evictionOf(new Error("NOPERM")))
  })

  it("a server already running while the node talked to another (a failover) counts as started when it first answers, keeping no keys; a restarted one by its uptime", async () => {
    // One connection whose server the test swaps, on a clock the test sets (ms); every server runs AOF, appendfsync always.
    let clock = 0
    let server = { id: "a", startedAt: 0 }
    let events: ConnectionEvents | undefined
    const connection: Connection = {
      isReady: () => false,
      follow: (followed) => {
        events = followed
        return () => {}
      },
      info: (section) =>
        Promise.resolve(
          section === "server"
            ? `run_id:${server.id}\r\nuptime_in_seconds:${Math.floor((clock - server.startedAt) / 1000)}\r\n`
            : "aof_enabled:1\r\n"
        ),
      configGet: () => Promise.resolve("always"),
      evalsha: () => Promise.reject(new Error("unused")),
      eval: () => Promise.reject(new Error("unused")),
      loadScript: () => Promise.reject(new Error("unused")),
      setIfAbsent: () => Promise.reject(new Error("unused")),
      waitForReplicas: () => Promise.reject(new Error("unused")),
      beforeSend: () => {}
    }
    const watcher = ServerRun.watch(connection, false, () => clock)
    const connectAt = async (at: number) => {
      clock = at
      events!.ready()
      await watcher.identified()
      return watcher.current() as Extract<NodeRun, { _tag: "Known" }>
    }
    const first = await connectAt(100_000)
    assert.deepStrictEqual([first.id, first.startedAtMillis, first.persistence?.keepsKeys], ["a", 1_000, true])
    // Failover: the connection drops at 200 s; the replica promoted in its place has run since 50 s.
    clock = 200_000
    events!.closed()
    server = { id: "b", startedAt: 50_000 }
    const promoted = await connectAt(205_000)
    assert.deepStrictEqual([promoted.id, promoted.startedAtMillis, promoted.persistence?.keepsKeys], [
      "b",
      205_000,
      false
    ])
    assert.include(promoted.persistence?.detail, "another server than before")
    // Reconnected to the same new master later: still new since it first answered.
    clock = 210_000
    events!.closed()
    const again = await connectAt(211_000)
    assert.deepStrictEqual([again.startedAtMillis, again.persistence?.keepsKeys], [205_000, false])
    // A restart: the new process started after the connection dropped; its uptime and persistence are believed.
    clock = 300_000
    events!.closed()
    server = { id: "c", startedAt: 301_000 }
    const restarted = await connectAt(303_000)
    assert.deepStrictEqual([restarted.id, restarted.startedAtMillis, restarted.persistence?.keepsKeys], [
      "c",
      302_000,
      true
    ])
  })
})
