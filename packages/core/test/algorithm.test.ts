/**
 * Properties of the quorum and validity arithmetic, of option validation
 * (engine/options.ts, which every front end checks its options with), and
 * of lock values.
 */
import { assert, describe, it } from "vitest"
import fc from "fast-check"
import * as Algorithm from "../src/engine/algorithm.js"
import * as LiveTime from "../src/engine/liveTime.js"
import * as LockValue from "../src/engine/lockValue.js"
import * as Options from "../src/engine/options.js"
import { readMillis } from "../src/manager/durations.js"
import { InvalidOptions, makeNodeError } from "../src/manager/errors.js"
import { MemoryFleet } from "../src/nodes/memory.js"
import { makeRedlock } from "../src/Promise.js"

const nodes = fc.integer({ min: 1, max: 1_000 })

describe("quorum", () => {
  it("is the smallest strict majority, so any two quorums share a node", () => {
    fc.assert(fc.property(nodes, (n) => {
      const q = Algorithm.quorum(n)
      assert.isTrue(2 * q > n, "two quorums overlap")
      assert.isTrue(2 * (q - 1) <= n, "one node fewer is not a majority")
      assert.isTrue(q <= n)
    }))
  })

  it("an attempt is won exactly when a quorum said yes, lost exactly when a quorum is out of reach", () => {
    const answers = nodes.chain((n) =>
      fc.tuple(fc.constant(n), fc.integer({ min: 0, max: n }), fc.integer({ min: 0, max: n }))
    )
    fc.assert(fc.property(answers, ([n, a, b]) => {
      const yes = Math.min(a, n)
      const no = Math.min(b, n - yes)
      const result = Algorithm.tally(n, yes, no)
      const q = Algorithm.quorum(n)
      assert.strictEqual(result === "won", yes >= q)
      assert.strictEqual(result === "lost", yes < q && yes + (n - yes - no) < q)
      if (yes + no === n) assert.notStrictEqual(result, "open", "all answered: decided")
    }))
  })
})

describe("validity", () => {
  const ttl = fc.integer({ min: 1, max: Options.longestTtlMillis })
  const factor = fc.double({ min: 0, max: 0.999, noNaN: true })

  it("validity = ttl - elapsed - (ceil(ttl * driftFactor) + 2)", () => {
    fc.assert(fc.property(ttl, fc.nat(100_000), factor, (t, e, f) => {
      assert.strictEqual(Algorithm.validity(t, e, f), t - e - Math.ceil(t * f) - 2)
      assert.isAtLeast(Algorithm.drift(t, f), 2)
    }))
  })

  it("validity falls as an attempt takes longer, and is never above ttl - 2 ms", () => {
    fc.assert(fc.property(ttl, fc.nat(1_000), fc.nat(1_000), factor, (t, e1, e2, f) => {
      const [short, long] = e1 <= e2 ? [e1, e2] : [e2, e1]
      assert.isAtLeast(Algorithm.validity(t, short, f), Algorithm.validity(t, long, f))
      assert.isAtMost(Algorithm.validity(t, short, f), t - 2)
    }))
  })

  it("the default per-node timeout is 1% of the ttl within [10 ms, 250 ms], and below the ttl", () => {
    fc.assert(fc.property(ttl, (t) => {
      const timeout = Algorithm.defaultNodeTimeoutMillis(t)
      assert.isTrue(timeout >= 1 && timeout <= 250)
      if (t >= 2) assert.isBelow(timeout, t)
      if (t >= 20) assert.isAtLeast(timeout, 10)
      if (t >= 1_000 && t <= 25_000) assert.strictEqual(timeout, Math.floor(t / 100))
    }))
  })
})

describe("option validation", () => {
  it("a ttl is accepted exactly when it is finite, at least 1 ms, at most maxTtl and above the drift allowance", () => {
    const ttls = fc.oneof(fc.double(), fc.integer({ min: -10, max: 100 }), fc.constantFrom(Infinity, -Infinity, NaN))
    fc.assert(fc.property(ttls, fc.integer({ min: 1, max: Options.longestTtlMillis }), (ttl, maxTtl) => {
      const result = Options.timing(ttl, undefined, 0.01, maxTtl, readMillis)
      const ms = Math.ceil(ttl)
      const valid = Number.isFinite(ttl) && ms >= 1 && ms <= maxTtl && ms > Algorithm.drift(ms, 0.01)
      assert.strictEqual(!(result instanceof Options.Problem), valid, `ttl ${ttl}`)
      if (result instanceof Options.Problem) assert.strictEqual(result.option, "ttl")
      else assert.isBelow(result.nodeTimeoutMillis, result.ttlMillis)
    }))
  })

  it("the drift factor is accepted exactly in [0, 1)", () => {
    fc.assert(fc.property(fc.oneof(fc.double(), fc.constantFrom(0, 1, -0, 0.999)), (f) => {
      assert.strictEqual(!(Options.driftFactor(f) instanceof Options.Problem), Number.isFinite(f) && f >= 0 && f < 1)
    }))
  })

  it("resource lists are accepted exactly when non-empty, short enough, of distinct non-empty strings", () => {
    fc.assert(fc.property(fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.integer()), { maxLength: 8 }), (list) => {
      const valid = list.length > 0 && list.every((r) => typeof r === "string" && r.length > 0) &&
        new Set(list).size === list.length
      assert.strictEqual(!(Options.resources(list) instanceof Options.Problem), valid, JSON.stringify(list))
    }))
  })

  it("acquire with any invalid ttl rejects with InvalidOptions before any node is asked", async () => {
    const fleet = new MemoryFleet(3, LiveTime.make(0), makeNodeError)
    const redlock = await makeRedlock(fleet.nodes.map((node) => node.toNode()), { restartQuarantine: false })
    try {
      const invalid = fc.oneof(fc.double({ max: 0 }), fc.constantFrom(NaN, Infinity, "", "later", null, {}, [1]))
      await fc.assert(
        fc.asyncProperty(invalid, async (ttl) => {
          const error = await redlock.acquire("r", { ttl: ttl as number }).then(
            () => undefined,
            (error: unknown) => error
          )
          assert.instanceOf(error, InvalidOptions)
          assert.strictEqual(fleet.operations(0), 0)
        }),
        { numRuns: 50 }
      )
    } finally {
      await redlock.close()
    }
  })
})

describe("lock values", () => {
  it("are 168 bits (28 base64url characters), and never repeat across refills of the pool", () => {
    const values = Array.from({ length: 10_000 }, LockValue.make)
    assert.isTrue(values.every((value) => /^[A-Za-z0-9_-]{28}$/.test(value)))
    assert.strictEqual(new Set(values).size, values.length)
  })
})
