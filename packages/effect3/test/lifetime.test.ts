/**
 * Lock lifetime on in-memory nodes with the TestClock: the shared suite, and
 * what only Effect 3 has (a `FiberRef`).
 */
import { lifetimeSuite } from "@effect-redlock/effect-suites/lifetime.js"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, FiberRef, TestClock } from "effect"
import * as Redlock from "../src/Redlock.js"
import { memory } from "@effect-redlock/effect-suites/support.js"

lifetimeSuite()

describe("the body of withLock on the caller's fiber (Effect 3)", () => {
  it.effect("what the body sets in a FiberRef stays set after it", () =>
    Effect.gen(function*() {
      const mark = FiberRef.unsafeMake("before")
      const seen = yield* Effect.fork(Effect.zipRight(
        FiberRef.set(mark, "in the body").pipe(Redlock.withLock("r", { ttl: "1 second" })),
        FiberRef.get(mark)
      ))
      yield* Effect.forEach(Array.from({ length: 10 }), () => TestClock.adjust("1 millis"), { discard: true })
      assert.strictEqual(yield* Fiber.join(seen), "in the body")
    }).pipe(Effect.scoped, Effect.provide(memory(3))))
})
