/**
 * Properties of the quorum and validity arithmetic and of option validation.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Exit, FastCheck as fc } from "effect"
import * as Algorithm from "@effect-redlock/core/engine/algorithm.js"
import * as LockValue from "@effect-redlock/core/engine/lockValue.js"
import * as Validate from "../src/internal/validate.js"
import * as Redlock from "../src/Redlock.js"
import * as RedisNode from "../src/RedisNode.js"
import { InvalidOptions } from "../src/RedlockError.js"
import { memory } from "@effect-redlock/effect-suites/support.js"

const nodes = fc.integer({ min: 1, max: 1_000 })

describe("quorum", () => {
  it.prop("is the smallest strict majority, so any two quorums share a node", [nodes], ([n]) => {
    const q = Algorithm.quorum(n)
    assert.isTrue(2 * q > n, "two quorums overlap")
    assert.isTrue(2 * (q - 1) <= n, "one node fewer is not a majority")
    assert.isTrue(q <= n)
  })

  it.prop(
    "an attempt is won exactly when a quorum said yes, lost exactly when a quorum is out of reach",
    [nodes.chain((n) => fc.tuple(fc.constant(n), fc.integer({ min: 0, max: n }), fc.integer({ min: 0, max: n })))],
    ([[n, a, b]]) => {
      const yes = Math.min(a, n)
      const no = Math.min(b, n - yes)
      const result = Algorithm.tally(n, yes, no)
      const q = Algorithm.quorum(n)
      assert.strictEqual(result === "won", yes >= q)
      assert.strictEqual(result === "lost", yes < q && yes + (n - yes - no) < q)
      if (yes + no === n) assert.notStrictEqual(result, "open", "all answered: decided")
    }
  )
})

describe("validity", () => {
  const ttl = fc.integer({ min: 1, max: Validate.longestTtlMillis })
  const factor = fc.double({ min: 0, max: 0.999, noNaN: true })

  it.prop("validity = ttl - elapsed - (ceil(ttl * driftFactor) + 2)", [ttl, fc.nat(100_000), factor], ([t, e, f]) => {
    assert.strictEqual(Algorithm.validity(t, e, f), t - e - Math.ceil(t * f) - 2)
    assert.isAtLeast(Algorithm.drift(t, f), 2)
  })

  it.prop("validity falls as an attempt takes longer, and is never above ttl - 2 ms", [ttl, fc.nat(1_000), fc.nat(1_000), factor], ([t, e1, e2, f]) => {
    const [short, long] = e1 <= e2 ? [e1, e2] : [e2, e1]
    assert.isAtLeast(Algorithm.validity(t, short, f), Algorithm.validity(t, long, f))
    assert.isAtMost(Algorithm.validity(t, short, f), t - 2)
  })

  it.prop("the default per-node timeout is 1% of the ttl within [10 ms, 250 ms], and below the ttl", [ttl], ([t]) => {
    const timeout = Algorithm.defaultNodeTimeoutMillis(t)
    assert.isTrue(timeout >= 1 && timeout <= 250)
    if (t >= 2) assert.isBelow(timeout, t)
    if (t >= 20) assert.isAtLeast(timeout, 10)
    if (t >= 1_000 && t <= 25_000) assert.strictEqual(timeout, Math.floor(t / 100))
  })
})

describe("option validation", () => {
  it.prop(
    "a ttl is accepted exactly when it is finite, at least 1 ms, at most maxTtl and above the drift allowance",
    [
      fc.oneof(fc.double(), fc.integer({ min: -10, max: 100 }), fc.constantFrom(Infinity, -Infinity, NaN)),
      fc.integer({ min: 1, max: Validate.longestTtlMillis })
    ],
    ([ttl, maxTtl]) => {
      const result = Validate.timing(ttl, undefined, 0.01, maxTtl)
      const ms = Math.ceil(ttl)
      const valid = Number.isFinite(ttl) && ms >= 1 && ms <= maxTtl && ms > Algorithm.drift(ms, 0.01)
      assert.strictEqual(Either.isRight(result), valid, `ttl ${ttl}`)
      if (Either.isLeft(result)) {
        assert.instanceOf(result.left, InvalidOptions)
        assert.strictEqual(result.left.option, "ttl")
      } else {
        assert.isBelow(result.right.nodeTimeoutMillis, result.right.ttlMillis)
      }
    }
  )

  it.prop("the drift factor is accepted exactly in [0, 1)", [fc.oneof(fc.double(), fc.constantFrom(0, 1, -0, 0.999))], ([f]) => {
    assert.strictEqual(Either.isRight(Validate.driftFactor(f)), Number.isFinite(f) && f >= 0 && f < 1)
  })

  it.prop(
    "resource lists are accepted exactly when non-empty, short enough, of distinct non-empty strings",
    [fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.integer()), { maxLength: 8 })],
    ([list]) => {
      const valid = list.length > 0 && list.every((r) => typeof r === "string" && r.length > 0) &&
        new Set(list).size === list.length
      assert.strictEqual(Either.isRight(Validate.resources(list)), valid, JSON.stringify(list))
    }
  )

  it.effect.prop(
    "acquire with any invalid ttl fails with InvalidOptions before any node is asked",
    [fc.oneof(fc.double({ max: 0 }), fc.constantFrom(NaN, Infinity, "", "later", null, {}, [1]))],
    ([ttl]) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(Effect.scoped(Redlock.acquire("r", { ttl: ttl as number })))
        assert.isTrue(Exit.isFailure(exit))
        const control = yield* RedisNode.MemoryNodes
        assert.strictEqual(yield* control.operations(0), 0)
      }).pipe(Effect.provide(memory(3))),
    { fastCheck: { numRuns: 50 } }
  )
})

describe("lock values", () => {
  it.effect("are 168 bits (28 base64url characters), and never repeat across refills of the pool", () =>
    Effect.gen(function*() {
      const values = yield* Effect.replicateEffect(Effect.sync(LockValue.make), 10_000)
      assert.isTrue(values.every((value) => /^[A-Za-z0-9_-]{28}$/.test(value)))
      assert.strictEqual(new Set(values).size, values.length)
    }))
})
