/**
 * A slot handed over by releases (scripts.ts, releaseSlots) is held on the
 * nodes' word, with no attempt (src/engine/attempt.ts, grantHanded): the
 * rules that keep that safe, on the production engine over in-memory nodes.
 */
import { assert, describe, it } from "vitest"
import * as Attempt from "../src/engine/attempt.js"
import type * as FanOut from "../src/engine/fanOut.js"
import * as LiveTime from "../src/engine/liveTime.js"
import type { Node, Turn } from "../src/engine/node.js"
import * as Slots from "../src/engine/slots.js"
import { makeNodeError, nodeError } from "../src/manager/errors.js"
import { MemoryFleet } from "../src/nodes/memory.js"

const liveTime = LiveTime.make(0)

const slot = "jobs\u0000permit0"
const turn: Turn = { ticket: Date.now(), leaseMillis: 10_000, setting: "1" }

interface Grant {
  readonly validityMillis: number
  readonly slot: number | undefined
  readonly yes: number
}

/** The engine's attempts with the plainest shell: a grant and a refusal as they come. */
class Attempts extends Attempt.Attempts<Grant, Attempt.Refused> {
  protected readonly attempted = undefined
  protected granted(result: FanOut.FanOutResult, validityMillis: number, slot: number | undefined): Grant {
    return { validityMillis, slot, yes: result.yes }
  }
  protected refused(_: Attempt.RefusalFields, result: FanOut.FanOutResult): Attempt.Refused {
    return { granted: undefined, result }
  }
}

/** Three in-memory nodes; a holder of the one slot of "jobs" on each; a waiter for it. */
const setUp = async (ttlMillis: number, quarantineMillis?: number, countsHandOvers?: boolean) => {
  const fleet = new MemoryFleet(3, liveTime, makeNodeError)
  const nodes: ReadonlyArray<Node> = fleet.nodes.map((node) => ({ ...node.toNode(), countsHandOvers }))
  for (const node of nodes) {
    assert.strictEqual((await node.promises.acquireSlot([slot], "holder", 10_000, turn))._tag, "Granted")
  }
  const waiter = new Attempts({
    nodes,
    quorum: 2,
    driftFactor: 0.01,
    fairHandoff: true,
    quarantineMillis,
    announcesReleases: true,
    contendedKeys: { isContended: () => false, held: () => {} },
    nodeError
  }, {
    resources: ["jobs"],
    keys: [slot],
    value: "waiter",
    ttlMillis,
    nodeTimeoutMillis: 50,
    probe: false,
    setting: "1",
    slots: true
  }, liveTime)
  return { fleet, nodes, waiter }
}

const attempt = (waiter: Attempts) =>
  new Promise<Attempt.AttemptEnd<Grant, Attempt.Refused>>((done) => waiter.attempt(10_000, done))

describe("slots handed over: what an announcement says to a waiter", () => {
  it("a waiter is named, handed a slot (value/slot), or not named: another value that starts with its own is not its", () => {
    assert.strictEqual(Slots.heardBy("w.500.2", "w.500.2"), "named")
    assert.strictEqual(Slots.heardBy("x.500.2/1 w.500.2", "w.500.2"), "named")
    assert.strictEqual(Slots.heardBy("x.500.2/1 w.500.2/12", "w.500.2"), 12)
    assert.isUndefined(Slots.heardBy("w.500.23/1 w.500.2x", "w.500.2"))
    assert.isUndefined(Slots.heardBy("xw.500.2 yw.500.2/3", "w.500.2"))
    assert.strictEqual(Slots.heardBy("xw.500.2/1 w.500.2/3", "w.500.2"), 3)
    assert.isUndefined(Slots.heardBy("", "w.500.2"))
  })

  it("only a value with a ttl and a setting can be handed a slot; a writer's place never", () => {
    assert.deepStrictEqual(Slots.handoverTagOf("Ab-_9.10000.3"), { ttlMillis: 10_000, setting: "3" })
    assert.isUndefined(Slots.handoverTagOf("Ab-_9"))
    assert.isUndefined(Slots.handoverTagOf("Ab-_9.10000.3:w"))
  })
})

