/**
 * The behaviours every front end shares, written once over a small
 * front-end interface (`FrontEnd`) with plain `describe` / `it`: the Effect 3
 * API, the Effect 4 API and the promise API each run them from their own
 * package, with their own test runner (vitest 3 or 5), under the same test
 * names. The suite starts its own local servers; assertions are Node's.
 *
 * What only one front end can have (a `TestClock`, scopes, interruption of
 * a fiber) stays in that package's own tests.
 */
import * as assert from "node:assert/strict"
import { type LocalFleet, startLocalFleet } from "./fleet.js"
import { eventually } from "./servers.js"

/** The retry a behaviour asks for: `times` retries `delayMillis` apart (the front end's jitter), or none. */
export type RetrySetting = { readonly delayMillis: number; readonly times: number } | "none"

/** One acquisition's options as a behaviour gives them; `ttl` and the others may be of any kind (bad input). */
export interface AcquireSettings {
  readonly ttl: unknown
  readonly nodeTimeout?: unknown
  readonly autoExtend?: unknown
  /** Default: the front end's default retry. */
  readonly retry?: RetrySetting
  readonly signal?: AbortSignal
}

/** A held lock, as the behaviours read it. */
export interface Held {
  readonly value: string
  readonly attempts: number
  /** Release on every node: the release's status (`Released`, `NotHeld`, `Incomplete`, `AlreadyReleased`). */
  readonly release: () => Promise<string>
  /** Extend to `ttlMillis`; rejects with the front end's error. */
  readonly extend: (ttlMillis: number) => Promise<void>
  /** The validity left, in milliseconds. */
  readonly remainingMillis: () => Promise<number>
  /** The hold's fencing token; rejects with the front end's error. */
  readonly fencingToken: () => Promise<bigint>
}

/** A lock manager of one front end. Every call rejects with the front end's own error (its `_tag` and fields). */
export interface Manager {
  readonly acquire: (resources: unknown, options: AcquireSettings) => Promise<Held>
  /** One of `limit` permits of a semaphore on `resource`. */
  readonly acquirePermit: (resource: string, limit: number, options: AcquireSettings) => Promise<Held>
  /** `resource` held for reading (shared) or for writing (alone). */
  readonly acquireRead: (resource: string, options: AcquireSettings) => Promise<Held>
  readonly acquireWrite: (resource: string, options: AcquireSettings) => Promise<Held>
  /**
   * Acquire, run `body` while the lock is held, release however it ends; the
   * body's signal aborts once the lock is lost (the promise API's `using`,
   * the Effect lines' `withLock` over a promise, whose signal aborts when the
   * body is interrupted). Rejects with the loss (`LockLost`) or the body's
   * rejection.
   */
  readonly using: <A>(
    resource: string,
    options: AcquireSettings,
    body: (signal: AbortSignal) => Promise<A>
  ) => Promise<A>
  /** The value a majority of nodes holds the resource for, if any. */
  readonly holder: (resource: string) => Promise<string | undefined>
  /** How many of a semaphore's `limit` permits a majority agrees are held. */
  readonly permitsHeld: (resource: string, limit: number) => Promise<number>
  /** Everything it holds released, its connections closed. */
  readonly close: () => Promise<void>
}

/** Where a manager's nodes are: node options as the front end takes them (ioredis node options), or `n` in-memory nodes. */
export type NodesSetting = { readonly options: ReadonlyArray<unknown> } | { readonly memory: number }

/** A manager's settings as a behaviour gives them; durations in milliseconds. */
export interface ManagerSettings {
  readonly keyPrefix?: string
  /** Default: off (the suite's servers were just started, so they would abstain). */
  readonly restartQuarantine?: boolean
  readonly maxTtlMillis?: number
  readonly maxExtensions?: number
}

/** One front end, as the behaviours drive it. */
export interface FrontEnd {
  readonly name: string
  /** A manager with its own connections. */
  readonly manager: (nodes: NodesSetting, settings?: ManagerSettings) => Promise<Manager>
}

/** The test functions of the runner that runs the suite (vitest's, of either major). */
export interface Runner {
  readonly describe: (name: string, body: () => void) => void
  readonly it: (name: string, body: () => Promise<void>, timeout?: number) => void
  readonly beforeAll: (body: () => Promise<void>, timeout?: number) => void
  readonly afterAll: (body: () => Promise<void>, timeout?: number) => void
  readonly beforeEach: (body: () => Promise<void>, timeout?: number) => void
}

/** A rejection's reason; fails when the promise resolves. */
const rejectionOf = (promise: Promise<unknown>): Promise<Record<string, unknown>> =>
  promise.then(
    () => assert.fail("resolved where a rejection was expected"),
    (error: unknown) => error as Record<string, unknown>
  )

const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

/** A body that holds on until its signal aborts (then rejects with the signal's reason), at most 10 s. */
const untilAborted = (signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const cap = setTimeout(resolve, 10_000)
    signal.addEventListener("abort", () => {
      clearTimeout(cap)
      reject(signal.reason)
    })
  })

