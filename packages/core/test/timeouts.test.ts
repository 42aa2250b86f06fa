/**
 * The fan-outs' shared timeouts (src/engine/timeouts.ts), on real time: one
 * timer per duration, each timeout coming once its own duration has passed.
 */
import { assert, describe, it } from "vitest"
import * as Timeouts from "../src/engine/timeouts.js"

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

describe("shared timeouts", () => {
  it("each comes once its own duration has passed, not much later, in order; a cancelled one never comes", async () => {
    const came: Array<[string, number]> = []
    const started = new Map<string, number>()
    const startOne = (name: string) => {
      started.set(name, performance.now())
      return Timeouts.start(400, () => came.push([name, performance.now()]))
    }
    startOne("a")
    const cancelled = startOne("b")
    await sleep(100)
    // Due 100 ms after the timer set for "a": the timer is set again for it, for what is left (a timer set
    // again for a whole duration would call it 300 ms late).
    startOne("c")
    Timeouts.cancel(cancelled)
    Timeouts.cancel(cancelled)
    await sleep(700)
    assert.deepStrictEqual(came.map(([name]) => name), ["a", "c"])
    for (const [name, at] of came) {
      // Node's timers may fire up to a millisecond before performance.now() says the time is up.
      assert.isAtLeast(at - started.get(name)!, 399, `${name} came too early`)
      assert.isBelow(at - started.get(name)!, 550, `${name} came much too late`)
    }
  })

  it("timeouts of other durations have their own timers", async () => {
    const came: Array<string> = []
    Timeouts.start(80, () => came.push("long"))
    Timeouts.start(20, () => came.push("short"))
    await sleep(50)
    assert.deepStrictEqual(came, ["short"])
    await sleep(60)
    assert.deepStrictEqual(came, ["short", "long"])
  })

  it("one that comes may cancel and start others of its duration", async () => {
    const came: Array<string> = []
    Timeouts.start(20, () => {
      came.push("first")
      Timeouts.cancel(second)
      Timeouts.start(20, () => came.push("third"))
    })
    await sleep(5)
    const second = Timeouts.start(20, () => came.push("second"))
    await sleep(80)
    assert.deepStrictEqual(came, ["first", "third"])
  })
})
