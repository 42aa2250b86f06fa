/**
 * Deterministic simulation: random schedules of contending clients and node
 * faults (down, slow, failing, restarted empty or durable) on in-memory nodes, run on
 * virtual time. `npm run simulate` runs thousands; this runs a few hundred.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, FastCheck as fc, Fiber } from "effect"
import * as Contention from "../../../faults/contention.js"
import * as Simulation from "../../../faults/simulation.js"

describe("virtual time", () => {
  it("runs sleeps in time order without waiting for them, and reports the virtual time taken", () => {
    const order: Array<string> = []
    const started = performance.now()
    const { elapsedMillis, exit } = Simulation.run(Effect.gen(function*() {
      const late = yield* Effect.fork(Effect.zipRight(Effect.sleep("1 hour"), Effect.sync(() => order.push("hour"))))
      const soon = yield* Effect.fork(
        Effect.zipRight(Effect.sleep("1 second"), Effect.sync(() => order.push("second")))
      )
      const timedOut = yield* Effect.sleep("1 day").pipe(Effect.timeout("10 millis"), Effect.exit)
      yield* Fiber.join(soon)
      yield* Fiber.join(late)
      return timedOut
    }))
    assert.isBelow(performance.now() - started, 1000)
    assert.strictEqual(elapsedMillis, Duration.toMillis("1 hour"))
    assert.deepStrictEqual(order, ["second", "hour"])
    assert.isTrue(Exit.isSuccess(exit) && Exit.isFailure(exit.value), "the timeout fired at 10 virtual ms")
  })

  it("reports a program that waits for something that can never happen", () => {
    assert.throws(() => Simulation.run(Effect.never), /stuck at 0 virtual ms/)
  })

  it("replays a schedule exactly", () => {
    const [plan] = fc.sample(Contention.schedule(), { seed: 42, numRuns: 1 })
    const first = Contention.check(plan)
    assert.deepStrictEqual(Contention.check(plan), first)
  })
})

// Schedules run synchronously on virtual time: asyncProperty lets the event loop turn between them.
describe("random contention with node faults", () => {
  it(
    "no two holders inside their validity, tokens increase (empty and durable restarts included), no key left",
    async () => {
      // On failure fast-check prints the seed and path; replay with `npm run simulate -- --seed S --path P`.
      await fc.assert(Contention.asyncProperty({}, "lock"), { numRuns: 150 })
    },
    120_000
  )

  it(
    "semaphores of 1 to 3 permits: never more holders inside their validity than permits, tokens increase per slot",
    async () => {
      await fc.assert(Contention.asyncProperty({}, "semaphore"), { numRuns: 150 })
    },
    120_000
  )

  it(
    "read-write locks of 1 to 3 readers: a writer is alone inside its validity, readers at most maxReaders",
    async () => {
      await fc.assert(Contention.asyncProperty({}, "readWrite"), { numRuns: 150 })
    },
    120_000
  )

  it("with the restart quarantine off, the same checker finds two holders at once", async () => {
    const result = await fc.check(Contention.asyncProperty({ restartQuarantine: false }, "lock"), {
      numRuns: 300,
      seed: 2,
      endOnFailure: true
    })
    assert.isTrue(result.failed, "a restart that loses keys gives a second client the lock")
    assert.match(String(result.errorInstance), /got the lock at .* while client \d+ \(from .*\) held/)
  }, 120_000)
})
