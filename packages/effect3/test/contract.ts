/**
 * One contract for every RedisNode implementation: the in-memory node and a
 * real redis-server through each driver must answer every operation alike.
 * Each driver's test file runs it (contract.test.ts: in-memory and ioredis;
 * node-redis.test.ts: node-redis).
 */
import { assert } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Option } from "effect"
import type * as Scope from "effect/Scope"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as RedisNode from "../src/RedisNode.js"
import { effectsOf } from "./support.js"

export interface Harness {
  /** The node under test, its operations as effects (support.ts `effectsOf`). */
  readonly node: RedisNode.EffectNode
  /** A key of another type (a list) holding data. */
  readonly putForeign: (key: string) => Effect.Effect<void, unknown>
  /** Whether a list key still holds its data. */
  readonly foreignIntact: (key: string) => Effect.Effect<boolean, unknown>
  /** Every key on the node (lines of waiters show as lock key + NUL + "queue"). */
  readonly keys: Effect.Effect<ReadonlyArray<string>, unknown>
  /** The name the node's messages give `key` (a cluster node's keys carry a hash tag); default: `key`. */
  readonly storedKey?: (key: string) => string
}

/** The harness over a node of one redis-server of the fleet, made by `makeNode` (each driver's). */
export const redisHarness = <E>(
  makeNode: (options: RedisFleet.Fleet["nodes"][number]) => Effect.Effect<RedisNode.RedisNode, E, Scope.Scope>
): Effect.Effect<Harness, unknown, Scope.Scope | RedisFleet.RedisFleet> =>
  Effect.gen(function*() {
    const fleet = yield* RedisFleet.RedisFleet
    yield* fleet.reset
    const server = fleet.servers[0]
    const node = yield* makeNode(fleet.nodes[0])
    return {
      node: effectsOf(node),
      putForeign: (key) => Effect.asVoid(server.call("RPUSH", key, "important", "data")),
      foreignIntact: (key) =>
        Effect.map(server.call("LRANGE", key, 0, -1), (items) => JSON.stringify(items) === "[\"important\",\"data\"]"),
      keys: Effect.map(server.call("KEYS", "*"), (keys) => keys as ReadonlyArray<string>)
    }
  })

const ttlOf = (state: RedisNode.KeyState) => Option.map(state.ttl, Duration.toMillis)

/**
 * Tickets `offset` ms into a second that began half a second ago: tickets are
 * wall-clock times, and a node takes a newcomer's ticket as it is only within
 * a second before its own time.
 */
const ticketsFromNow = () => {
  const base = Date.now() - 500
  return (offset: number) => base + offset
}

export type Tester<R> = (name: string, self: () => Effect.Effect<void, unknown, R>) => void

