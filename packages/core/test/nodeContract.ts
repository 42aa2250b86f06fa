/**
 * One contract for every node of the engine: the in-memory node and a real
 * redis-server through each driver (ours and users' clients, a cluster, a
 * Sentinel's master) must answer every operation alike. Run once, here in
 * core (contract.test.ts), whichever front end the node then serves.
 */
import * as assert from "node:assert/strict"
import type { KeyReading, Node, Turn, TurnAnswer } from "../src/engine/node.js"
import { RedisNodeError } from "../src/manager/errors.js"

export interface Harness {
  readonly node: Node
  /** A key of another type (a list) holding data. */
  readonly putForeign: (key: string) => Promise<void>
  /** Whether a list key still holds its data. */
  readonly foreignIntact: (key: string) => Promise<boolean>
  /** Every key on the node (lines of waiters show as lock key + NUL + "queue"). */
  readonly keys: () => Promise<ReadonlyArray<string>>
  /** The name the node's messages give `key` (a cluster node's keys carry a hash tag); default: `key`. */
  readonly storedKey?: (key: string) => string
  /** The node and whatever the harness opened for it closed. */
  readonly close: () => Promise<void>
}

/** The test functions of the runner (vitest's). */
export interface Tester {
  readonly it: (name: string, body: () => Promise<void>) => void
}

const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

/** Until `done()`, polling every `everyMillis`, at most `times` polls. */
const until = async (done: () => boolean, everyMillis = 5, times = 200) => {
  for (let i = 0; i < times && !done(); i++) await sleep(everyMillis)
}

const ttlOf = (reading: KeyReading): number => {
  assert.notEqual(reading.ttlMillis, undefined, `a ttl where ${JSON.stringify(reading)} has none`)
  return reading.ttlMillis!
}

/**
 * Tickets `offset` ms into a second that began half a second ago: tickets are
 * wall-clock times, and a node takes a newcomer's ticket as it is only within
 * a second before its own time.
 */
const ticketsFromNow = () => {
  const base = Date.now() - 500
  return (offset: number) => base + offset
}

/** The node's error an operation rejected with. */
const nodeErrorOf = (operation: Promise<unknown>): Promise<RedisNodeError> =>
  operation.then(
    () => assert.fail("resolved where the node's error was expected"),
    (error: unknown) => {
      assert.ok(error instanceof RedisNodeError, `a RedisNodeError, not ${String(error)}`)
      return error
    }
  )

