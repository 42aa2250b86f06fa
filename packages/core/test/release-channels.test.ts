/**
 * The release channels of one server (src/nodes/releaseChannels.ts) over a
 * driver of the test's own, whose messages the test sends: which releases of
 * this process wait for their channel copy. A copy can only come for a key
 * that is watched or whose channel is subscribed; for any other key, a later
 * message of the same text is another process's release and is told.
 */
import { assert, describe, it } from "vitest"
import * as ReleaseChannels from "../src/nodes/releaseChannels.js"
import { releaseChannelPrefix } from "../src/nodes/scripts.js"

/** The channels of a server whose subscriber connection the test plays: `deliver` is a message on a channel. */
const channelsOverTestDriver = (
  countsSubscribers = true,
  driver: { readonly keyPrefix?: string; readonly openThrows?: boolean } = {}
) => {
  let events: ReleaseChannels.SubscriberEvents | undefined
  const subscribed: Array<string> = []
  const use = ReleaseChannels.share(
    {
      open: (given) => {
        if (driver.openThrows === true) throw new TypeError("client.duplicate is not a function")
        events = given
        return {
          isReady: () => true,
          subscribe: (channel) => Promise.resolve(void subscribed.push(channel)),
          unsubscribe: () => Promise.resolve(),
          close: () => {}
        }
      },
      isRefusal: () => false,
      countsSubscribers,
      keyPrefix: driver.keyPrefix ?? ""
    },
    undefined,
    () => false
  )
  return {
    channels: use.channels,
    subscribed,
    /** A message on a channel, named by the key as the server names it. */
    deliver: (key: string, text: string) => events!.message(releaseChannelPrefix + key, text),
    leave: use.leave
  }
}

/** A watch of `key`, subscribed, and what it heard. */
const watching = async (channels: ReleaseChannels.ReleaseChannels, key: string) => {
  const heard: Array<string | null> = []
  const watch = channels.watch(key, (next) => void heard.push(next))
  if (watch.ready !== undefined) await watch.ready
  return { heard, stop: watch.stop }
}

describe("release channels: which announcements wait for their copy", () => {
  it("a release of a key nobody watched or subscribed awaits no copy: the same text from the channel later is told", async () => {
    const { channels, deliver, leave } = channelsOverTestDriver()
    // This process frees "k" while nobody listens to it: no copy can come.
    channels.announced("k", "", true)
    const { heard, stop } = await watching(channels, "k")
    // Another process frees it again: its message is a release of its own, not a copy.
    deliver("k", "")
    assert.deepStrictEqual(heard, [""])
    stop()
    leave()
  })

  it("a release of a key whose channel lingers awaits its copy: a watch begun before the copy does not hear it", async () => {
    const { channels, deliver, leave } = channelsOverTestDriver()
    const first = await watching(channels, "k")
    first.stop()
    // Nobody watches; the channel lingers (a second): the release's copy is on its way.
    channels.announced("k", "", true)
    const second = await watching(channels, "k")
    deliver("k", "")
    assert.deepStrictEqual(second.heard, [], "the copy of a release before the watch")
    deliver("k", "")
    assert.deepStrictEqual(second.heard, [""], "a release after it")
    second.stop()
    leave()
  })

  it("a release that was not published (nobody else listened) awaits no copy: the same text from the channel later is told", async () => {
    const { channels, deliver, leave } = channelsOverTestDriver()
    const { heard, stop } = await watching(channels, "k")
    channels.announced("k", "", false)
    assert.deepStrictEqual(heard, [""], "told from the answer")
    // Another process frees it again: a release of its own, not the copy of ours (which was never sent).
    deliver("k", "")
    assert.deepStrictEqual(heard, ["", ""])
    stop()
    leave()
  })
})

describe("release channels: the subscribers a release counts as this process's own", () => {
  it("one once the channel of every key's line is subscribed, none before; none to count where the server cannot", async () => {
    const { channels, leave } = channelsOverTestDriver()
    const slot = "r\u0000p0"
    assert.strictEqual(channels.ownSubscribers(["a"]), 0, "not subscribed yet")
    const a = await watching(channels, "a")
    assert.strictEqual(channels.ownSubscribers(["a"]), 1)
    assert.strictEqual(channels.ownSubscribers(["a", "b"]), 0, "one key's channel not subscribed")
    const slots = await watching(channels, "r\u0000p")
    assert.strictEqual(
      channels.ownSubscribers([slot, "r\u0000p1"]),
      1,
      "a slot key's channel is its resource's slots' line"
    )
    a.stop()
    slots.stop()
    leave()
    const cluster = channelsOverTestDriver(false)
    await watching(cluster.channels, "a")
    assert.strictEqual(cluster.channels.ownSubscribers(["a"]), undefined)
    cluster.leave()
  })
})

describe("release channels: what a driver is", () => {
  it("a client with a key prefix: channels are the prefixed keys', and what they and release answers name is told by the key", async () => {
    const { channels, deliver, leave, subscribed } = channelsOverTestDriver(true, { keyPrefix: "app:" })
    const { heard, stop } = await watching(channels, "redlock:k")
    assert.deepStrictEqual(subscribed, [releaseChannelPrefix + "app:redlock:k"])
    deliver("app:redlock:k", "next")
    channels.announced("app:redlock:k", "after", false)
    assert.deepStrictEqual(heard, ["next", "after"])
    stop()
    leave()
  })

  it("a driver that throws making its subscriber: the watch goes on without it (nothing to wait for, not heard), releases told from answers", async () => {
    const { channels, leave } = channelsOverTestDriver(true, { openThrows: true })
    const heard: Array<string | null> = []
    const watch = channels.watch("k", (next) => void heard.push(next))
    assert.isUndefined(watch.ready)
    assert.isFalse(channels.hears())
    channels.announced("k", "", false)
    assert.deepStrictEqual(heard, [""])
    watch.stop()
    leave()
  })
})