export const contract = <R>(tester: Tester<R>, harness: Effect.Effect<Harness, unknown, Scope.Scope | R>) => {
  const test = (name: string, body: (h: Harness) => Effect.Effect<void, unknown>) =>
    tester(name, () => Effect.scoped(Effect.flatMap(harness, body)))

  test("acquire sets a free key with its ttl; a held key is refused and kept", ({ node }) =>
    Effect.gen(function*() {
      assert.isTrue(yield* node.acquire(["k"], "v1", 10_000))
      const state = yield* node.inspect("k")
      assert.deepStrictEqual(state.value, Option.some("v1"))
      const ttl = Option.getOrThrow(ttlOf(state))
      assert.isTrue(ttl > 9_000 && ttl <= 10_000, `ttl ${ttl}`)
      assert.isFalse(yield* node.acquire(["k"], "v2", 10_000))
      assert.deepStrictEqual((yield* node.inspect("k")).value, Option.some("v1"))
    }))

  test("several keys are set all or none", ({ node }) =>
    Effect.gen(function*() {
      assert.isTrue(yield* node.acquire(["b"], "other", 10_000))
      assert.isFalse(yield* node.acquire(["a", "b", "c"], "v", 10_000))
      assert.isTrue(Option.isNone((yield* node.inspect("a")).value))
      assert.isTrue(Option.isNone((yield* node.inspect("c")).value))
      assert.isTrue(yield* node.acquire(["x", "y", "z"], "v", 10_000))
      for (const key of ["x", "y", "z"]) {
        const state = yield* node.inspect(key)
        assert.deepStrictEqual(state.value, Option.some("v"))
        assert.isTrue(Option.getOrThrow(ttlOf(state)) > 9_000)
      }
    }))

  test("release deletes only keys that hold our value", ({ node }) =>
    Effect.gen(function*() {
      assert.isTrue(yield* node.acquire(["a", "b"], "mine", 10_000))
      assert.isTrue(yield* node.acquire(["c"], "theirs", 10_000))
      assert.strictEqual(yield* node.release(["a", "b", "c"], "not-mine", true), 0)
      assert.strictEqual(yield* node.release(["a", "b", "c"], "mine", true), 2)
      assert.isTrue(Option.isNone((yield* node.inspect("a")).value))
      assert.deepStrictEqual((yield* node.inspect("c")).value, Option.some("theirs"))
      assert.strictEqual(yield* node.release(["a"], "mine", true), 0)
    }))

  test("a release announces each deleted key to its watchers, only when asked to", ({ node }) =>
    Effect.gen(function*() {
      const heard: Array<string> = []
      const watches = [
        yield* node.watchReleases!("w1", () => void heard.push("w1")),
        yield* node.watchReleases!("w2", () => void heard.push("w2"))
      ]
      yield* Effect.gen(function*() {
        // A subscription is set up asynchronously on a real server: wait until it is. (Not by a release
        // of ours: its answer is heard at once, and its channel copy could come after the count began.)
        for (const watch of watches) if (watch.ready !== undefined) yield* Effect.promise(() => watch.ready!)
        assert.isTrue(yield* node.acquire(["w1", "w2"], "mine", 10_000))
        assert.strictEqual(yield* node.release(["w1", "w2"], "mine", false), 2, "a failed attempt's clean-up")
        assert.isTrue(yield* node.acquire(["w1", "w2"], "mine", 10_000))
        assert.strictEqual(yield* node.release(["w1", "w2"], "mine", true), 2, "a held lock's release")
        yield* Effect.repeat(Effect.sleep("10 millis"), { until: () => heard.length >= 2, times: 100 })
        assert.deepStrictEqual([...heard].sort(), ["w1", "w2"])
      })
      watches.forEach((watch) => watch.stop())
      // Once the watches stopped nobody listens: later releases are not heard.
      assert.isTrue(yield* node.acquire(["w1"], "again", 10_000))
      yield* node.release(["w1"], "again", true)
      yield* Effect.sleep("50 millis")
      assert.deepStrictEqual([...heard].sort(), ["w1", "w2"])
    }))

  test("watches of one key are independent: a second one is ready at once, stopping one leaves the other", ({ node }) =>
    Effect.gen(function*() {
      const heard: Array<string | null> = []
      const onRelease = (next: string | null) => void heard.push(next)
      const first = yield* node.watchReleases!("w", onRelease)
      if (first.ready !== undefined) yield* Effect.promise(() => first.ready!)
      // The same callback twice: still two watches.
      const second = yield* node.watchReleases!("w", onRelease)
      assert.isUndefined(second.ready, "the node listens to the key already")
      const releaseAndHear = (count: number) =>
        Effect.gen(function*() {
          assert.isTrue(yield* node.acquire(["w"], "v", 10_000))
          assert.strictEqual(yield* node.release(["w"], "v", true), 1)
          yield* Effect.repeat(Effect.sleep("5 millis"), { until: () => heard.length >= count, times: 200 })
          yield* Effect.sleep("20 millis") // nothing more arrives
        })
      yield* releaseAndHear(2)
      assert.deepStrictEqual(heard, ["", ""])
      first.stop()
      first.stop()
      yield* releaseAndHear(3)
      assert.deepStrictEqual(heard, ["", "", ""], "the second watch still hears; stopping twice stopped nothing more")
      second.stop()
    }))

  test("acquireInTurn: the first in line gets a free key; the others wait in ticket order, then value order", (h) =>
    Effect.gen(function*() {
      const { node } = h
      const ticketAt = ticketsFromNow()
      const turn = (ticket: number, leaseMillis = 10_000): RedisNode.Turn => ({ ticket: ticketAt(ticket), leaseMillis })
      const tag = (answer: RedisNode.TurnAnswer) => answer._tag
      assert.strictEqual(tag(yield* node.acquireInTurn(["q"], "holder", 10_000, turn(1, 0))), "Granted")
      const held = yield* node.acquireInTurn(["q"], "w2", 10_000, turn(20))
      assert.strictEqual(held._tag, "Held")
      const ttl = (held as { ttlMillis: number }).ttlMillis
      assert.isTrue(ttl > 9_000 && ttl <= 10_000, `ttl ${ttl}`)
      yield* node.acquireInTurn(["q"], "w3", 10_000, turn(10))
      yield* node.acquireInTurn(["q"], "w1", 10_000, turn(20))
      const keys = Effect.map(h.keys, (keys) => keys.filter((key) => !key.endsWith("\u0000lease")).sort())
      assert.deepStrictEqual(yield* keys, ["q", "q\u0000queue"])
      // Line: w3 (ticket 10), w1, w2 (ticket 20, by value). Each release lets the next one in.
      const tickets: Record<string, number> = { w1: 20, w2: 20, w3: 10 }
      const waiting = ["w2", "w1", "w3"]
      for (const [releaser, next] of [["holder", "w3"], ["w3", "w1"], ["w1", "w2"]] as const) {
        assert.strictEqual(yield* node.release(["q"], releaser, true), 1)
        const answers = yield* Effect.forEach(waiting, (w) =>
          Effect.map(node.acquireInTurn(["q"], w, 10_000, turn(tickets[w])), (a) => [w, tag(a)] as const))
        const granted = answers.filter(([, answer]) => answer === "Granted").map(([w]) => w)
        assert.deepStrictEqual(granted, [next], `after ${releaser}: ${JSON.stringify(answers)}`)
        waiting.splice(waiting.indexOf(next), 1)
      }
      assert.strictEqual(yield* node.release(["q"], "w2", true), 1)
      assert.deepStrictEqual(yield* h.keys, [], "each release took its holder out of the line")
    }))

  test("acquireInTurn refused with no lease leaves the place held: the release hands the key to the waiter behind", (h) =>
    Effect.gen(function*() {
      const { node } = h
      const ticketAt = ticketsFromNow()
      const turn = (ticket: number, leaseMillis: number): RedisNode.Turn => ({ ticket: ticketAt(ticket), leaseMillis })
      assert.strictEqual((yield* node.acquireInTurn(["q"], "holder", 10_000, turn(1, 0)))._tag, "Granted")
      yield* node.acquireInTurn(["q"], "deaf", 10_000, turn(10, 10_000))
      yield* node.acquireInTurn(["q"], "w2", 10_000, turn(20, 10_000))
      // The first waiter can no longer hear releases: it asks again, taking no place.
      assert.strictEqual((yield* node.acquireInTurn(["q"], "deaf", 10_000, turn(10, 0)))._tag, "Held")
      assert.strictEqual(yield* node.release(["q"], "holder", true), 1)
      assert.strictEqual(Option.getOrNull((yield* node.inspect("q")).value), "w2", "handed past the waiter that left")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "deaf", 10_000, turn(10, 0)))._tag, "Held")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w2", 10_000, turn(20, 10_000)))._tag, "Granted")
      assert.strictEqual(yield* node.release(["q"], "w2", true), 1)
      assert.deepStrictEqual(yield* h.keys, [], "nobody is left in line")
    }))

  test("a key handed to the first waiter is its, even when a waiter with an earlier ticket joined the line since", (h) =>
    Effect.gen(function*() {
      const { node } = h
      const ticketAt = ticketsFromNow()
      const turn = (ticket: number, leaseMillis: number): RedisNode.Turn => ({ ticket: ticketAt(ticket), leaseMillis })
      assert.strictEqual((yield* node.acquireInTurn(["q"], "holder", 10_000, turn(1, 0)))._tag, "Granted")
      yield* node.acquireInTurn(["q"], "w2", 10_000, turn(20, 10_000))
      assert.strictEqual(yield* node.release(["q"], "holder", true), 1)
      assert.strictEqual(Option.getOrNull((yield* node.inspect("q")).value), "w2", "handed to the first in line")
      // w1 started earlier, but joins only now: it stands first, and finds the key held by w2's handover.
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w1", 10_000, turn(10, 10_000)))._tag, "Held")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w2", 10_000, turn(20, 10_000)))._tag, "Granted")
      assert.strictEqual(yield* node.release(["q"], "w2", true), 1)
      assert.strictEqual(Option.getOrNull((yield* node.inspect("q")).value), "w1", "then handed to w1")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w1", 10_000, turn(10, 10_000)))._tag, "Granted")
      assert.strictEqual(yield* node.release(["q"], "w1", true), 1)
      assert.deepStrictEqual(yield* h.keys, [])
    }))

  test("a place in line ends with its lease; releases and a first waiter leaving announce who is next", (h) =>
    Effect.gen(function*() {
      const { node } = h
      const heard: Array<string | null> = []
      const watch = yield* node.watchReleases!("q", (next) => void heard.push(next))
      const ticketAt = ticketsFromNow()
      const turn = (ticket: number, leaseMillis: number): RedisNode.Turn => ({ ticket: ticketAt(ticket), leaseMillis })
      assert.strictEqual((yield* node.acquireInTurn(["q"], "holder", 10_000, turn(1, 0)))._tag, "Granted")
      yield* node.acquireInTurn(["q"], "w1", 10_000, turn(10, 50))
      yield* node.acquireInTurn(["q"], "w2", 10_000, turn(20, 10_000))
      yield* node.acquireInTurn(["q"], "w3", 10_000, turn(30, 10_000))
      yield* Effect.sleep("100 millis") // w1's lease ended: w2 is first
      const hear = (count: number) => Effect.repeat(Effect.sleep("5 millis"), { until: () => heard.length >= count, times: 200 })
      assert.strictEqual(yield* node.release(["q"], "holder", true), 1)
      yield* hear(1)
      // The release handed the key to w2 (first in line): leaving, w2 passes it on to w3.
      assert.strictEqual(Option.getOrNull((yield* node.inspect("q")).value), "w2", "handed to the first in line")
      assert.strictEqual(yield* node.release(["q"], "w2", false), 1, "w2 leaves, first in line, holding the handed key")
      yield* hear(2)
      assert.strictEqual(Option.getOrNull((yield* node.inspect("q")).value), "w3", "passed on to the next")
      assert.strictEqual(yield* node.release(["q"], "w3", false), 1, "w3 leaves: nobody is left")
      yield* hear(3)
      assert.deepStrictEqual(heard, ["w2", "w3", ""])
      assert.deepStrictEqual(yield* h.keys, [])
      watch.stop()
    }))

  test("a release hands the key to the first in line, for the rest of its lease: newcomers find it held, the waiter finds it ours", (h) =>
    Effect.gen(function*() {
      const { node } = h
      const ticketAt = ticketsFromNow()
      assert.strictEqual((yield* node.acquireInTurn(["q"], "holder", 10_000, { ticket: ticketAt(1), leaseMillis: 0 }))._tag, "Granted")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w1", 10_000, { ticket: ticketAt(10), leaseMillis: 2_000 }))._tag, "Held")
      assert.strictEqual(yield* node.release(["q"], "holder", true), 1)
      const handed = yield* node.inspect("q")
      assert.strictEqual(Option.getOrNull(handed.value), "w1")
      const ttl = Option.getOrThrow(ttlOf(handed))
      assert.isTrue(ttl > 1_500 && ttl <= 2_000, `the rest of w1's lease, not a lock's ttl: ${ttl}`)
      assert.isFalse(yield* node.acquire(["q"], "newcomer", 10_000), "a newcomer's plain acquire is refused")
      const granted = yield* node.acquireInTurn(["q"], "w1", 10_000, { ticket: ticketAt(10), leaseMillis: 2_000 })
      assert.strictEqual(granted._tag, "Granted")
      assert.isTrue(Option.getOrThrow(ttlOf(yield* node.inspect("q"))) > 9_000, "set again with the lock's ttl")
      assert.strictEqual(yield* node.release(["q"], "w1", true), 1)
      assert.deepStrictEqual(yield* h.keys, [], "nobody in line: the release frees the key")
    }))

  test("a refused attempt's undo (keepPlace) deletes only the key: the waiter stays first in line, nothing is announced", (h) =>
    Effect.gen(function*() {
      const { node } = h
      const heard: Array<string | null> = []
      const watch = yield* node.watchReleases!("q", (next) => void heard.push(next))
      const ticketAt = ticketsFromNow()
      const turn = (ticket: number): RedisNode.Turn => ({ ticket: ticketAt(ticket), leaseMillis: 10_000 })
      assert.strictEqual((yield* node.acquireInTurn(["q"], "holder", 10_000, turn(1)))._tag, "Granted")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w1", 10_000, turn(10)))._tag, "Held")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w2", 10_000, turn(20)))._tag, "Held")
      // The holder's attempt was refused elsewhere: it undoes its key here, and w1 is still first.
      assert.strictEqual(yield* node.release(["q"], "holder", false, true), 1)
      // w1 undoes an attempt that took nothing: it keeps its place, nobody is told.
      assert.strictEqual(yield* node.release(["q"], "w1", false, true), 0)
      yield* Effect.sleep("50 millis")
      assert.deepStrictEqual(heard, [])
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w2", 10_000, turn(20)))._tag, "NotYourTurn")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w1", 10_000, turn(10)))._tag, "Granted")
      yield* node.release(["q"], "w1", true)
      yield* node.release(["q"], "w2", false)
      assert.deepStrictEqual(yield* h.keys, [])
      watch.stop()
    }))

  test("a grant keeps the place in line: after a split vote's undo the waiter is still first", (h) =>
    Effect.gen(function*() {
      const { node } = h
      const ticketAt = ticketsFromNow()
      const turn = (ticket: number): RedisNode.Turn => ({ ticket: ticketAt(ticket), leaseMillis: 10_000 })
      assert.strictEqual((yield* node.acquireInTurn(["q"], "holder", 10_000, turn(1)))._tag, "Granted")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w1", 10_000, turn(10)))._tag, "Held")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w2", 10_000, turn(20)))._tag, "Held")
      assert.strictEqual(yield* node.release(["q"], "holder", true), 1)
      // w1 is granted here, but too few nodes agreed: it undoes the key and keeps its place.
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w1", 10_000, turn(10)))._tag, "Granted")
      assert.strictEqual(yield* node.release(["q"], "w1", false, true), 1)
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w2", 10_000, turn(20)))._tag, "NotYourTurn")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w1", 10_000, turn(10)))._tag, "Granted")
      yield* node.release(["q"], "w1", true)
      yield* node.release(["q"], "w2", false)
      assert.deepStrictEqual(yield* h.keys, [])
    }))

  test("with its ticket's age, a waiter is seated by its ticket at every attempt: a place retaken behind others moves back (lines converge)", (h) =>
    Effect.gen(function*() {
      const { node } = h
      // Both waiters' clocks agree with the node's: w1 began 300 ms before w2, who joins now.
      const now = Date.now()
      const w1 = { ticket: now - 300, leaseMillis: 10_000 }
      const w1Aged = () => ({ ...w1, ageMillis: Date.now() - w1.ticket })
      const w2 = { ticket: now, leaseMillis: 10_000, ageMillis: 0 }
      assert.strictEqual((yield* node.acquireInTurn(["q"], "holder", 10_000, { ticket: now, leaseMillis: 0 }))._tag, "Granted")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w2", 10_000, w2))._tag, "Held")
      yield* Effect.sleep("1100 millis")
      // w1's place here ran out, and it rejoins as an older client does, bounded by the node's time less
      // a second: behind w2, although it is ahead of w2 on the nodes where it kept its place.
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w1", 10_000, w1))._tag, "Held")
      // Its next attempt, with its ticket's age, seats it by its ticket again: ahead of w2, as on every other node.
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w1", 10_000, w1Aged()))._tag, "Held")
      assert.strictEqual(yield* node.release(["q"], "holder", true), 1)
      assert.strictEqual(Option.getOrNull((yield* node.inspect("q")).value), "w1", "the key is handed to w1, first in line")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w2", 10_000, w2))._tag, "Held")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "w1", 10_000, w1Aged()))._tag, "Granted")
      yield* node.release(["q"], "w1", true)
      yield* node.release(["q"], "w2", false)
      assert.deepStrictEqual(yield* h.keys, [])
    }))

  test("with its ticket's age, a client whose clock is a minute behind is seated a second before it began, not a minute", (h) =>
    Effect.gen(function*() {
      const { node } = h
      const began = Date.now()
      assert.strictEqual((yield* node.acquireInTurn(["q"], "holder", 10_000, { ticket: began, leaseMillis: 0 }))._tag, "Granted")
      const honest = (): RedisNode.Turn => ({ ticket: began - 900, leaseMillis: 10_000, ageMillis: Date.now() - began + 900 })
      assert.strictEqual((yield* node.acquireInTurn(["q"], "honest", 10_000, honest()))._tag, "Held")
      yield* Effect.sleep("200 millis")
      const behindBegan = Date.now()
      const behind = (): RedisNode.Turn => ({ ticket: behindBegan - 60_000, leaseMillis: 10_000, ageMillis: Date.now() - behindBegan })
      // Seated at behindBegan − 1 s: after the honest waiter, who began 1.1 s before it.
      assert.strictEqual((yield* node.acquireInTurn(["q"], "behind", 10_000, behind()))._tag, "Held")
      assert.strictEqual(yield* node.release(["q"], "holder", true), 1)
      assert.strictEqual((yield* node.acquireInTurn(["q"], "behind", 10_000, behind()))._tag, "Held")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "honest", 10_000, honest()))._tag, "Granted")
      yield* node.release(["q"], "honest", true)
      yield* node.release(["q"], "behind", false)
      assert.deepStrictEqual(yield* h.keys, [])
    }))

  test("a slot's setting is recorded by a grant, refused when another is recorded, kept as long as a slot is held, and goes with the last", (h) =>
    Effect.gen(function*() {
      const { node } = h
      const slot = (index: number) => `jobs\u0000permit${index}`
      const record = "jobs\u0000permit\u0000setting"
      const turn = (setting: string): RedisNode.Turn => ({ ticket: Date.now(), leaseMillis: 0, ageMillis: 0, setting })
      assert.strictEqual((yield* node.acquireInTurn([slot(0)], "a", 1_000, turn("2")))._tag, "Granted")
      assert.deepStrictEqual(yield* node.acquireInTurn([slot(1)], "b", 1_000, turn("3")), { _tag: "SettingConflict", recorded: "2" })
      assert.isTrue(Option.isNone((yield* node.inspect(slot(1))).value), "a conflict writes nothing")
      assert.strictEqual(Option.getOrNull((yield* node.inspect(record)).value), "2")
      // An extension makes the record last as long as the slot.
      assert.isTrue(yield* node.extend([slot(0)], "a", 30_000))
      assert.isAbove(Option.getOrThrow(ttlOf(yield* node.inspect(record))), 20_000)
      assert.strictEqual((yield* node.acquireInTurn([slot(1)], "c", 1_000, turn("2")))._tag, "Granted")
      assert.strictEqual(yield* node.release([slot(0)], "a", true), 1)
      assert.strictEqual(Option.getOrNull((yield* node.inspect(record)).value), "2", "slot 1 is still held")
      assert.strictEqual(yield* node.release([slot(1)], "c", true), 1)
      assert.deepStrictEqual(yield* h.keys, [], "the last release took the record")
      // The resource is idle: another setting is recorded now.
      assert.strictEqual((yield* node.acquireInTurn([slot(2)], "d", 1_000, turn("3")))._tag, "Granted")
      assert.strictEqual(Option.getOrNull((yield* node.inspect(record)).value), "3")
      yield* node.release([slot(2)], "d", true)
      assert.deepStrictEqual(yield* h.keys, [])
    }))

  test("a slot's release hands it to the first waiter whose value carries a ttl and the recorded setting: set for that ttl, out of the line, announced as value/slot", (h) =>
    Effect.gen(function*() {
      const { node } = h
      const slots = [0, 1].map((index) => `jobs\u0000permit${index}`)
      const record = "jobs\u0000permit\u0000setting"
      const heard: Array<string | null> = []
      const watch = yield* node.watchReleases!("jobs\u0000permit", (next) => void heard.push(next))
      const hear = (count: number) => Effect.repeat(Effect.sleep("5 millis"), { until: () => heard.length >= count, times: 200 })
      const ticketAt = ticketsFromNow()
      const turn = (ticket: number): RedisNode.Turn => ({ ticket: ticketAt(ticket), leaseMillis: 10_000, setting: "2" })
      assert.deepStrictEqual(yield* node.acquireSlot(slots, "a", 1_000, turn(1)), { _tag: "Granted", slot: 0 })
      assert.deepStrictEqual(yield* node.acquireSlot(slots, "b", 1_000, turn(2)), { _tag: "Granted", slot: 1 })
      // Waiters in line: a tagged one (ttl 5000 ms, setting 2), one of an older client (untagged), a tagged one.
      for (const [value, ticket] of [["w1.5000.2", 10], ["old", 20], ["w3.5000.2", 30]] as const) {
        assert.strictEqual((yield* node.acquireSlot(slots, value, 5_000, turn(ticket)))._tag, "Held")
      }
      if (watch.ready !== undefined) yield* Effect.promise(() => watch.ready!) // a cluster's or a sentinel's subscriber connects first
      assert.strictEqual(yield* node.release([slots[0]], "a", true), 1)
      yield* hear(1)
      const handed = yield* node.inspect(slots[0])
      assert.strictEqual(Option.getOrNull(handed.value), "w1.5000.2", "slot 0 handed to w1")
      const ttl = Option.getOrThrow(ttlOf(handed))
      assert.isTrue(ttl > 4_000 && ttl <= 5_000, `w1's own ttl: ${ttl}`)
      assert.isAbove(Option.getOrThrow(ttlOf(yield* node.inspect(record))), 4_000, "the setting record outlives the handed slot")
      // Only named: the older client's waiter, first now, gets no slot handed (it takes the free one itself).
      assert.strictEqual(yield* node.release([slots[1]], "b", true), 1)
      yield* hear(2)
      assert.isTrue(Option.isNone((yield* node.inspect(slots[1])).value), "slot 1 is free")
      assert.strictEqual((yield* node.acquireSlot(slots, "w3.5000.2", 5_000, turn(30)))._tag, "NotYourTurn", "the named waiter is first")
      assert.deepStrictEqual(yield* node.acquireSlot(slots, "old", 5_000, turn(20)), { _tag: "Granted", slot: 1 })
      // w1 holds slot 0 already (it left the line): its round finds it, a newcomer does not.
      assert.deepStrictEqual(yield* node.acquireSlot(slots, "w1.5000.2", 5_000, turn(10)), { _tag: "Granted", slot: 0 })
      assert.strictEqual(yield* node.release([slots[0]], "w1.5000.2", true), 1)
      yield* hear(3)
      assert.deepStrictEqual(heard, ["w1.5000.2/0", "old", "w3.5000.2/0"])
      assert.strictEqual(Option.getOrNull((yield* node.inspect(slots[0])).value), "w3.5000.2")
      // A release deletes every slot holding its value, whichever key it names.
      assert.strictEqual(yield* node.release([slots[1]], "w3.5000.2", true), 1)
      yield* node.release([slots[1]], "old", true)
      assert.deepStrictEqual(yield* h.keys, [])
      watch.stop()
    }))

  test("a newcomer's ticket is bounded by the node's time: a client whose clock is behind does not jump the line", (h) =>
    Effect.gen(function*() {
      const { node } = h
      const turn = (ticket: number): RedisNode.Turn => ({ ticket, leaseMillis: 10_000 })
      assert.strictEqual((yield* node.acquireInTurn(["q"], "holder", 10_000, turn(Date.now())))._tag, "Granted")
      const honest = turn(Date.now() - 900)
      assert.strictEqual((yield* node.acquireInTurn(["q"], "honest", 10_000, honest))._tag, "Held")
      yield* Effect.sleep("200 millis")
      // A minute behind: taken as the node's time less one second, after the honest waiter who came 200 ms before.
      assert.strictEqual((yield* node.acquireInTurn(["q"], "behind", 10_000, turn(Date.now() - 60_000)))._tag, "Held")
      assert.strictEqual(yield* node.release(["q"], "holder", true), 1)
      // The key is handed to the honest waiter, first in line: held, for the one behind.
      assert.strictEqual((yield* node.acquireInTurn(["q"], "behind", 10_000, turn(Date.now() - 60_000)))._tag, "Held")
      assert.strictEqual((yield* node.acquireInTurn(["q"], "honest", 10_000, honest))._tag, "Granted")
      yield* node.release(["q"], "honest", true)
      yield* node.release(["q"], "behind", false)
      assert.deepStrictEqual(yield* h.keys, [])
    }))

  test("a key holding our own value (an earlier attempt's late answer) is ours: acquired again with the new ttl", ({ node }) =>
    Effect.gen(function*() {
      assert.isTrue(yield* node.acquire(["k"], "v", 1_000))
      assert.isTrue(yield* node.acquire(["k"], "v", 10_000), "acquire")
      assert.isTrue(Option.getOrThrow(ttlOf(yield* node.inspect("k"))) > 9_000)
      assert.isTrue(yield* node.acquire(["j", "k"], "v", 20_000), "several keys")
      assert.isTrue(Option.getOrThrow(ttlOf(yield* node.inspect("k"))) > 19_000)
      const again = yield* node.acquireInTurn(["k"], "v", 30_000, { ticket: Date.now(), leaseMillis: 1_000 })
      assert.strictEqual(again._tag, "Granted", "acquireInTurn")
      assert.isTrue(Option.getOrThrow(ttlOf(yield* node.inspect("k"))) > 29_000)
      assert.isFalse(yield* node.acquire(["k"], "other", 1_000))
      const other = yield* node.acquireInTurn(["k"], "other", 1_000, { ticket: Date.now(), leaseMillis: 0 })
      assert.strictEqual(other._tag, "Held")
      assert.deepStrictEqual((yield* node.inspect("k")).value, Option.some("v"))
    }))

  test("durations in fractional milliseconds are taken whole (rounded up), never refused", (h) =>
    Effect.gen(function*() {
      const { node } = h
      assert.isTrue(yield* node.acquire(["k"], "v", 1_000.4))
      assert.isTrue(yield* node.extend(["k"], "v", 5_000.5))
      const ttl = Option.getOrThrow(ttlOf(yield* node.inspect("k")))
      assert.isTrue(ttl > 4_000 && ttl <= 5_001, `ttl ${ttl}`)
      const turn = { ticket: Date.now(), leaseMillis: 312.7 }
      assert.strictEqual((yield* node.acquireInTurn(["k"], "w", 1_000.2, turn))._tag, "Held")
      yield* node.release(["k"], "v", true)
      assert.strictEqual((yield* node.acquireInTurn(["k"], "w", 1_000.2, turn))._tag, "Granted")
      yield* node.release(["k"], "w", true)
      assert.deepStrictEqual(yield* h.keys, [])
    }))

  test("extend sets a new ttl on all keys only if all are ours", ({ node }) =>
    Effect.gen(function*() {
      assert.isTrue(yield* node.acquire(["a", "b"], "mine", 1_000))
      assert.isTrue(yield* node.extend(["a", "b"], "mine", 60_000))
      for (const key of ["a", "b"]) assert.isTrue(Option.getOrThrow(ttlOf(yield* node.inspect(key))) > 50_000)
      assert.isFalse(yield* node.extend(["a", "b"], "not-mine", 120_000))
      assert.isFalse(yield* node.extend(["a", "b", "missing"], "mine", 120_000))
      for (const key of ["a", "b"]) assert.isTrue(Option.getOrThrow(ttlOf(yield* node.inspect(key))) <= 60_000)
    }))

  test("keys expire after their ttl and can be acquired again", ({ node }) =>
    Effect.gen(function*() {
      assert.isTrue(yield* node.acquire(["k"], "v1", 30))
      yield* Effect.sleep("80 millis")
      const state = yield* node.inspect("k")
      assert.isTrue(Option.isNone(state.value))
      assert.isTrue(Option.isNone(state.ttl))
      assert.isFalse(yield* node.extend(["k"], "v1", 1_000))
      assert.isTrue(yield* node.acquire(["k"], "v2", 1_000))
    }))

  test("fence counters: advanced (to at least the time in µs) and raised only while our keys are held", ({ node }) =>
    Effect.gen(function*() {
      assert.isTrue(Option.isNone(yield* node.incrementFences(["k"], "v", ["fence:k"])), "not ours: nothing counted")
      assert.isFalse(yield* node.commitFences(["k"], "v", ["fence:k"], [5n]))
      assert.isTrue(Option.isNone((yield* node.inspect("fence:k")).value))
      assert.isTrue(yield* node.acquire(["k", "j"], "v", 10_000))
      // A new counter starts from the node's time in microseconds (the servers run on this machine's clock).
      const micros = () => BigInt(Date.now()) * 1000n
      const before = micros()
      const first = Option.getOrThrow(yield* node.incrementFences(["k", "j"], "v", ["fence:k", "fence:j"]))
      const after = micros()
      for (const count of first) {
        assert.isTrue(count >= before - 1000n && count <= after + 1000n, `${count} is the time in µs (${before}..${after})`)
      }
      const [second] = Option.getOrThrow(yield* node.incrementFences(["k"], "v", ["fence:k"]))
      assert.isTrue(second > first[0], "each advance is strictly larger")
      const high = after + 10_000_000n
      assert.isTrue(yield* node.commitFences(["k", "j"], "v", ["fence:k", "fence:j"], [high, 1n]))
      assert.isTrue(yield* node.commitFences(["k"], "v", ["fence:k"], [7n]), "a smaller token never lowers it")
      assert.deepStrictEqual((yield* node.inspect("fence:k")).value, Option.some(high.toString()))
      assert.deepStrictEqual(yield* node.incrementFences(["k"], "v", ["fence:k"]), Option.some([high + 1n]), "ahead of the time: + 1")
      assert.isTrue(Option.isNone((yield* node.inspect("fence:k")).ttl), "counters never expire")
      assert.isTrue(yield* node.commitFences(["k"], "v", ["fence:k"], [123456789012345678901234567890n]))
      assert.deepStrictEqual(yield* node.incrementFences(["k"], "w", ["fence:k"]), Option.none())
      assert.deepStrictEqual((yield* node.inspect("fence:k")).value, Option.some("123456789012345678901234567890"))
    }))

  test("fence counters past 10^14 and 2^53 come back exact", ({ node }) =>
    Effect.gen(function*() {
      assert.isTrue(yield* node.acquire(["k", "j"], "v", 10_000))
      const fences = ["fence:k", "fence:j"]
      assert.isTrue(yield* node.commitFences(["k", "j"], "v", fences, [999_999_999_999_999_999n, 9_007_199_254_740_993n]))
      const counts = yield* node.incrementFences(["k", "j"], "v", fences)
      assert.deepStrictEqual(counts, Option.some([1_000_000_000_000_000_000n, 9_007_199_254_740_994n]))
    }))

  test("a key of another type: acquire fails with WrongType naming the type, writes nothing; release leaves it; extend and inspect fail with WrongType", (h) =>
    Effect.gen(function*() {
      const { node } = h
      yield* h.putForeign("list")
      const acquires: ReadonlyArray<Effect.Effect<unknown, RedisNode.RedisNodeError>> = [
        node.acquire(["list"], "v", 1_000),
        node.acquire(["free", "list"], "v", 1_000),
        node.acquireInTurn(["free", "list"], "v", 1_000, { ticket: 1, leaseMillis: 5_000 }),
        node.acquireSlot(["free", "list"], "v", 1_000, { ticket: 1, leaseMillis: 5_000 })
      ]
      for (const acquire of acquires) {
        const exit = yield* Effect.exit(acquire)
        assert.isTrue(Exit.isFailure(exit))
        const error = Cause.squash((exit as Exit.Failure<unknown, RedisNode.RedisNodeError>).cause)
        assert.instanceOf(error, RedisNode.RedisNodeError)
        assert.strictEqual((error as RedisNode.RedisNodeError).reason, "WrongType")
        assert.include((error as RedisNode.RedisNodeError).detail, `lock key ${h.storedKey?.("list") ?? "list"} holds a list`)
      }
      assert.isTrue(Option.isNone((yield* node.inspect("free")).value), "nothing written, all or none")
      // Nor did the waiter join the free key's line: another value is granted at once.
      assert.deepStrictEqual(yield* node.acquireInTurn(["free"], "w", 1_000, { ticket: 2, leaseMillis: 0 }), { _tag: "Granted" })
      assert.strictEqual(yield* node.release(["list"], "v", true), 0)
      for (const operation of [Effect.asVoid(node.extend(["list"], "v", 1_000)), Effect.asVoid(node.inspect("list"))]) {
        const exit = yield* Effect.exit(operation)
        assert.isTrue(Exit.isFailure(exit))
        const error = Cause.squash((exit as Exit.Failure<unknown, RedisNode.RedisNodeError>).cause)
        assert.instanceOf(error, RedisNode.RedisNodeError)
        assert.strictEqual((error as RedisNode.RedisNodeError).reason, "WrongType")
        assert.strictEqual((error as RedisNode.RedisNodeError).node, node.name)
      }
      assert.isTrue(yield* h.foreignIntact("list"))
    }))
}