export const contract = (tester: Tester, open: () => Promise<Harness>): void => {
  const test = (name: string, body: (h: Harness) => Promise<void>) =>
    tester.it(name, async () => {
      const harness = await open()
      try {
        await body(harness)
      } finally {
        await harness.close()
      }
    })
  const tag = (answer: TurnAnswer) => answer._tag

  test("acquire sets a free key with its ttl; a held key is refused and kept", async ({ node: { promises: node } }) => {
    assert.equal(await node.acquire(["k"], "v1", 10_000), true)
    const state = await node.inspect("k")
    assert.equal(state.value, "v1")
    const ttl = ttlOf(state)
    assert.ok(ttl > 9_000 && ttl <= 10_000, `ttl ${ttl}`)
    assert.equal(await node.acquire(["k"], "v2", 10_000), false)
    assert.equal((await node.inspect("k")).value, "v1")
  })

  test("several keys are set all or none", async ({ node: { promises: node } }) => {
    assert.equal(await node.acquire(["b"], "other", 10_000), true)
    assert.equal(await node.acquire(["a", "b", "c"], "v", 10_000), false)
    assert.equal((await node.inspect("a")).value, undefined)
    assert.equal((await node.inspect("c")).value, undefined)
    assert.equal(await node.acquire(["x", "y", "z"], "v", 10_000), true)
    for (const key of ["x", "y", "z"]) {
      const state = await node.inspect(key)
      assert.equal(state.value, "v")
      assert.ok(ttlOf(state) > 9_000)
    }
  })

  test("release deletes only keys that hold our value", async ({ node: { promises: node } }) => {
    assert.equal(await node.acquire(["a", "b"], "mine", 10_000), true)
    assert.equal(await node.acquire(["c"], "theirs", 10_000), true)
    assert.equal(await node.release(["a", "b", "c"], "not-mine", true), 0)
    assert.equal(await node.release(["a", "b", "c"], "mine", true), 2)
    assert.equal((await node.inspect("a")).value, undefined)
    assert.equal((await node.inspect("c")).value, "theirs")
    assert.equal(await node.release(["a"], "mine", true), 0)
  })

  test("a release announces each deleted key to its watchers, only when asked to", async ({ node: whole }) => {
    const node = whole.promises
    const heard: Array<string> = []
    const watches = [
      whole.watchReleasesNow!("w1", () => void heard.push("w1")),
      whole.watchReleasesNow!("w2", () => void heard.push("w2"))
    ]
    // A subscription is set up asynchronously on a real server: wait until it is. (Not by a release
    // of ours: its answer is heard at once, and its channel copy could come after the count began.)
    for (const watch of watches) await watch.ready
    assert.equal(await node.acquire(["w1", "w2"], "mine", 10_000), true)
    assert.equal(await node.release(["w1", "w2"], "mine", false), 2, "a failed attempt's clean-up")
    assert.equal(await node.acquire(["w1", "w2"], "mine", 10_000), true)
    assert.equal(await node.release(["w1", "w2"], "mine", true), 2, "a held lock's release")
    await until(() => heard.length >= 2, 10, 100)
    assert.deepEqual([...heard].sort(), ["w1", "w2"])
    watches.forEach((watch) => watch.stop())
    // Once the watches stopped nobody listens: later releases are not heard.
    assert.equal(await node.acquire(["w1"], "again", 10_000), true)
    await node.release(["w1"], "again", true)
    await sleep(50)
    assert.deepEqual([...heard].sort(), ["w1", "w2"])
  })

  test("watches of one key are independent: a second one is ready at once, stopping one leaves the other", async ({ node: whole }) => {
    const node = whole.promises
    const heard: Array<string | null> = []
    const onRelease = (next: string | null) => void heard.push(next)
    const first = whole.watchReleasesNow!("w", onRelease)
    await first.ready
    // The same callback twice: still two watches.
    const second = whole.watchReleasesNow!("w", onRelease)
    assert.equal(second.ready, undefined, "the node listens to the key already")
    const releaseAndHear = async (count: number) => {
      assert.equal(await node.acquire(["w"], "v", 10_000), true)
      assert.equal(await node.release(["w"], "v", true), 1)
      await until(() => heard.length >= count)
      await sleep(20) // nothing more arrives
    }
    await releaseAndHear(2)
    assert.deepEqual(heard, ["", ""])
    first.stop()
    first.stop()
    await releaseAndHear(3)
    assert.deepEqual(heard, ["", "", ""], "the second watch still hears; stopping twice stopped nothing more")
    second.stop()
  })

  test("acquireInTurn: the first in line gets a free key; the others wait in ticket order, then value order", async (h) => {
    const node = h.node.promises
    const ticketAt = ticketsFromNow()
    const turn = (ticket: number, leaseMillis = 10_000): Turn => ({ ticket: ticketAt(ticket), leaseMillis })
    assert.equal(tag(await node.acquireInTurn(["q"], "holder", 10_000, turn(1, 0))), "Granted")
    const held = await node.acquireInTurn(["q"], "w2", 10_000, turn(20))
    assert.equal(held._tag, "Held")
    const ttl = (held as { ttlMillis: number }).ttlMillis
    assert.ok(ttl > 9_000 && ttl <= 10_000, `ttl ${ttl}`)
    await node.acquireInTurn(["q"], "w3", 10_000, turn(10))
    await node.acquireInTurn(["q"], "w1", 10_000, turn(20))
    const keys = async () => (await h.keys()).filter((key) => !key.endsWith("\u0000lease")).sort()
    assert.deepEqual(await keys(), ["q", "q\u0000queue"])
    // Line: w3 (ticket 10), w1, w2 (ticket 20, by value). Each release lets the next one in.
    const tickets: Record<string, number> = { w1: 20, w2: 20, w3: 10 }
    const waiting = ["w2", "w1", "w3"]
    for (const [releaser, next] of [["holder", "w3"], ["w3", "w1"], ["w1", "w2"]] as const) {
      assert.equal(await node.release(["q"], releaser, true), 1)
      const answers: Array<readonly [string, string]> = []
      for (const w of waiting) answers.push([w, tag(await node.acquireInTurn(["q"], w, 10_000, turn(tickets[w])))])
      const granted = answers.filter(([, answer]) => answer === "Granted").map(([w]) => w)
      assert.deepEqual(granted, [next], `after ${releaser}: ${JSON.stringify(answers)}`)
      waiting.splice(waiting.indexOf(next), 1)
    }
    assert.equal(await node.release(["q"], "w2", true), 1)
    assert.deepEqual(await h.keys(), [], "each release took its holder out of the line")
  })

  test("acquireInTurn refused with no lease leaves the place held: the release hands the key to the waiter behind", async (h) => {
    const node = h.node.promises
    const ticketAt = ticketsFromNow()
    const turn = (ticket: number, leaseMillis: number): Turn => ({ ticket: ticketAt(ticket), leaseMillis })
    assert.equal(tag(await node.acquireInTurn(["q"], "holder", 10_000, turn(1, 0))), "Granted")
    await node.acquireInTurn(["q"], "deaf", 10_000, turn(10, 10_000))
    await node.acquireInTurn(["q"], "w2", 10_000, turn(20, 10_000))
    // The first waiter can no longer hear releases: it asks again, taking no place.
    assert.equal(tag(await node.acquireInTurn(["q"], "deaf", 10_000, turn(10, 0))), "Held")
    assert.equal(await node.release(["q"], "holder", true), 1)
    assert.equal((await node.inspect("q")).value, "w2", "handed past the waiter that left")
    assert.equal(tag(await node.acquireInTurn(["q"], "deaf", 10_000, turn(10, 0))), "Held")
    assert.equal(tag(await node.acquireInTurn(["q"], "w2", 10_000, turn(20, 10_000))), "Granted")
    assert.equal(await node.release(["q"], "w2", true), 1)
    assert.deepEqual(await h.keys(), [], "nobody is left in line")
  })

  test("a key handed to the first waiter is its, even when a waiter with an earlier ticket joined the line since", async (h) => {
    const node = h.node.promises
    const ticketAt = ticketsFromNow()
    const turn = (ticket: number, leaseMillis: number): Turn => ({ ticket: ticketAt(ticket), leaseMillis })
    assert.equal(tag(await node.acquireInTurn(["q"], "holder", 10_000, turn(1, 0))), "Granted")
    await node.acquireInTurn(["q"], "w2", 10_000, turn(20, 10_000))
    assert.equal(await node.release(["q"], "holder", true), 1)
    assert.equal((await node.inspect("q")).value, "w2", "handed to the first in line")
    // w1 started earlier, but joins only now: it stands first, and finds the key held by w2's handover.
    assert.equal(tag(await node.acquireInTurn(["q"], "w1", 10_000, turn(10, 10_000))), "Held")
    assert.equal(tag(await node.acquireInTurn(["q"], "w2", 10_000, turn(20, 10_000))), "Granted")
    assert.equal(await node.release(["q"], "w2", true), 1)
    assert.equal((await node.inspect("q")).value, "w1", "then handed to w1")
    assert.equal(tag(await node.acquireInTurn(["q"], "w1", 10_000, turn(10, 10_000))), "Granted")
    assert.equal(await node.release(["q"], "w1", true), 1)
    assert.deepEqual(await h.keys(), [])
  })

  test("a place in line ends with its lease; releases and a first waiter leaving announce who is next", async (h) => {
    const node = h.node.promises
    const heard: Array<string | null> = []
    const watch = h.node.watchReleasesNow!("q", (next) => void heard.push(next))
    const ticketAt = ticketsFromNow()
    const turn = (ticket: number, leaseMillis: number): Turn => ({ ticket: ticketAt(ticket), leaseMillis })
    assert.equal(tag(await node.acquireInTurn(["q"], "holder", 10_000, turn(1, 0))), "Granted")
    await node.acquireInTurn(["q"], "w1", 10_000, turn(10, 50))
    await node.acquireInTurn(["q"], "w2", 10_000, turn(20, 10_000))
    await node.acquireInTurn(["q"], "w3", 10_000, turn(30, 10_000))
    await sleep(100) // w1's lease ended: w2 is first
    await watch.ready
    assert.equal(await node.release(["q"], "holder", true), 1)
    await until(() => heard.length >= 1)
    // The release handed the key to w2 (first in line): leaving, w2 passes it on to w3.
    assert.equal((await node.inspect("q")).value, "w2", "handed to the first in line")
    assert.equal(await node.release(["q"], "w2", false), 1, "w2 leaves, first in line, holding the handed key")
    await until(() => heard.length >= 2)
    assert.equal((await node.inspect("q")).value, "w3", "passed on to the next")
    assert.equal(await node.release(["q"], "w3", false), 1, "w3 leaves: nobody is left")
    await until(() => heard.length >= 3)
    assert.deepEqual(heard, ["w2", "w3", ""])
    assert.deepEqual(await h.keys(), [])
    watch.stop()
  })

  test("a release hands the key to the first in line, for the rest of its lease: newcomers find it held, the waiter finds it ours", async (h) => {
    const node = h.node.promises
    const ticketAt = ticketsFromNow()
    assert.equal(
      tag(await node.acquireInTurn(["q"], "holder", 10_000, { ticket: ticketAt(1), leaseMillis: 0 })),
      "Granted"
    )
    assert.equal(
      tag(await node.acquireInTurn(["q"], "w1", 10_000, { ticket: ticketAt(10), leaseMillis: 2_000 })),
      "Held"
    )
    assert.equal(await node.release(["q"], "holder", true), 1)
    const handed = await node.inspect("q")
    assert.equal(handed.value, "w1")
    const ttl = ttlOf(handed)
    assert.ok(ttl > 1_500 && ttl <= 2_000, `the rest of w1's lease, not a lock's ttl: ${ttl}`)
    assert.equal(await node.acquire(["q"], "newcomer", 10_000), false, "a newcomer's plain acquire is refused")
    const granted = await node.acquireInTurn(["q"], "w1", 10_000, { ticket: ticketAt(10), leaseMillis: 2_000 })
    assert.equal(granted._tag, "Granted")
    assert.ok(ttlOf(await node.inspect("q")) > 9_000, "set again with the lock's ttl")
    assert.equal(await node.release(["q"], "w1", true), 1)
    assert.deepEqual(await h.keys(), [], "nobody in line: the release frees the key")
  })

  test("a refused attempt's undo (keepPlace) deletes only the key: the waiter stays first in line, nothing is announced", async (h) => {
    const node = h.node.promises
    const heard: Array<string | null> = []
    const watch = h.node.watchReleasesNow!("q", (next) => void heard.push(next))
    await watch.ready
    const ticketAt = ticketsFromNow()
    const turn = (ticket: number): Turn => ({ ticket: ticketAt(ticket), leaseMillis: 10_000 })
    assert.equal(tag(await node.acquireInTurn(["q"], "holder", 10_000, turn(1))), "Granted")
    assert.equal(tag(await node.acquireInTurn(["q"], "w1", 10_000, turn(10))), "Held")
    assert.equal(tag(await node.acquireInTurn(["q"], "w2", 10_000, turn(20))), "Held")
    // The holder's attempt was refused elsewhere: it undoes its key here, and w1 is still first.
    assert.equal(await node.release(["q"], "holder", false, true), 1)
    // w1 undoes an attempt that took nothing: it keeps its place, nobody is told.
    assert.equal(await node.release(["q"], "w1", false, true), 0)
    await sleep(50)
    assert.deepEqual(heard, [])
    assert.equal(tag(await node.acquireInTurn(["q"], "w2", 10_000, turn(20))), "NotYourTurn")
    assert.equal(tag(await node.acquireInTurn(["q"], "w1", 10_000, turn(10))), "Granted")
    await node.release(["q"], "w1", true)
    await node.release(["q"], "w2", false)
    assert.deepEqual(await h.keys(), [])
    watch.stop()
  })

  test("a grant keeps the place in line: after a split vote's undo the waiter is still first", async (h) => {
    const node = h.node.promises
    const ticketAt = ticketsFromNow()
    const turn = (ticket: number): Turn => ({ ticket: ticketAt(ticket), leaseMillis: 10_000 })
    assert.equal(tag(await node.acquireInTurn(["q"], "holder", 10_000, turn(1))), "Granted")
    assert.equal(tag(await node.acquireInTurn(["q"], "w1", 10_000, turn(10))), "Held")
    assert.equal(tag(await node.acquireInTurn(["q"], "w2", 10_000, turn(20))), "Held")
    assert.equal(await node.release(["q"], "holder", true), 1)
    // w1 is granted here, but too few nodes agreed: it undoes the key and keeps its place.
    assert.equal(tag(await node.acquireInTurn(["q"], "w1", 10_000, turn(10))), "Granted")
    assert.equal(await node.release(["q"], "w1", false, true), 1)
    assert.equal(tag(await node.acquireInTurn(["q"], "w2", 10_000, turn(20))), "NotYourTurn")
    assert.equal(tag(await node.acquireInTurn(["q"], "w1", 10_000, turn(10))), "Granted")
    await node.release(["q"], "w1", true)
    await node.release(["q"], "w2", false)
    assert.deepEqual(await h.keys(), [])
  })

  test("with its ticket's age, a waiter is seated by its ticket at every attempt: a place retaken behind others moves back (lines converge)", async (h) => {
    const node = h.node.promises
    // Both waiters' clocks agree with the node's: w1 began 300 ms before w2, who joins now.
    const now = Date.now()
    const w1 = { ticket: now - 300, leaseMillis: 10_000 }
    const w1Aged = () => ({ ...w1, ageMillis: Date.now() - w1.ticket })
    const w2 = { ticket: now, leaseMillis: 10_000, ageMillis: 0 }
    assert.equal(tag(await node.acquireInTurn(["q"], "holder", 10_000, { ticket: now, leaseMillis: 0 })), "Granted")
    assert.equal(tag(await node.acquireInTurn(["q"], "w2", 10_000, w2)), "Held")
    await sleep(1_100)
    // w1's place here ran out, and it rejoins as an older client does, bounded by the node's time less
    // a second: behind w2, although it is ahead of w2 on the nodes where it kept its place.
    assert.equal(tag(await node.acquireInTurn(["q"], "w1", 10_000, w1)), "Held")
    // Its next attempt, with its ticket's age, seats it by its ticket again: ahead of w2, as on every other node.
    assert.equal(tag(await node.acquireInTurn(["q"], "w1", 10_000, w1Aged())), "Held")
    assert.equal(await node.release(["q"], "holder", true), 1)
    assert.equal((await node.inspect("q")).value, "w1", "the key is handed to w1, first in line")
    assert.equal(tag(await node.acquireInTurn(["q"], "w2", 10_000, w2)), "Held")
    assert.equal(tag(await node.acquireInTurn(["q"], "w1", 10_000, w1Aged())), "Granted")
    await node.release(["q"], "w1", true)
    await node.release(["q"], "w2", false)
    assert.deepEqual(await h.keys(), [])
  })

  test("with its ticket's age, a client whose clock is a minute behind is seated a second before it began, not a minute", async (h) => {
    const node = h.node.promises
    const began = Date.now()
    assert.equal(tag(await node.acquireInTurn(["q"], "holder", 10_000, { ticket: began, leaseMillis: 0 })), "Granted")
    const honest = (): Turn => ({ ticket: began - 900, leaseMillis: 10_000, ageMillis: Date.now() - began + 900 })
    assert.equal(tag(await node.acquireInTurn(["q"], "honest", 10_000, honest())), "Held")
    await sleep(200)
    const behindBegan = Date.now()
    const behind = (): Turn => ({
      ticket: behindBegan - 60_000,
      leaseMillis: 10_000,
      ageMillis: Date.now() - behindBegan
    })
    // Seated at behindBegan − 1 s: after the honest waiter, who began 1.1 s before it.
    assert.equal(tag(await node.acquireInTurn(["q"], "behind", 10_000, behind())), "Held")
    assert.equal(await node.release(["q"], "holder", true), 1)
    assert.equal(tag(await node.acquireInTurn(["q"], "behind", 10_000, behind())), "Held")
    assert.equal(tag(await node.acquireInTurn(["q"], "honest", 10_000, honest())), "Granted")
    await node.release(["q"], "honest", true)
    await node.release(["q"], "behind", false)
    assert.deepEqual(await h.keys(), [])
  })

  test("a slot's setting is recorded by a grant, refused when another is recorded, kept as long as a slot is held, and goes with the last", async (h) => {
    const node = h.node.promises
    const slot = (index: number) => `jobs\u0000permit${index}`
    const record = "jobs\u0000permit\u0000setting"
    const turn = (setting: string): Turn => ({ ticket: Date.now(), leaseMillis: 0, ageMillis: 0, setting })
    assert.equal(tag(await node.acquireInTurn([slot(0)], "a", 1_000, turn("2"))), "Granted")
    assert.deepEqual(await node.acquireInTurn([slot(1)], "b", 1_000, turn("3")), {
      _tag: "SettingConflict",
      recorded: "2"
    })
    assert.equal((await node.inspect(slot(1))).value, undefined, "a conflict writes nothing")
    assert.equal((await node.inspect(record)).value, "2")
    // An extension makes the record last as long as the slot.
    assert.equal(await node.extend([slot(0)], "a", 30_000), true)
    assert.ok(ttlOf(await node.inspect(record)) > 20_000)
    assert.equal(tag(await node.acquireInTurn([slot(1)], "c", 1_000, turn("2"))), "Granted")
    assert.equal(await node.release([slot(0)], "a", true), 1)
    assert.equal((await node.inspect(record)).value, "2", "slot 1 is still held")
    assert.equal(await node.release([slot(1)], "c", true), 1)
    assert.deepEqual(await h.keys(), [], "the last release took the record")
    // The resource is idle: another setting is recorded now.
    assert.equal(tag(await node.acquireInTurn([slot(2)], "d", 1_000, turn("3"))), "Granted")
    assert.equal((await node.inspect(record)).value, "3")
    await node.release([slot(2)], "d", true)
    assert.deepEqual(await h.keys(), [])
  })

  test("a slot's release hands it to the first waiter whose value carries a ttl and the recorded setting: set for that ttl, out of the line, announced as value/slot", async (h) => {
    const node = h.node.promises
    const slots = [0, 1].map((index) => `jobs\u0000permit${index}`)
    const record = "jobs\u0000permit\u0000setting"
    const heard: Array<string | null> = []
    const watch = h.node.watchReleasesNow!("jobs\u0000permit", (next) => void heard.push(next))
    const ticketAt = ticketsFromNow()
    const turn = (ticket: number): Turn => ({ ticket: ticketAt(ticket), leaseMillis: 10_000, setting: "2" })
    assert.deepEqual(await node.acquireSlot(slots, "a", 1_000, turn(1)), { _tag: "Granted", slot: 0 })
    assert.deepEqual(await node.acquireSlot(slots, "b", 1_000, turn(2)), { _tag: "Granted", slot: 1 })
    // Waiters in line: a tagged one (ttl 5000 ms, setting 2), one of an older client (untagged), a tagged one.
    for (const [value, ticket] of [["w1.5000.2", 10], ["old", 20], ["w3.5000.2", 30]] as const) {
      assert.equal(tag(await node.acquireSlot(slots, value, 5_000, turn(ticket))), "Held")
    }
    await watch.ready // a cluster's or a sentinel's subscriber connects first
    assert.equal(await node.release([slots[0]], "a", true), 1)
    await until(() => heard.length >= 1)
    const handed = await node.inspect(slots[0])
    assert.equal(handed.value, "w1.5000.2", "slot 0 handed to w1")
    const ttl = ttlOf(handed)
    assert.ok(ttl > 4_000 && ttl <= 5_000, `w1's own ttl: ${ttl}`)
    assert.ok(ttlOf(await node.inspect(record)) > 4_000, "the setting record outlives the handed slot")
    // Only named: the older client's waiter, first now, gets no slot handed (it takes the free one itself).
    assert.equal(await node.release([slots[1]], "b", true), 1)
    await until(() => heard.length >= 2)
    assert.equal((await node.inspect(slots[1])).value, undefined, "slot 1 is free")
    assert.equal(
      tag(await node.acquireSlot(slots, "w3.5000.2", 5_000, turn(30))),
      "NotYourTurn",
      "the named waiter is first"
    )
    assert.deepEqual(await node.acquireSlot(slots, "old", 5_000, turn(20)), { _tag: "Granted", slot: 1 })
    // w1 holds slot 0 already (it left the line): its round finds it, a newcomer does not.
    assert.deepEqual(await node.acquireSlot(slots, "w1.5000.2", 5_000, turn(10)), { _tag: "Granted", slot: 0 })
    assert.equal(await node.release([slots[0]], "w1.5000.2", true), 1)
    await until(() => heard.length >= 3)
    assert.deepEqual(heard, ["w1.5000.2/0", "old", "w3.5000.2/0"])
    assert.equal((await node.inspect(slots[0])).value, "w3.5000.2")
    // A release deletes every slot holding its value, whichever key it names.
    assert.equal(await node.release([slots[1]], "w3.5000.2", true), 1)
    await node.release([slots[1]], "old", true)
    assert.deepEqual(await h.keys(), [])
    watch.stop()
  })

  test("a newcomer's ticket is bounded by the node's time: a client whose clock is behind does not jump the line", async (h) => {
    const node = h.node.promises
    const turn = (ticket: number): Turn => ({ ticket, leaseMillis: 10_000 })
    assert.equal(tag(await node.acquireInTurn(["q"], "holder", 10_000, turn(Date.now()))), "Granted")
    const honest = turn(Date.now() - 900)
    assert.equal(tag(await node.acquireInTurn(["q"], "honest", 10_000, honest)), "Held")
    await sleep(200)
    // A minute behind: taken as the node's time less one second, after the honest waiter who came 200 ms before.
    assert.equal(tag(await node.acquireInTurn(["q"], "behind", 10_000, turn(Date.now() - 60_000))), "Held")
    assert.equal(await node.release(["q"], "holder", true), 1)
    // The key is handed to the honest waiter, first in line: held, for the one behind.
    assert.equal(tag(await node.acquireInTurn(["q"], "behind", 10_000, turn(Date.now() - 60_000))), "Held")
    assert.equal(tag(await node.acquireInTurn(["q"], "honest", 10_000, honest)), "Granted")
    await node.release(["q"], "honest", true)
    await node.release(["q"], "behind", false)
    assert.deepEqual(await h.keys(), [])
  })

  test("a key holding our own value (an earlier attempt's late answer) is ours: acquired again with the new ttl", async ({ node: { promises: node } }) => {
    assert.equal(await node.acquire(["k"], "v", 1_000), true)
    assert.equal(await node.acquire(["k"], "v", 10_000), true, "acquire")
    assert.ok(ttlOf(await node.inspect("k")) > 9_000)
    assert.equal(await node.acquire(["j", "k"], "v", 20_000), true, "several keys")
    assert.ok(ttlOf(await node.inspect("k")) > 19_000)
    const again = await node.acquireInTurn(["k"], "v", 30_000, { ticket: Date.now(), leaseMillis: 1_000 })
    assert.equal(again._tag, "Granted", "acquireInTurn")
    assert.ok(ttlOf(await node.inspect("k")) > 29_000)
    assert.equal(await node.acquire(["k"], "other", 1_000), false)
    const other = await node.acquireInTurn(["k"], "other", 1_000, { ticket: Date.now(), leaseMillis: 0 })
    assert.equal(other._tag, "Held")
    assert.equal((await node.inspect("k")).value, "v")
  })

  test("durations in fractional milliseconds are taken whole (rounded up), never refused", async (h) => {
    const node = h.node.promises
    assert.equal(await node.acquire(["k"], "v", 1_000.4), true)
    assert.equal(await node.extend(["k"], "v", 5_000.5), true)
    const ttl = ttlOf(await node.inspect("k"))
    assert.ok(ttl > 4_000 && ttl <= 5_001, `ttl ${ttl}`)
    const turn = { ticket: Date.now(), leaseMillis: 312.7 }
    assert.equal(tag(await node.acquireInTurn(["k"], "w", 1_000.2, turn)), "Held")
    await node.release(["k"], "v", true)
    assert.equal(tag(await node.acquireInTurn(["k"], "w", 1_000.2, turn)), "Granted")
    await node.release(["k"], "w", true)
    assert.deepEqual(await h.keys(), [])
  })

  test("extend sets a new ttl on all keys only if all are ours", async ({ node: { promises: node } }) => {
    assert.equal(await node.acquire(["a", "b"], "mine", 1_000), true)
    assert.equal(await node.extend(["a", "b"], "mine", 60_000), true)
    for (const key of ["a", "b"]) assert.ok(ttlOf(await node.inspect(key)) > 50_000)
    assert.equal(await node.extend(["a", "b"], "not-mine", 120_000), false)
    assert.equal(await node.extend(["a", "b", "missing"], "mine", 120_000), false)
    for (const key of ["a", "b"]) assert.ok(ttlOf(await node.inspect(key)) <= 60_000)
  })

  test("keys expire after their ttl and can be acquired again", async ({ node: { promises: node } }) => {
    assert.equal(await node.acquire(["k"], "v1", 30), true)
    await sleep(80)
    const state = await node.inspect("k")
    assert.equal(state.value, undefined)
    assert.equal(state.ttlMillis, undefined)
    assert.equal(await node.extend(["k"], "v1", 1_000), false)
    assert.equal(await node.acquire(["k"], "v2", 1_000), true)
  })

  test("fence counters: advanced (to at least the time in µs) and raised only while our keys are held", async ({ node: { promises: node } }) => {
    assert.equal(await node.incrementFences(["k"], "v", ["fence:k"]), undefined, "not ours: nothing counted")
    assert.equal(await node.commitFences(["k"], "v", ["fence:k"], [5n]), false)
    assert.equal((await node.inspect("fence:k")).value, undefined)
    assert.equal(await node.acquire(["k", "j"], "v", 10_000), true)
    // A new counter starts from the node's time in microseconds (the servers run on this machine's clock).
    const micros = () => BigInt(Date.now()) * 1000n
    const before = micros()
    const first = await node.incrementFences(["k", "j"], "v", ["fence:k", "fence:j"])
    const after = micros()
    assert.notEqual(first, undefined)
    for (const count of first!) {
      assert.ok(count >= before - 1000n && count <= after + 1000n, `${count} is the time in µs (${before}..${after})`)
    }
    const [second] = (await node.incrementFences(["k"], "v", ["fence:k"]))!
    assert.ok(second > first![0], "each advance is strictly larger")
    const high = after + 10_000_000n
    assert.equal(await node.commitFences(["k", "j"], "v", ["fence:k", "fence:j"], [high, 1n]), true)
    assert.equal(await node.commitFences(["k"], "v", ["fence:k"], [7n]), true, "a smaller token never lowers it")
    assert.equal((await node.inspect("fence:k")).value, high.toString())
    assert.deepEqual(await node.incrementFences(["k"], "v", ["fence:k"]), [high + 1n], "ahead of the time: + 1")
    assert.equal((await node.inspect("fence:k")).ttlMillis, undefined, "counters never expire")
    assert.equal(await node.commitFences(["k"], "v", ["fence:k"], [123456789012345678901234567890n]), true)
    assert.equal(await node.incrementFences(["k"], "w", ["fence:k"]), undefined)
    assert.equal((await node.inspect("fence:k")).value, "123456789012345678901234567890")
  })

  test("fence counters past 10^14 and 2^53 come back exact", async ({ node: { promises: node } }) => {
    assert.equal(await node.acquire(["k", "j"], "v", 10_000), true)
    const fences = ["fence:k", "fence:j"]
    assert.equal(
      await node.commitFences(["k", "j"], "v", fences, [999_999_999_999_999_999n, 9_007_199_254_740_993n]),
      true
    )
    assert.deepEqual(await node.incrementFences(["k", "j"], "v", fences), [
      1_000_000_000_000_000_000n,
      9_007_199_254_740_994n
    ])
  })

  test("a key of another type: acquire fails with WrongType naming the type, writes nothing; release leaves it; extend and inspect fail with WrongType", async (h) => {
    const node = h.node.promises
    await h.putForeign("list")
    const acquires: ReadonlyArray<() => Promise<unknown>> = [
      () => node.acquire(["list"], "v", 1_000),
      () => node.acquire(["free", "list"], "v", 1_000),
      () => node.acquireInTurn(["free", "list"], "v", 1_000, { ticket: 1, leaseMillis: 5_000 }),
      () => node.acquireSlot(["free", "list"], "v", 1_000, { ticket: 1, leaseMillis: 5_000 })
    ]
    for (const acquire of acquires) {
      const error = await nodeErrorOf(acquire())
      assert.equal(error.reason, "WrongType")
      assert.ok(error.detail.includes(`lock key ${h.storedKey?.("list") ?? "list"} holds a list`), error.detail)
    }
    assert.equal((await node.inspect("free")).value, undefined, "nothing written, all or none")
    // Nor did the waiter join the free key's line: another value is granted at once.
    assert.deepEqual(await node.acquireInTurn(["free"], "w", 1_000, { ticket: 2, leaseMillis: 0 }), { _tag: "Granted" })
    assert.equal(await node.release(["list"], "v", true), 0)
    for (const operation of [node.extend(["list"], "v", 1_000), node.inspect("list")]) {
      const error = await nodeErrorOf(operation)
      assert.equal(error.reason, "WrongType")
      assert.equal(error.node, h.node.name)
    }
    assert.equal(await h.foreignIntact("list"), true)
  })
}