describe("slots handed over: held on a quorum of the nodes' word", () => {
  it("a waiter's value carries its ttl and setting, for the nodes to hand it a slot", async () => {
    const { waiter } = await setUp(2_500.5)
    assert.strictEqual(waiter.value, "waiter.2501.1")
  })

  it("a quorum of nodes that handed the same slot grants it, its validity counted from the acquisition's start", async () => {
    const { waiter } = await setUp(10_000)
    assert.isUndefined(waiter.grantHanded(new Map([[0, 0]])), "one node of three")
    assert.isUndefined(waiter.grantHanded(new Map([[0, 0], [1, 1]])), "two nodes, two slots")
    const grant = waiter.grantHanded(new Map([[0, 0], [2, 0]]))!
    assert.strictEqual(grant.slot, 0)
    assert.strictEqual(grant.yes, 2)
    assert.isTrue(grant.validityMillis > 9_800 && grant.validityMillis < 10_000, `${grant.validityMillis}`)
  })

  it("a hand-over does not count from a node an undo of ours went to: the undo may have deleted the slot after it", async () => {
    const { fleet, nodes, waiter } = await setUp(10_000)
    // The holder's key is gone on node 0 only: the waiter's round takes the slot there, is refused by
    // the two others, and undoes it on node 0.
    await nodes[0].promises.release([slot], "holder", false, true)
    const end = await attempt(waiter)
    assert.isUndefined(end.granted)
    assert.deepStrictEqual(fleet.keys(0).filter((key) => key === slot), [], "undone on node 0")
    assert.isFalse(waiter.countsHanded(0))
    assert.isUndefined(waiter.grantHanded(new Map([[0, 0], [1, 0]])), "node 0's word no longer counts")
    assert.strictEqual(waiter.grantHanded(new Map([[1, 0], [2, 0]]))?.slot, 0)
  })

  it("a hand-over does not count from a node that restarted since the acquisition began (restart quarantine)", async () => {
    const { fleet, waiter } = await setUp(10_000, 10_000)
    assert.isTrue(waiter.countsHanded(1))
    fleet.restart(1, liveTime.now())
    assert.isFalse(waiter.countsHanded(1))
    assert.isUndefined(waiter.grantHanded(new Map([[0, 0], [1, 0]])))
    assert.strictEqual(waiter.grantHanded(new Map([[0, 0], [2, 0]]))?.slot, 0)
  })

  it("a hand-over does not count from a node whose grants wait for its replicas: the waiter's own round takes the slot", async () => {
    const { nodes, waiter } = await setUp(10_000, undefined, false)
    assert.isFalse(waiter.countsHanded(0))
    // The waiter stands in line; the holder's release hands it the slot on every node.
    assert.isUndefined((await attempt(waiter)).granted)
    for (const node of nodes) await node.promises.release([slot], "holder", true)
    assert.isUndefined(waiter.grantHanded(new Map([[0, 0], [1, 0], [2, 0]])))
    const end = await attempt(waiter)
    assert.strictEqual(end.granted?.slot, 0)
    assert.strictEqual(end.granted?.yes, 3)
  })

  it("no grant once the waiter has waited longer than its ttl: a slot handed at the start would have run out", async () => {
    const { waiter } = await setUp(50)
    await new Promise((resolve) => setTimeout(resolve, 60))
    assert.isUndefined(waiter.grantHanded(new Map([[0, 0], [1, 0], [2, 0]])))
  })
})

describe("in-memory nodes: announcements that come after the answers (the simulation's lateAnnouncements)", () => {
  it("setAnnouncementDelay: a release is answered at once and announced that much later; heal ends it", async () => {
    const fleet = new MemoryFleet(1, liveTime, makeNodeError)
    const node = fleet.nodes[0].toNode()
    const heard: Array<string | null> = []
    const watch = node.watchReleasesNow!("k", (next) => void heard.push(next))
    assert.isTrue(await node.promises.acquire(["k"], "v", 10_000))
    fleet.setAnnouncementDelay(0, 30)
    assert.strictEqual(await node.promises.release(["k"], "v", true), 1)
    assert.deepStrictEqual(heard, [], "answered, not yet announced")
    await new Promise((resolve) => setTimeout(resolve, 50))
    assert.deepStrictEqual(heard, [""])
    fleet.heal(0)
    assert.isTrue(await node.promises.acquire(["k"], "v", 10_000))
    assert.strictEqual(await node.promises.release(["k"], "v", true), 1)
    assert.deepStrictEqual(heard, ["", ""], "announced with the answer again")
    watch.stop()
  })
})
