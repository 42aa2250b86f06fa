/**
 * The multi-process fault suite, short: every lock scenario of `npm run
 * faults` and two each of the semaphore's and the read-write lock's, for
 * 4.5 s with 3 worker processes on 5 real redis-servers (plus one for the
 * fenced storage); some again with node-redlock workers among them, and
 * over GLIDE nodes. Each scenario is one test.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Checker from "../../../faults/checker.js"
import * as Suite from "../../../faults/suite.js"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"

const settings: Suite.Settings = {
  workers: 3,
  // The paused-holder scenario runs longer (its minDurationMillis, 7.5 s here).
  durationMillis: 4500,
  ttlMillis: 2000,
  maxTtlMillis: 2000,
  holdMillis: [20, 150],
  seed: 7
}

// Of the semaphore's and the read-write lock's rows of `npm run faults`, two each here (each row is ~12 s of CI).
const sharedRows = [
  "minority paused (SIGSTOP 1-2 of 5)",
  "majority killed under a holder, restarted at once, quarantine on"
]
const scenarios = Suite.scenarios(settings).filter((scenario) =>
  (scenario.limit === undefined && scenario.maxReaders === undefined) ||
  sharedRows.some((row) => scenario.name.endsWith(`: ${row}`))
)

// Some lock scenarios again with a node-redlock program among the workers (effect-redlock/node-redlock,
// worker 1 of 3), contending with the Effect workers for the same keys.
const mixedRows = [
  "no faults",
  "minority paused (SIGSTOP 1-2 of 5)",
  "majority killed under a holder, restarted at once, quarantine on",
  "majority paused, then back",
  "holder paused past its ttl"
]
const mixed = Suite.scenarios(settings).filter((scenario) => mixedRows.includes(scenario.name))

// Some again over GLIDE nodes, whose client reconnects without telling: restarts are told by the marks after each vote.
const glideRows = [
  "minority killed, restarted 1 s later",
  "majority killed under a holder, restarted at once, quarantine on",
  "a node killed after each token, restarted at once (empty)"
]
const overGlide = Suite.scenarios(settings).filter((scenario) => glideRows.includes(scenario.name))

const runs = [
  { label: "", settings, scenarios },
  {
    label: ", Effect and node-redlock workers",
    settings: { ...settings, frontEnds: "mixed" as const },
    scenarios: mixed
  },
  { label: ", GLIDE nodes", settings: { ...settings, client: "glide" as const }, scenarios: overGlide }
]

// Durable scenarios run on their own servers (AOF, appendfsync always).
for (const { label, scenarios, settings } of runs) {
  for (const durable of [false, true]) {
    const group = scenarios.filter((scenario) => (scenario.durable === true) === durable)
    if (group.length === 0) continue
    const name = `fault suite (short)${durable ? ", durable servers" : ""}${label}`
    layer(Suite.fleetFor(group[0]), { timeout: 60_000, excludeTestServices: true })(name, (it) => {
      for (const scenario of group) {
        it.effect(
          `${scenario.name}: ${scenario.expect === "safe" ? "no violation" : "the hazard shows"}`,
          () =>
            Effect.gen(function*() {
              const fleet = yield* RedisFleet.RedisFleet
              const report = yield* Suite.runScenario(fleet, scenario, settings)
              const summary = Suite.table([report]) + "\n" + report.problems.join("\n")
              assert.strictEqual(report.unhandled, 0, summary)
              assert.strictEqual(report.leakedKeys, 0, summary)
              assert.isAbove(report.acquisitions, 0, summary)
              if (scenario.expect === "safe") {
                assert.strictEqual(report.violations, 0, summary)
                assert.strictEqual(report.tokenRegressions, 0, summary)
              } else {
                assert.isTrue(Suite.hazardShown(report), summary)
              }
              if (scenario.name === "holder paused past its ttl") {
                assert.isAtLeast(
                  report.staleWritesRejected,
                  1,
                  `the paused holder's late write was refused\n${summary}`
                )
                assert.isAtLeast(report.expiredOverlaps, 1, `others held the lock while it was paused\n${summary}`)
              }
            }),
          90_000
        )
      }
    })
  }
}

describe("fault checker", () => {
  const section = (worker: number, token: bigint, start: number, end: number, validUntil: number): Checker.Section => ({
    worker,
    token,
    start,
    end,
    validUntil
  })
  it("tells violations from overlaps after expiry, counts token regressions and the longest gap", () => {
    const verdict = Checker.check(
      [
        section(0, 1n, 0, 10, 100),
        section(1, 2n, 5, 20, 100), // enters while 0 is in its section and valid: a violation
        section(2, 4n, 30, 200, 50), // held past its validity...
        section(3, 3n, 60, 70, 160) // ...so this overlap is expected, but its token went back
      ],
      [[0, 150], [180, 300]],
      [0, 300]
    )
    assert.strictEqual(verdict.acquisitions, 4)
    assert.deepStrictEqual(verdict.violations.map((o) => [o.first.worker, o.second.worker]), [[0, 1]])
    assert.deepStrictEqual(verdict.expiredOverlaps.map((o) => [o.first.worker, o.second.worker]), [[2, 3]])
    assert.strictEqual(verdict.tokenRegressions, 1)
    // Nobody holds from 200 to 300, a majority is up from 180: 100 ms; the gap 20-30 is 10 ms.
    assert.strictEqual(verdict.longestGapMillis, 100)
  })

  it("for a semaphore, counts holders beyond the limit, and tokens per slot", () => {
    const slotted = (worker: number, slot: string, token: bigint, start: number, end: number, validUntil: number) => ({
      ...section(worker, token, start, end, validUntil),
      slot
    })
    const verdict = Checker.check(
      [
        slotted(0, "a", 1n, 0, 100, 1000),
        slotted(1, "b", 1n, 10, 100, 1000), // two at once: within a limit of 2
        slotted(2, "a", 2n, 20, 30, 1000), // a third while both are valid: a violation
        slotted(3, "b", 2n, 200, 300, 210), // alone
        slotted(4, "a", 3n, 220, 280, 1000), // with 3, valid: within the limit
        slotted(5, "b", 1n, 250, 260, 1000) // with 3 (past its validity) and 4: an overlap after expiry; b's token went back
      ],
      [[0, 300]],
      [0, 300],
      { limit: 2 }
    )
    assert.deepStrictEqual(verdict.violations.map((o) => [o.first.worker, o.second.worker]), [[1, 2]])
    assert.deepStrictEqual(verdict.expiredOverlaps.map((o) => [o.first.worker, o.second.worker]), [[4, 5]])
    assert.strictEqual(verdict.tokenRegressions, 1)
  })

  it("for a read-write lock, a writer must be alone and readers at most maxReaders", () => {
    const held = (worker: number, write: boolean, start: number, end: number, validUntil: number) => ({
      ...section(worker, BigInt(worker + 1), start, end, validUntil),
      slot: String(worker),
      write
    })
    const verdict = Checker.check(
      [
        held(0, false, 0, 100, 1000),
        held(1, false, 10, 100, 1000), // two readers: allowed
        held(2, true, 20, 30, 1000), // a writer with readers: a violation
        held(3, true, 200, 300, 210),
        held(4, false, 250, 260, 1000), // a reader with a writer past its validity: an overlap after expiry
        held(5, false, 400, 500, 1000),
        held(6, false, 410, 500, 1000),
        held(7, false, 420, 430, 1000) // a third reader of 2: a violation
      ],
      [[0, 500]],
      [0, 500],
      { maxReaders: 2 }
    )
    assert.deepStrictEqual(verdict.violations.map((o) => o.second.worker), [2, 7])
    assert.deepStrictEqual(verdict.expiredOverlaps.map((o) => o.second.worker), [4])
  })
})