/** Every behaviour, for `frontEnd`, under `runner`. */
export const behaviours = (frontEnd: FrontEnd, runner: Runner): void => {
  const { afterAll, beforeAll, beforeEach, describe, it } = runner
  let fleet: LocalFleet
  const nodes = (): NodesSetting => ({ options: fleet.nodes.map(({ host, port }) => ({ host, port })) })
  const managers: Array<Manager> = []
  const manager = async (setting: NodesSetting = nodes(), settings?: ManagerSettings) => {
    const made = await frontEnd.manager(setting, settings)
    managers.push(made)
    return made
  }
  /** The key's value on each server. */
  const values = (key: string) => Promise.all(fleet.servers.map((server) => server.call("GET", key)))
  /**
   * Until the key has these values on the servers: a lock operation returns
   * once a quorum answered, and lands on the other nodes right after.
   */
  const valuesBecome = (key: string, expected: ReadonlyArray<string | null>) =>
    eventually(async () => assert.deepEqual(await values(key), expected), 2_000, 20)
  /** Whether any server holds a key of `resource` (its lock key, its line of waiters, its slots). */
  const keysOf = async (resource: string) =>
    (await Promise.all(fleet.servers.map((server) => server.call("KEYS", `*${resource}*`)))).flat() as ReadonlyArray<
      string
    >

  describe(`behaviours: ${frontEnd.name}`, () => {
    beforeAll(async () => {
      fleet = await startLocalFleet(3)
    }, 60_000)
    afterAll(async () => {
      await Promise.all(managers.splice(0).map((made) => made.close()))
      await fleet?.stop()
    }, 60_000)
    beforeEach(async () => {
      await Promise.all(managers.splice(0).map((made) => made.close()))
      await fleet.reset()
    }, 30_000)

    it("a lock is set on every node, refused to another client while held, and gone from every node once released", async () => {
      const holder = await manager(nodes(), { keyPrefix: "app:" })
      const other = await manager(nodes(), { keyPrefix: "app:" })
      const lock = await holder.acquire("orders:42", { ttl: 10_000 })
      assert.equal(lock.attempts, 1)
      await valuesBecome("app:orders:42", [lock.value, lock.value, lock.value])
      const refused = await rejectionOf(other.acquire("orders:42", { ttl: 10_000, retry: "none" }))
      assert.equal(refused._tag, "LockNotAcquired")
      assert.equal(refused.reason, "Held")
      assert.equal(refused.attempts, 1)
      assert.match(String(refused.message), /^lock on orders:42 not acquired after 1 attempt\(s\)/)
      assert.equal(await lock.release(), "Released")
      await valuesBecome("app:orders:42", [null, null, null])
      assert.equal(await lock.release(), "AlreadyReleased")
      const again = await other.acquire("orders:42", { ttl: 10_000, retry: "none" })
      assert.notEqual(again.value, lock.value)
    })

    it("several resources are locked all or none: one held refuses the lot, and nothing of the attempt is left", async () => {
      const holder = await manager()
      const other = await manager()
      await holder.acquire("b", { ttl: 10_000 })
      const refused = await rejectionOf(other.acquire(["a", "b", "c"], { ttl: 10_000, retry: "none" }))
      assert.equal(refused._tag, "LockNotAcquired")
      await valuesBecome("redlock:a", [null, null, null])
      await valuesBecome("redlock:c", [null, null, null])
      const both = await other.acquire(["a", "c"], { ttl: 10_000 })
      await valuesBecome("redlock:a", [both.value, both.value, both.value])
      await valuesBecome("redlock:c", [both.value, both.value, both.value])
    })

    it(
      "retry times bounds the attempts under contention: no acquisition, granted or refused, takes more than times + 1 and one re-check",
      async () => {
        const contenders = await Promise.all([0, 1, 2, 3].map(() => manager()))
        const retry = { delayMillis: 30, times: 2 }
        const attempts: Array<number> = []
        let refusals = 0
        let holding = 0
        let overlaps = 0
        const until = Date.now() + 1_500
        await Promise.all(contenders.map(async (contender) => {
          while (Date.now() < until) {
            try {
              const lock = await contender.acquire("contended", { ttl: 2_000, retry })
              attempts.push(lock.attempts)
              if (++holding > 1) overlaps++
              await sleep(25)
              holding--
              await lock.release()
            } catch (error) {
              const refused = error as Record<string, unknown>
              assert.equal(refused._tag, "LockNotAcquired", String(refused.message))
              attempts.push(Number(refused.attempts))
              refusals++
            }
          }
        }))
        assert.equal(overlaps, 0, "never two holders at once")
        assert.ok(attempts.length >= 10, `${attempts.length} acquisitions`)
        assert.ok(refusals > 0, "contention made some give up")
        // The re-check: a node not yet listening to the key's releases when the waiting began (engine/waiting.ts).
        assert.ok(Math.max(...attempts) <= retry.times + 2, `attempts: ${attempts.join(", ")}`)
        assert.ok(Math.max(...attempts) >= retry.times + 1, `the bound was reached: ${attempts.join(", ")}`)
      },
      30_000
    )

    it("a waiter is woken by the release: it holds the lock long before its next retry is due", async () => {
      const holder = await manager()
      const waiter = await manager()
      const lock = await holder.acquire("handover", { ttl: 10_000 })
      const started = Date.now()
      const waiting = waiter.acquire("handover", { ttl: 10_000, retry: { delayMillis: 10_000, times: 1 } })
      await sleep(300)
      await lock.release()
      const taken = await waiting
      const waited = Date.now() - started
      assert.ok(waited < 3_000, `waited ${waited} ms (next retry: 10 s)`)
      // The first attempt, its re-check once the new subscriptions were ready, the one retry, brought forward.
      assert.ok(taken.attempts <= 3, `${taken.attempts} attempts`)
      await valuesBecome("redlock:handover", [taken.value, taken.value, taken.value])
    })

    it("extend moves the validity; a released lock cannot be extended (LockLost)", async () => {
      const holder = await manager()
      const lock = await holder.acquire("extended", { ttl: 1_000 })
      await sleep(300)
      const before = await lock.remainingMillis()
      assert.ok(before < 800, `${before} ms left`)
      await lock.extend(5_000)
      const after = await lock.remainingMillis()
      assert.ok(after > 4_000, `${after} ms left after the extension`)
      await eventually(
        async () => {
          const ttls = await Promise.all(fleet.servers.map((server) => server.call("PTTL", "redlock:extended")))
          for (const ttl of ttls) assert.ok(Number(ttl) > 4_000, `PTTL ${ttl}`)
        },
        2_000,
        20
      )
      await lock.release()
      const lost = await rejectionOf(lock.extend(5_000))
      assert.equal(lost._tag, "LockLost")
      assert.equal(lost.reason, "Released")
    })

    it("the holder a majority agrees on is read without a lock, and none once released", async () => {
      const holder = await manager()
      const reader = await manager()
      assert.equal(await reader.holder("inspected"), undefined)
      const lock = await holder.acquire("inspected", { ttl: 10_000 })
      assert.equal(await reader.holder("inspected"), lock.value)
      await fleet.servers[0]!.call("SET", "redlock:inspected", "someone else")
      assert.equal(await reader.holder("inspected"), lock.value, "two of three still agree")
      await lock.release()
      assert.equal(await reader.holder("inspected"), undefined)
    })

    it("an aborted signal ends a waiting acquisition with the signal's reason, and it leaves no key and no place in line", async () => {
      const holder = await manager()
      const waiter = await manager()
      const lock = await holder.acquire("aborted", { ttl: 10_000 })
      const controller = new AbortController()
      const waiting = rejectionOf(
        waiter.acquire("aborted", { ttl: 10_000, retry: { delayMillis: 5_000, times: 5 }, signal: controller.signal })
      )
      await sleep(200)
      const reason = new Error("the caller gave up")
      controller.abort(reason)
      const started = Date.now()
      const error = await waiting
      assert.ok(Date.now() - started < 1_000, "at once, not at the next retry")
      assert.equal(error, reason)
      await lock.release()
      await sleep(50)
      assert.deepEqual(await keysOf("aborted"), [], "no key, no line left")
    })

    it("acquire options of the wrong kind are InvalidOptions naming the option, and nothing is sent", async () => {
      const client = await manager()
      const cases: ReadonlyArray<readonly [unknown, AcquireSettings, string]> = [
        ["r", { ttl: "ten seconds" }, "ttl"],
        ["r", { ttl: null }, "ttl"],
        ["r", { ttl: {} }, "ttl"],
        ["r", { ttl: 0 }, "ttl"],
        ["r", { ttl: 31_000 }, "ttl"],
        ["r", { ttl: 1_000, nodeTimeout: true }, "nodeTimeout"],
        ["r", { ttl: 1_000, autoExtend: "yes" }, "autoExtend"],
        [5, { ttl: 1_000 }, "resources"],
        ["", { ttl: 1_000 }, "resources"],
        [[], { ttl: 1_000 }, "resources"],
        [["a", "a"], { ttl: 1_000 }, "resources"]
      ]
      for (const [resources, options, option] of cases) {
        const error = await rejectionOf(client.acquire(resources, options))
        assert.equal(error._tag, "InvalidOptions", `${JSON.stringify(options)}: ${String(error.message)}`)
        assert.equal(error.option, option, String(error.message))
      }
      assert.deepEqual(await fleet.dbsizes(), [0, 0, 0])
    })

    it("node options of the wrong kind are InvalidOptions naming the option, before any connection", async () => {
      const { host, port } = fleet.nodes[0]!
      // The connections open before (a closed GLIDE client's goes 3 s later): none may be added.
      const connectionIds = async () =>
        new Set(
          [...String(await fleet.servers[0]!.call("CLIENT", "LIST")).matchAll(/^id=(\d+)/gm)].map((match) => match[1])
        )
      const before = await connectionIds()
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ host, port: "6379" }, "port"],
        [{ host, port, username: 5 }, "username"],
        [{ host, port, password: 5 }, "password"],
        [{ host, port, db: -1 }, "db"],
        [{ host, port, tls: "yes" }, "tls"],
        [{ host, port, name: 7 }, "name"],
        [{ host, port, connectTimeout: "soon" }, "connectTimeout"]
      ]
      for (const [node, option] of cases) {
        const error = await rejectionOf(frontEnd.manager({ options: [node] }))
        assert.equal(error._tag, "InvalidOptions", `${JSON.stringify(node)}: ${String(error.message)}`)
        assert.equal(error.option, option, String(error.message))
      }
      const added = [...await connectionIds()].filter((id) => !before.has(id))
      assert.deepEqual(added, [], "no connection opened")
    })

    it("waiters are served in the order they came: each release hands the lock to the next in line", async () => {
      const holder = await manager()
      const lock = await holder.acquire("line", { ttl: 10_000 })
      const order: Array<string> = []
      const waiting: Array<Promise<void>> = []
      for (const name of ["first", "second", "third"]) {
        const waiter = await manager()
        waiting.push(
          waiter.acquire("line", { ttl: 10_000, retry: { delayMillis: 5_000, times: 3 } }).then(async (held) => {
            order.push(name)
            await sleep(30)
            await held.release()
          })
        )
        // Its first attempt refused, it has its place before the next comes.
        await sleep(150)
      }
      await lock.release()
      await Promise.all(waiting)
      assert.deepEqual(order, ["first", "second", "third"])
    }, 30_000)

    it(
      "a minority of nodes down: the others grant the lock; a majority down: refused at once, naming each node's error",
      async () => {
        const client = await manager()
        await fleet.servers[0]!.kill()
        const lock = await client.acquire("outage", { ttl: 10_000, retry: "none" })
        const live = await Promise.all(fleet.servers.slice(1).map((server) => server.call("GET", "redlock:outage")))
        assert.deepEqual(live, [lock.value, lock.value])
        await lock.release()
        await fleet.servers[1]!.kill()
        const started = Date.now()
        const refused = await rejectionOf(client.acquire("outage", { ttl: 10_000, retry: "none" }))
        assert.ok(Date.now() - started < 1_000, "no wait for the dead nodes")
        assert.equal(refused._tag, "LockNotAcquired")
        assert.equal(refused.reason, "NoQuorum")
        const outcomes = refused.outcomes as ReadonlyArray<
          { readonly _tag: string; readonly error?: Record<string, unknown> }
        >
        for (const outcome of outcomes.slice(0, 2)) {
          // A user's client that queues commands while it reconnects (ioredis' and node-redis' default) is
          // waited for up to the node timeout; our own connections fail at once.
          const down = (outcome._tag === "Failed" && outcome.error?.reason === "Unavailable") ||
            outcome._tag === "TimedOut"
          assert.ok(down, JSON.stringify(outcomes))
        }
        await sleep(50)
        assert.equal(await fleet.servers[2]!.call("EXISTS", "redlock:outage"), 0, "its one yes undone")
      },
      30_000
    )

    it("autoExtend keeps a lock held past its ttl while its holder lives: another client is refused it all along", async () => {
      const client = await manager()
      const reader = await manager()
      // Node timeouts a loaded machine meets (a 500 ms ttl's default is 10 ms): a late answer would make the
      // reader's refusal NoQuorum, or the release Incomplete.
      const lock = await client.acquire("kept", { ttl: 500, nodeTimeout: 100, autoExtend: true })
      for (let i = 0; i < 6; i++) {
        await sleep(250)
        const refused = await rejectionOf(reader.acquire("kept", { ttl: 1_000, nodeTimeout: 200, retry: "none" }))
        assert.equal(refused.reason, "Held", `after ${(i + 1) * 250} ms`)
      }
      assert.equal(await reader.holder("kept"), lock.value)
      assert.ok(await lock.remainingMillis() > 0)
      assert.equal(await lock.release(), "Released")
      assert.equal(await reader.holder("kept"), undefined)
    })

    it(
      "maxExtensions bounds a lock's extensions, by hand (then ExtensionLimitReached) and automatic (then it runs out)",
      async () => {
        const client = await manager(nodes(), { maxExtensions: 2 })
        const reader = await manager()
        const byHand = await client.acquire("bounded", { ttl: 5_000 })
        await byHand.extend(5_000)
        await byHand.extend(5_000)
        const limit = await rejectionOf(byHand.extend(5_000))
        assert.equal(limit._tag, "ExtensionLimitReached")
        assert.equal(limit.maxExtensions, 2)
        await byHand.release()
        const automatic = await client.acquire("bounded-auto", { ttl: 1_000, nodeTimeout: 200, autoExtend: true })
        await sleep(1_300)
        assert.equal(await reader.holder("bounded-auto"), automatic.value, "extended past its ttl")
        // Extended at half its ttl twice, it runs out a ttl after the second.
        await eventually(async () => assert.equal(await reader.holder("bounded-auto"), undefined), 3_000, 50)
        assert.equal(await automatic.remainingMillis(), 0)
      },
      30_000
    )

    it("a lock whose keys are gone from a majority is lost: extend rejects with LockLost (NotHeld), and release leaves another's keys", async () => {
      const client = await manager()
      const other = await manager()
      const lock = await client.acquire("taken", { ttl: 10_000 })
      await Promise.all(fleet.servers.slice(0, 2).map((server) => server.call("DEL", "redlock:taken")))
      const lost = await rejectionOf(lock.extend(10_000))
      assert.equal(lost._tag, "LockLost")
      assert.equal(lost.reason, "NotHeld")
      await fleet.servers[2]!.call("DEL", "redlock:taken")
      const next = await other.acquire("taken", { ttl: 10_000, retry: "none" })
      assert.notEqual(await lock.release(), "Released")
      await valuesBecome("redlock:taken", [next.value, next.value, next.value])
    })

    it("fencing tokens grow from each holder of a resource to the next, a hold's token stays the same, and a hold released or past its validity gets none", async () => {
      const client = await manager()
      const first = await client.acquire("fenced", { ttl: 10_000 })
      const token = await first.fencingToken()
      assert.equal(typeof token, "bigint")
      assert.equal(await first.fencingToken(), token)
      await first.release()
      const second = await client.acquire("fenced", { ttl: 10_000 })
      assert.ok(await second.fencingToken() > token)
      const [asked, askedAtOnce] = await Promise.all([second.fencingToken(), second.fencingToken()])
      assert.equal(askedAtOnce, asked, "callers at the same time get the one token")
      await second.release()
      const released = await rejectionOf(second.fencingToken())
      assert.deepEqual([released._tag, released.reason], ["LockLost", "Released"])
      // Never asked while held: past its validity, a hold gives no token (a token is a claim to write).
      const brief = await client.acquire("fenced-briefly", { ttl: 200 })
      await sleep(250)
      const expired = await rejectionOf(brief.fencingToken())
      assert.deepEqual([expired._tag, expired.reason], ["LockLost", "Expired"])
    })

    it(
      "a semaphore grants limit permits at once, refuses the next, and grants it once a permit is released",
      async () => {
        const holders = await Promise.all([0, 1, 2].map(() => manager()))
        const [a, b] = await Promise.all(
          holders.slice(0, 2).map((holder) => holder.acquirePermit("pool", 2, { ttl: 10_000 }))
        )
        assert.notEqual(a!.value, b!.value)
        assert.equal(await holders[2]!.permitsHeld("pool", 2), 2)
        const refused = await rejectionOf(holders[2]!.acquirePermit("pool", 2, { ttl: 10_000, retry: "none" }))
        assert.equal(refused._tag, "LockNotAcquired")
        const waiting = holders[2]!.acquirePermit("pool", 2, { ttl: 10_000, retry: { delayMillis: 5_000, times: 2 } })
        await sleep(200)
        await a!.release()
        const third = await waiting
        assert.equal(await holders[0]!.permitsHeld("pool", 2), 2)
        const limit = await rejectionOf(holders[0]!.acquirePermit("pool", 3, { ttl: 10_000, retry: "none" }))
        assert.equal(limit._tag, "SettingConflict", "every holder of a semaphore uses one limit")
        await Promise.all([b!.release(), third.release()])
        assert.equal(await holders[0]!.permitsHeld("pool", 2), 0)
      },
      30_000
    )

    it("readers share a resource; a writer waits until they are gone, and holds it alone", async () => {
      const clients = await Promise.all([0, 1, 2].map(() => manager()))
      const readers = await Promise.all(clients.slice(0, 2).map((client) => client.acquireRead("doc", { ttl: 10_000 })))
      const refused = await rejectionOf(clients[2]!.acquireWrite("doc", { ttl: 10_000, retry: "none" }))
      assert.equal(refused._tag, "LockNotAcquired")
      const writing = clients[2]!.acquireWrite("doc", { ttl: 10_000, retry: { delayMillis: 5_000, times: 2 } })
      await sleep(200)
      await Promise.all(readers.map((reader) => reader.release()))
      const writer = await writing
      const reader = await rejectionOf(clients[0]!.acquireRead("doc", { ttl: 10_000, retry: "none" }))
      assert.equal(reader._tag, "LockNotAcquired")
      assert.equal(await writer.release(), "Released")
      await (await clients[0]!.acquireRead("doc", { ttl: 10_000, retry: "none" })).release()
    }, 30_000)

    it("keys of another type under the lock's name: a typed error from each such node (WrongType), and their data kept", async () => {
      const client = await manager()
      await Promise.all(
        fleet.servers.slice(0, 2).map((server) => server.call("RPUSH", "redlock:typed", "someone's", "data"))
      )
      const refused = await rejectionOf(client.acquire("typed", { ttl: 10_000, retry: "none" }))
      assert.equal(refused._tag, "LockNotAcquired")
      const outcomes = refused.outcomes as ReadonlyArray<
        { readonly _tag: string; readonly error?: Record<string, unknown> }
      >
      for (const outcome of outcomes.slice(0, 2)) {
        assert.equal(outcome._tag, "Failed", JSON.stringify(outcomes))
        assert.equal(outcome.error?._tag, "RedisNodeError")
        assert.equal(outcome.error?.reason, "WrongType")
      }
      for (const server of fleet.servers.slice(0, 2)) {
        assert.deepEqual(await server.call("LRANGE", "redlock:typed", 0, -1), ["someone's", "data"])
      }
      await sleep(50)
      assert.equal(await fleet.servers[2]!.call("EXISTS", "redlock:typed"), 0, "the one yes undone")
    })

    it(
      "a server restarted empty sits out maxTtl under the restart quarantine: refused until then, granted after",
      async () => {
        const client = await manager(nodes(), { restartQuarantine: true, maxTtlMillis: 1_000 })
        const attempt = () => client.acquire("quarantined", { ttl: 1_000, nodeTimeout: 500, retry: "none" })
        const untilGranted = async (withinMillis: number) => {
          const until = Date.now() + withinMillis
          for (;;) {
            try {
              return await (await attempt()).release()
            } catch (error) {
              if (Date.now() > until) throw error
              await sleep(50)
            }
          }
        }
        // The suite's servers were just started: they too sit out their first maxTtl.
        await untilGranted(5_000)
        const restartedAt = Date.now()
        for (const server of fleet.servers.slice(0, 2)) {
          await server.kill()
          await server.start()
        }
        let quarantined: Record<string, unknown> | undefined
        while (quarantined === undefined && Date.now() - restartedAt < 5_000) {
          const refused = await rejectionOf(attempt())
          if (String(refused.message).includes("restart quarantine")) quarantined = refused
          else await sleep(20)
        }
        assert.ok(quarantined !== undefined, "refused for the quarantine once the servers were reached again")
        assert.equal(quarantined._tag, "LockNotAcquired")
        const outcomes = quarantined.outcomes as ReadonlyArray<Record<string, unknown>>
        assert.ok(outcomes.slice(0, 2).some((outcome) => outcome._tag === "Abstained"), JSON.stringify(outcomes))
        await untilGranted(5_000)
        assert.ok(Date.now() - restartedAt >= 1_000, "not before maxTtl")
      },
      30_000
    )

    it(
      "an ACL user without pub/sub: every release says Released, and contending managers each get the lock in turn, never two at once",
      async () => {
        await Promise.all(
          fleet.servers.map((server) =>
            server.call("ACL", "SETUSER", "no-pubsub", "on", ">secret", "~*", "&*", "+@all", "-@pubsub")
          )
        )
        const deaf = {
          options: fleet.nodes.map(({ host, port }) => ({ host, port, username: "no-pubsub", password: "secret" }))
        }
        const contenders = await Promise.all([0, 1, 2].map(() => manager(deaf)))
        const statuses = new Set<string>()
        let sections = 0
        let holding = 0
        let overlaps = 0
        await Promise.all(contenders.map(async (contender) => {
          for (let round = 0; round < 4; round++) {
            // Deaf waiters poll: a short delay, and enough retries to outwait the others.
            const lock = await contender.acquire("deaf", { ttl: 10_000, retry: { delayMillis: 20, times: 500 } })
            if (++holding > 1) overlaps++
            await sleep(2)
            holding--
            statuses.add(await lock.release())
            sections++
          }
        }))
        assert.equal(sections, 12)
        assert.equal(overlaps, 0)
        assert.deepEqual([...statuses], ["Released"])
        await eventually(async () => assert.deepEqual(await keysOf("deaf"), []), 2_000, 20)
      },
      30_000
    )

    it("a node that never answers (a paused server) costs at most the node timeout: the others decide", async () => {
      const client = await manager()
      const other = await manager()
      await fleet.servers[0]!.pause()
      try {
        const started = Date.now()
        const lock = await client.acquire("paused", { ttl: 10_000, nodeTimeout: 100, retry: "none" })
        assert.ok(Date.now() - started < 2_000, `${Date.now() - started} ms`)
        const refused = await rejectionOf(other.acquire("paused", { ttl: 10_000, nodeTimeout: 100, retry: "none" }))
        assert.equal(refused._tag, "LockNotAcquired")
        assert.equal(refused.reason, "Held")
        assert.equal(await lock.release(), "Released")
      } finally {
        await fleet.servers[0]!.resume()
      }
    }, 30_000)

    it("a wrong password is a typed error on every node (Auth), and nothing is left held", async () => {
      const guarded = await startLocalFleet(3, { password: "right one" })
      try {
        const client = await manager({
          options: guarded.nodes.map(({ host, port }) => ({ host, port, password: "wrong one" }))
        })
        const refused = await rejectionOf(client.acquire("guarded", { ttl: 10_000, retry: "none" }))
        assert.equal(refused._tag, "LockNotAcquired")
        const outcomes = refused.outcomes as ReadonlyArray<
          { readonly _tag: string; readonly error?: Record<string, unknown> }
        >
        const failed = outcomes.filter((outcome) => outcome._tag === "Failed")
        assert.ok(failed.length >= 2, JSON.stringify(outcomes))
        for (const outcome of failed) assert.equal(outcome.error?.reason, "Auth", JSON.stringify(outcome))
        assert.deepEqual(await guarded.dbsizes(), [0, 0, 0])
      } finally {
        await guarded.stop()
      }
    }, 60_000)

    it(
      "a majority paused during a hold: the lock is lost at its deadline, its holder's body is told, and using rejects with LockLost (Expired)",
      async () => {
        const client = await manager()
        const started = Date.now()
        let aborted = false
        const held = client.using("paused-hold", { ttl: 500, nodeTimeout: 50, autoExtend: true }, (signal) => {
          signal.addEventListener("abort", () => void (aborted = true))
          return untilAborted(signal)
        })
        await sleep(300)
        await Promise.all(fleet.servers.slice(0, 2).map((server) => server.pause()))
        try {
          const lost = await rejectionOf(held)
          const elapsed = Date.now() - started
          assert.equal(lost._tag, "LockLost")
          assert.equal(lost.reason, "Expired")
          assert.ok(aborted, "the body's signal aborted")
          // Extended at ~250 ms, before the pause, to a deadline near 740 ms; no extension succeeds after it.
          // Loose bounds: a loaded machine delays timers, never the other way round.
          assert.ok(elapsed > 400 && elapsed < 3_000, `lost after ${elapsed} ms`)
        } finally {
          await Promise.all(fleet.servers.slice(0, 2).map((server) => server.resume()))
        }
      },
      30_000
    )

    it(
      "keys deleted behind a holder's back: its next automatic extension finds them gone, before the deadline (LockLost, NotHeld)",
      async () => {
        const client = await manager()
        const started = Date.now()
        const held = client.using("deleted", { ttl: 2_000, autoExtend: true }, untilAborted)
        await sleep(200)
        await Promise.all(fleet.servers.map((server) => server.call("DEL", "redlock:deleted")))
        const lost = await rejectionOf(held)
        const elapsed = Date.now() - started
        assert.equal(lost._tag, "LockLost")
        assert.equal(lost.reason, "NotHeld")
        // The extension at half the ttl (~1 s) hears it, well before the deadline (~1.98 s).
        assert.ok(elapsed > 900 && elapsed < 1_900, `lost after ${elapsed} ms`)
      },
      30_000
    )

    it("using releases the lock however its body ends: with its value, or with its rejection", async () => {
      const client = await manager()
      const reader = await manager()
      const value = await client.using("used", { ttl: 10_000 }, async () => {
        assert.notEqual(await reader.holder("used"), undefined, "held while the body runs")
        return 42
      })
      assert.equal(value, 42)
      await valuesBecome("redlock:used", [null, null, null])
      const failure = await rejectionOf(
        client.using("used", { ttl: 10_000 }, () => Promise.reject(new Error("the body's own")))
      )
      assert.equal(failure.message, "the body's own")
      await valuesBecome("redlock:used", [null, null, null])
    })

    it("a release after the lock ran out answers NotHeld at once, leaves nothing, and extend then says Expired", async () => {
      const client = await manager()
      const lock = await client.acquire("expired", { ttl: 100 })
      await sleep(150)
      const started = Date.now()
      assert.equal(await lock.release(), "NotHeld")
      assert.ok(Date.now() - started < 500, `release took ${Date.now() - started} ms (no retries, no waiting)`)
      assert.deepEqual(await keysOf("expired"), [])
      const lost = await rejectionOf(lock.extend(1_000))
      assert.equal(lost._tag, "LockLost")
      assert.equal(lost.reason, "Expired")
    })

    it("extend sets the new ttl on every node", async () => {
      const client = await manager()
      // A node timeout of its own: the derived 10 ms can run out on a loaded machine (this is about the ttl).
      const lock = await client.acquire("extended", { ttl: 1_000, nodeTimeout: 500 })
      await lock.extend(30_000)
      await eventually(
        async () => {
          for (const server of fleet.servers) {
            const pttl = Number(await server.call("PTTL", "redlock:extended"))
            assert.ok(pttl > 29_000 && pttl <= 30_000, `pttl ${pttl}`)
          }
        },
        2_000,
        20
      )
      assert.ok(await lock.remainingMillis() > 29_000)
    })

    it(
      "servers restarted empty under a holder: without the quarantine another client is granted the lock it holds; with it they abstain",
      async () => {
        const holder = await manager()
        const guarded = await manager(nodes(), { restartQuarantine: true, maxTtlMillis: 10_000 })
        const unguarded = await manager()
        const lock = await holder.acquire("restarted", { ttl: 10_000 })
        await valuesBecome("redlock:restarted", [lock.value, lock.value, lock.value])
        for (const server of fleet.servers.slice(0, 2)) {
          await server.kill()
          await server.start()
        }
        // The guarded manager's restarted nodes abstain, once it reached their new runs. Each probe is on a
        // resource of its own: an attempt while a user's node-redis client reconnects may leave its key on
        // that server until its ttl ends, which would hold up the next probe of the same resource.
        let probes = 0
        const refused = await eventually(
          async () => {
            const refusal = await rejectionOf(
              guarded.acquire(`restarted-probe-${++probes}`, { ttl: 10_000, nodeTimeout: 500, retry: "none" })
            )
            // A refusal may be decided before every answer came (NotAwaited), never by a restarted server's yes.
            const restarted = (refusal.outcomes as ReadonlyArray<{ readonly _tag: string }>).slice(0, 2).map((
              outcome
            ) => outcome._tag)
            assert.ok(restarted.includes("Abstained") && !restarted.includes("Ok"), String(refusal.message))
            assert.ok(String(refusal.message).includes("restart quarantine"), String(refusal.message))
            return refusal
          },
          5_000,
          50
        )
        assert.equal(refused._tag, "LockNotAcquired")
        // The hazard itself: without the quarantine the restarted servers hand the lock to a second client.
        // Once its nodes reconnected (probed as above), one attempt.
        const probe = await eventually(
          () => unguarded.acquire(`restarted-probe-${++probes}`, { ttl: 1_000, retry: "none" }),
          5_000,
          50
        )
        await probe.release()
        const second = await unguarded.acquire("restarted", { ttl: 10_000, nodeTimeout: 2_000, retry: "none" })
        assert.ok(await lock.remainingMillis() > 0, "while the first holder is still valid")
        assert.ok(await second.remainingMillis() > 0)
      },
      30_000
    )

    it(
      "servers that keep their keys (AOF, appendfsync always) vote at once after a restart, and the holder keeps its lock",
      async () => {
        const durable = await startLocalFleet(3, { persistence: true })
        try {
          const options = { options: durable.nodes.map(({ host, port }) => ({ host, port })) }
          const holder = await manager(options, { restartQuarantine: true, maxTtlMillis: 10_000 })
          const other = await manager(options, { restartQuarantine: true, maxTtlMillis: 10_000 })
          // The servers were just started: without the persistence rule every node would abstain for 10 s.
          const lock = await holder.acquire("kept", { ttl: 10_000, nodeTimeout: 500 })
          await eventually(
            async () => {
              assert.deepEqual(await Promise.all(durable.servers.map((server) => server.call("GET", "redlock:kept"))), [
                lock.value,
                lock.value,
                lock.value
              ])
            },
            2_000,
            20
          )
          for (const server of durable.servers) {
            await server.kill()
            await server.start()
          }
          // Restarted a moment ago, and counted: a free resource is granted once the nodes are reached again.
          const free = await eventually(
            () => other.acquire("free", { ttl: 1_000, nodeTimeout: 500, retry: "none" }),
            10_000,
            50
          )
          await free.release()
          const refused = await rejectionOf(other.acquire("kept", { ttl: 10_000, nodeTimeout: 500, retry: "none" }))
          assert.equal(refused._tag, "LockNotAcquired")
          assert.equal(refused.reason, "Held", "the holder's keys came back with the servers")
          const tags = (refused.outcomes as ReadonlyArray<{ readonly _tag: string }>).map((outcome) => outcome._tag)
          assert.ok(!tags.includes("Ok") && !tags.includes("Abstained"), tags.join())
          assert.ok(await lock.remainingMillis() > 0)
        } finally {
          await Promise.all(managers.splice(0).map((made) => made.close()))
          await durable.stop()
        }
      },
      60_000
    )

    it(
      "weaker persistence (appendfsync everysec) or a refused CONFIG GET keeps the quarantine, and the refusal says so",
      async () => {
        const durable = await startLocalFleet(3, { persistence: true })
        try {
          // A user that may not read the configuration: persistence unknown unless declared.
          await Promise.all(
            durable.servers.map((server) =>
              server.call("ACL", "SETUSER", "locker", "on", ">secret", "~*", "&*", "+@all", "-config")
            )
          )
          await durable.servers[0]!.call("CONFIG", "SET", "appendfsync", "everysec")
          const login = { username: "locker", password: "secret" }
          const client = await manager(
            {
              options: durable.nodes.map(({ host, port }, i) => ({
                host,
                port,
                ...(i === 0 ? {} : login),
                durable: i === 2
              }))
            },
            { restartQuarantine: true, maxTtlMillis: 10_000 }
          )
          // The servers started moments ago: 0 and 1 abstain, saying why (2 would count, but 1 of 3 is no quorum).
          const refused = await eventually(
            async () => {
              const refusal = await rejectionOf(client.acquire("weak", { ttl: 1_000, nodeTimeout: 500, retry: "none" }))
              const outcomes = refusal.outcomes as ReadonlyArray<{ readonly _tag: string }>
              assert.deepEqual(
                outcomes.slice(0, 2).map((outcome) => outcome._tag),
                ["Abstained", "Abstained"],
                String(refusal.message)
              )
              return refusal
            },
            5_000,
            50
          )
          assert.ok(
            String(refused.message).includes("restart quarantine; AOF, appendfsync everysec"),
            String(refused.message)
          )
          assert.ok(
            String(refused.message).includes("restart quarantine; persistence unknown"),
            String(refused.message)
          )
        } finally {
          await Promise.all(managers.splice(0).map((made) => made.close()))
          await durable.stop()
        }
      },
      60_000
    )

    it("on in-memory nodes too: held, refused while held, free once released", async () => {
      const memory = await manager({ memory: 3 })
      const lock = await memory.acquire("job", { ttl: 1_000 })
      const refused = await rejectionOf(memory.acquire("job", { ttl: 1_000, retry: "none" }))
      assert.equal(refused._tag, "LockNotAcquired")
      assert.equal(await memory.holder("job"), lock.value)
      assert.equal(await lock.release(), "Released")
      assert.equal(await memory.holder("job"), undefined)
    })
  })
}
