/**
 * The watchers of a server's release announcements (src/nodes/watchers.ts):
 * a release of this process is told from its answer and from the channel,
 * in either order, and each announcement reaches a watcher once, also a
 * watcher that began between the two. Plain calls on one timeline, so each
 * order is exact.
 */
import { assert, describe, it } from "vitest"
import { copyWaitMillis, Watchers } from "../src/nodes/watchers.js"

/** A watch of `key` on `watchers` from `now`, and what it heard. */
const watching = (watchers: Watchers, key: string, now: number) => {
  const heard: Array<string | null> = []
  const watch = watchers.watch(key, (next) => void heard.push(next), now)
  return { heard, stop: watch.stop }
}

describe("release announcements told from two sources", () => {
  it("an announcement is told once, whichever source comes first", () => {
    const watchers = new Watchers()
    const { heard } = watching(watchers, "k", 0)
    watchers.notify("k", "w1", 1, "answer", true)
    watchers.notify("k", "w1", 2, "channel", false)
    watchers.notify("k", "w2", 3, "channel", true)
    watchers.notify("k", "w2", 4, "answer", true)
    assert.deepStrictEqual(heard, ["w1", "w2"])
  })

  it("an answer told while nobody watched keeps its copy from a watcher that began before the copy came", () => {
    const watchers = new Watchers()
    // A release frees the key (""), answered while nobody watches; then a waiter starts watching.
    watchers.notify("k", "", 0, "answer", true)
    const late = watching(watchers, "k", 100)
    watchers.notify("k", "", 101, "channel", false)
    assert.deepStrictEqual(late.heard, [], "the copy of a release before the watch is not told to it")
    // A later release of another process with the same text is told.
    watchers.notify("k", "", 102, "channel", false)
    assert.deepStrictEqual(late.heard, [""])
  })

  it("without a copy to wait for, the same text again is a new announcement; a copy is awaited for copyWaitMillis at most", () => {
    const watchers = new Watchers()
    const { heard } = watching(watchers, "k", 0)
    // The channel was not subscribed when the release ran: no copy comes.
    watchers.notify("k", "w1", 1, "answer", false)
    watchers.notify("k", "w1", 2, "channel", false)
    // A copy awaited past its wait is told again: then it is taken for a new release.
    watchers.notify("k", "w2", 10, "answer", true)
    watchers.notify("k", "w2", 11 + copyWaitMillis, "channel", false)
    assert.deepStrictEqual(heard, ["w1", "w1", "w2", "w2"])
  })

  it("a dropped channel's copies are not awaited any more", () => {
    const watchers = new Watchers()
    const { heard } = watching(watchers, "k", 0)
    watchers.notify("k", "w1", 1, "answer", true)
    watchers.forgetCopies("k")
    watchers.notify("k", "w1", 2, "channel", false)
    assert.deepStrictEqual(heard, ["w1", "w1"])
  })
})

describe("the watches of a key", () => {
  it("each watch is told once, two of one callback stay two; stopping one leaves the others", () => {
    const watchers = new Watchers()
    const heard: Array<string | null> = []
    const onRelease = (next: string | null) => void heard.push(next)
    const first = watchers.watch("k", onRelease, 0)
    const second = watchers.watch("k", onRelease, 0)
    const third = watching(watchers, "k", 0)
    watchers.notify("k", "a", 100)
    assert.deepStrictEqual(heard, ["a", "a"])
    first.stop()
    first.stop()
    watchers.notify("k", "b", 200)
    assert.deepStrictEqual(heard, ["a", "a", "b"])
    assert.deepStrictEqual(third.heard, ["a", "b"])
    assert.strictEqual(watchers.size, 2)
    second.stop()
    third.stop()
    assert.strictEqual(watchers.size, 0)
    assert.isFalse(watchers.has("k"))
  })

  it("a telling goes on past watches stopped meanwhile and reaches the ones begun meanwhile", () => {
    const watchers = new Watchers()
    const heard: Array<string> = []
    const watches: Array<{ stop: () => void }> = []
    // The first stops itself and the second as it is told; the third starts a fourth.
    watches.push(watchers.watch("k", (next) => {
      heard.push(`1:${next}`)
      watches[0].stop()
      watches[1].stop()
    }, 0))
    watches.push(watchers.watch("k", (next) => void heard.push(`2:${next}`), 0))
    watches.push(watchers.watch("k", (next) => {
      heard.push(`3:${next}`)
      if (watches.length === 3) watches.push(watchers.watch("k", (later) => void heard.push(`4:${later}`), 1_000))
    }, 0))
    watchers.notify("k", "x", 100)
    assert.deepStrictEqual(heard, ["1:x", "3:x", "4:x"])
    watchers.notify("k", "y", 2_000)
    assert.deepStrictEqual(heard, ["1:x", "3:x", "4:x", "3:y", "4:y"])
  })
})
