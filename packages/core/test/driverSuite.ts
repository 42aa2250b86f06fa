/**
 * What every driver's nodes do alike on real servers, once, against core:
 * options and URLs, a user's own client, a node that is down, hung or
 * restarted, scripts lost or refused, subscriptions kept and shared, and
 * managers (the promise API) over the driver's nodes. Each driver's test
 * file (drivers-*.test.ts) runs it with its driver. The Effect packages'
 * layers open their nodes through the same `NodeOptions.check` and `open`.
 */
import { afterAll, afterEach, assert, beforeAll, describe, it } from "vitest"
import { type FleetOptions, type LocalFleet, startLocalFleet } from "@effect-redlock/fleet/fleet.js"
import { eventually } from "@effect-redlock/fleet/servers.js"
import * as LiveTime from "../src/engine/liveTime.js"
import type { Node, Turn } from "../src/engine/node.js"
import { readMillis } from "../src/manager/durations.js"
import { InvalidOptions, makeNodeError, type RedisNodeError } from "../src/manager/errors.js"
import * as NodeOptions from "../src/nodes/nodeOptions.js"
import * as Scripts from "../src/nodes/scripts.js"
import {
  LockNotAcquired,
  makeRedlock,
  noRetry,
  type PromiseLock,
  type PromiseOptions,
  type PromiseRedlock,
  retry
} from "../src/Promise.js"

/** One driver of core's, and clients of the user's made with its library. */
export interface DriverUnderTest {
  readonly name: string
  readonly driver: () => Promise<NodeOptions.Driver<unknown>>
  /** A connected client of the user's for the server on `port` (closed by the suite after the test). */
  readonly userClient: (port: number, password: string | undefined, options?: UserClientOptions) => Promise<UserClient>
  /** The usual ways users make this library's clients, by name. */
  readonly clientVariants: ReadonlyArray<readonly [name: string, options: UserClientOptions]>
  /**
   * The library reconnects without telling (GLIDE): a restart is seen in the
   * answer to the first command after it, which may be a NoScript failure
   * (the script did not run).
   */
  readonly reconnectsUnseen?: boolean
}

/** How else a user makes a client: a key prefix for every key, a user name to log in with, the library's own options. */
export interface UserClientOptions {
  readonly keyPrefix?: string
  readonly username?: string
  readonly driverOptions?: Readonly<Record<string, unknown>>
}

export interface UserClient {
  readonly client: unknown
  /** What the client puts before every key ("" for none, or where its library has no key prefix). */
  readonly keyPrefix: string
  readonly isReady: () => boolean
  readonly get: (key: string) => Promise<unknown>
  /** Block this client's connection (a BLPOP of a list nobody fills) for `seconds`: its next commands wait, other connections' do not. */
  readonly blockFor: (seconds: number) => Promise<unknown>
  readonly close: () => Promise<unknown>
}

/** ioredis clients made the usual ways (iovalkey's take the same options). */
export const ioredisClientVariants: ReadonlyArray<readonly [string, UserClientOptions]> = [
  ["as made by default", {}],
  ["integers read as strings (stringNumbers)", { driverOptions: { stringNumbers: true } }],
  ["auto-pipelining", { driverOptions: { enableAutoPipelining: true } }],
  ["friendly error stacks", { driverOptions: { showFriendlyErrorStack: true } }],
  ["another database (db 3)", { driverOptions: { db: 3 } }],
  ["a key prefix", { keyPrefix: "app:" }],
  ["no offline queue", { driverOptions: { enableOfflineQueue: false } }]
]

export const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** Core's drivers, each loaded only when asked for (as a front end loads them). */
export const drivers = {
  ioredis: async () => (await import("../src/nodes/ioredis/driver.js")).driver as NodeOptions.Driver<unknown>,
  iovalkey: async () => (await import("../src/nodes/iovalkey/driver.js")).driver as NodeOptions.Driver<unknown>,
  nodeRedis: async () => (await import("../src/nodes/nodeRedis/driver.js")).driver as NodeOptions.Driver<unknown>,
  glide: async () => (await import("../src/nodes/glide/driver.js")).driver as NodeOptions.Driver<unknown>
}

/** How a promise ended: its value, or its rejection. */
export const settled = <A>(promise: Promise<A>): Promise<A | unknown> =>
  promise.then((value) => value, (error: unknown) => error)

const time = LiveTime.make(0)

/** What a test opened, closed after it, last first (a test that failed half-way leaves nothing open). */
export const Cleanup = {
  pending: [] as Array<() => Promise<unknown>>,
  add<A>(close: () => Promise<unknown>, value: A): A {
    Cleanup.pending.push(close)
    return value
  },
  async run(): Promise<void> {
    for (const close of Cleanup.pending.splice(0).reverse()) await close().catch(() => {})
  }
}

/**
 * A fleet of `n` local servers for the enclosing describe: started before
 * its tests, stopped after them; what each test opened is closed after it
 * (`Cleanup`). The fleet is read through the returned function once started.
 */
export const localFleet = (n: number, options?: FleetOptions): () => LocalFleet => {
  let fleet: LocalFleet | undefined
  beforeAll(async () => {
    fleet = await startLocalFleet(n, options)
  })
  afterEach(() => Cleanup.run())
  afterAll(() => fleet?.stop())
  return () => fleet!
}

/** Sections that overlap in time, of those recorded. */
export const overlapping = <S extends { readonly start: number; readonly end: number }>(
  sections: ReadonlyArray<S>
): ReadonlyArray<S> => {
  const inOrder = [...sections].sort((a, b) => a.start - b.start)
  return inOrder.filter((section, index) => index > 0 && section.start < inOrder[index - 1].end)
}

/** Nodes over `driver` as a front end opens them: the list checked, each node checked before any connection, then opened. */
export const openNodes = async (
  driver: NodeOptions.Driver<unknown>,
  list: ReadonlyArray<unknown>
): Promise<Array<Node>> => {
  const problem = NodeOptions.listProblem(list)
  if (problem !== undefined) throw new InvalidOptions(problem.option, problem.detail)
  const checked = list.map((options) => {
    const node = NodeOptions.check(driver, options, { millis: readMillis, password: () => undefined })
    if ("option" in node) throw new InvalidOptions(node.option, node.detail)
    return node
  })
  const opened = await Promise.all(checked.map((node) => NodeOptions.open(driver, node, makeNodeError, time.now)))
  return opened.map((node) => Cleanup.add(node.close, node.node))
}

/** A closed scope of its own: nodes opened now, and a function that closes them. */
export const openNodesApart = async (driver: NodeOptions.Driver<unknown>, list: ReadonlyArray<unknown>) => {
  const before = Cleanup.pending.length
  const nodes = await openNodes(driver, list)
  const closers = Cleanup.pending.splice(before)
  return { nodes, close: () => Promise.all(closers.map((close) => close())).then(() => {}) }
}

/** A manager over `nodes` (engine nodes, or options of the promise API), closed after the test; quarantine off (fresh servers). */
export const managerOver = async (
  nodes: ReadonlyArray<unknown>,
  options: PromiseOptions = {}
): Promise<PromiseRedlock> => {
  const redlock = await makeRedlock(nodes as never, { restartQuarantine: false, ...options })
  return Cleanup.add(() => redlock.close(), redlock)
}

/** A retry that never comes within a test: only a wake can explain an acquisition. */
export const slowRetry = retry({ delay: 10_000, times: 5, jitter: { min: 1, max: 1 } })

/** What happens just before the release, and the release (by default the holder's own). */
export interface ReleaseHooks {
  readonly beforeRelease?: () => Promise<unknown>
  /** Another process's release (a script on the test's own connections), where only the channel may tell. */
  readonly release?: (held: PromiseLock) => Promise<unknown>
}

/** Holds `key` from `holder`, lets `waiter` wait past its first renewal, releases: the milliseconds until it acquired. */
export const wokenAfterRelease = async (
  holder: PromiseRedlock,
  waiter: PromiseRedlock,
  key: string,
  hooks: ReleaseHooks = {}
): Promise<number> => {
  const held = await holder.acquire(key, { ttl: 10_000 })
  // A node timeout a loaded machine meets: with the 10 s ttl's default one late answer refuses the woken attempt.
  const waiting = waiter.acquire(key, { ttl: 10_000, retry: slowRetry, nodeTimeout: 1_000 }).then((lock) => ({
    lock,
    at: performance.now()
  }))
  // Past the renewal of the place taken by the first attempt (~350 ms): the next attempt on its own is 10 s away.
  await sleep(1_000)
  await hooks.beforeRelease?.()
  const released = performance.now()
  if (hooks.release !== undefined) await hooks.release(held)
  else assert.strictEqual((await holder.release(held)).status, "Released")
  const timeout = sleep(5_000).then(() => {
    throw new Error("not woken within 5 s")
  })
  const acquired = await Promise.race([waiting, timeout])
  await waiter.release(acquired.lock)
  return acquired.at - released
}

/** An ACL user on every server of the fleet until the test ends: `rules` follow `on >password ~* &* +@all`. */
export const aclUser = async (
  fleet: LocalFleet,
  username: string,
  password: string,
  ...rules: ReadonlyArray<string>
) => {
  await Promise.all(
    fleet.servers.map((server) =>
      server.call("ACL", "SETUSER", username, "on", `>${password}`, "~*", "&*", "+@all", ...rules)
    )
  )
  Cleanup.add(() => Promise.all(fleet.servers.map((server) => server.call("ACL", "DELUSER", username))), undefined)
}

/** Until no server holds a key (a release returns at a quorum; the others' deletes land just after), at most 2 s. */
export const expectEmpty = (fleet: LocalFleet) =>
  eventually(async () => assert.deepStrictEqual(await fleet.dbsizes(), fleet.servers.map(() => 0)), 2_000, 20)

/** The rejection of `promise` (a test fails if it resolves). */
export const rejectionOf = async (promise: Promise<unknown>): Promise<unknown> => {
  const outcome = await promise.then(() => ({ resolved: true }), (error: unknown) => ({ resolved: false, error }))
  assert.isFalse(outcome.resolved, "expected a rejection")
  return (outcome as { readonly error: unknown }).error
}

/** The driver's behaviours, on a fleet of two servers whose password is "s3cret". */
export const driverSuite = (under: DriverUnderTest) =>
  describe(`${under.name}: node options and nodes`, () => {
    const fleetOf = localFleet(2, { password: "s3cret" })
    let fleet: LocalFleet
    let driver: NodeOptions.Driver<unknown>
    beforeAll(async () => {
      fleet = fleetOf()
      driver = await under.driver()
    })

    const userClient = async (port: number, options?: UserClientOptions) => {
      const user = await under.userClient(port, "s3cret", options)
      return Cleanup.add(user.close, user)
    }

    it("a node from a URL carrying the password; its name never shows the password", async () => {
      const port = fleet.servers[0].port
      const [node] = await openNodes(driver, [{ url: `redis://:s3cret@127.0.0.1:${port}` }])
      assert.strictEqual(node.name, `127.0.0.1:${port}`)
      assert.isTrue(await node.promises.acquire(["k"], "v", 1_000))
      assert.strictEqual(await node.promises.release(["k"], "v", true), 1)
    })

    it("maxPendingCommands below 1 or not whole is InvalidOptions", async () => {
      for (const maxPendingCommands of [0, 1.5, -3]) {
        const error = await rejectionOf(openNodes(driver, [{ ...fleet.nodes[0], maxPendingCommands }]))
        assert.instanceOf(error, InvalidOptions)
        assert.include((error as InvalidOptions).message, "maxPendingCommands")
      }
    })

    it("a node list that is none, a node that is no object, a bad host, port or connectTimeout: InvalidOptions naming it", async () => {
      const cases: ReadonlyArray<[unknown, string, RegExp]> = [
        ["redis://127.0.0.1", "nodes", /expected an array .*got "redis:\/\/127\.0\.0\.1" \(a URL goes as \{ url \}\)$/],
        [[null], "nodes", /a node must be .*got null$/],
        [[5], "nodes", /got 5$/],
        [[{ ...fleet.nodes[0], port: "6379" }], "port", /got "6379"$/],
        [[{ ...fleet.nodes[0], port: 70_000 }], "port", /got 70000$/],
        [[{ ...fleet.nodes[0], host: "" }], "host", /got ""$/],
        [
          [{ ...fleet.nodes[0], host: "redis://app:s3cret@127.0.0.1" }],
          "host",
          /got "redis:\/\/\*\*\*@127\.0\.0\.1" \(a URL goes as \{ url \}\)$/
        ],
        [[{ ...fleet.nodes[0], connectTimeout: "soon" }], "connectTimeout", /got "soon"$/]
      ]
      for (const [nodes, option, detail] of cases) {
        const error = await rejectionOf(openNodes(driver, nodes as ReadonlyArray<unknown>))
        assert.instanceOf(error, InvalidOptions)
        assert.strictEqual((error as InvalidOptions).option, option)
        assert.match((error as InvalidOptions).detail, detail)
      }
    })

    it("a malformed URL is InvalidOptions, without the password", async () => {
      const error = await rejectionOf(openNodes(driver, [{ url: "http://user:s3cret@127.0.0.1:1" }]))
      assert.instanceOf(error, InvalidOptions)
      assert.strictEqual((error as InvalidOptions).option, "url")
      assert.notInclude((error as InvalidOptions).message, "s3cret")
    })

    it("a server that stops answering holds at most maxPendingCommands commands; the next fail at once", async () => {
      const server = fleet.servers[1]
      const [node] = await openNodes(driver, [{ ...fleet.nodes[1], maxPendingCommands: 2 }])
      await server.pause()
      Cleanup.add(() => server.resume(), undefined)
      const waiting = [node.promises.inspect("a"), node.promises.inspect("b")]
      const started = performance.now()
      const refused = await rejectionOf(node.promises.inspect("c")) as RedisNodeError
      assert.isBelow(performance.now() - started, 100, "at once, without waiting for the server")
      assert.strictEqual(refused.reason, "Unavailable")
      assert.include(refused.detail, "2 commands wait for an answer")
      await server.resume()
      await Promise.all(waiting)
      assert.isUndefined((await node.promises.inspect("c")).value, "answering again, it takes commands again")
    })

    it("a one-key acquire refused by its SET sends nothing more once a later operation on the same key and value was sent", async () => {
      const [node] = await openNodes(driver, [fleet.nodes[0]])
      const promises = node.promises
      await promises.acquire(["probed"], "other", 10_000)
      // All on the node's one connection, in this order: the SET NX (refused: "other" holds the key), then
      // other's release and our leaving, both before the SET's answer can come back.
      const acquired = promises.acquire(["probed"], "ours", 10_000)
      const released = promises.release(["probed"], "other", true)
      const left = promises.release(["probed"], "ours", false)
      assert.deepStrictEqual(await Promise.all([acquired, released, left]), [false, 1, 0])
      await sleep(50)
      // Before: the script that follows a refused SET went out after the leaving, found the key free, and set it.
      assert.isUndefined((await promises.inspect("probed")).value, "no key left behind")
    })

    it("a client the user owns is used as it is and left open", async () => {
      const user = await userClient(fleet.servers[1].port)
      const { nodes: [node], close } = await openNodesApart(driver, [{ client: user.client, name: "mine" }])
      assert.strictEqual(node.name, "mine")
      assert.isTrue(await node.promises.acquire(["k"], "v", 1_000))
      await close()
      assert.isTrue(user.isReady(), "still connected")
      assert.strictEqual(await user.get("k"), "v")
    })

    it("users' clients made the usual ways: a lock extended, inspected and released, a permit, and a waiter woken by the release", async () => {
      for (const [variant, options] of under.clientVariants) {
        const user = await userClient(fleet.servers[0].port, options)
        const redlock = await managerOver(await openNodes(driver, [{ client: user.client }]))
        const resource = `variant ${variant}`
        const lock = await redlock.acquire(resource, { ttl: 10_000 })
        const extended = await redlock.extend(lock, 20_000)
        const seen = await redlock.inspect(resource)
        assert.strictEqual(seen.holder, lock.value, variant)
        assert.isAbove(seen.ttlMillis!, 10_000, variant)
        assert.strictEqual((await redlock.release(extended)).status, "Released", variant)
        const permit = await redlock.acquirePermit(resource, { ttl: 10_000, limit: 2 })
        assert.strictEqual((await redlock.release(permit)).status, "Released", variant)
        const woken = await wokenAfterRelease(redlock, redlock, `${resource} wake`)
        assert.isBelow(woken, 1_000, `${variant}: woken ${Math.round(woken)} ms after the release`)
      }
    })

    it("a user's client with a key prefix: lock keys carry it, and waiters hear releases from this process's answer and over the channel", async () => {
      const port = fleet.servers[0].port
      // Clients that share no release subscriber (the other logs in by user name): the holder's releases
      // reach the other manager's waiters over the channel only.
      const holderClient = await userClient(port, { keyPrefix: "app:" })
      const otherClient = await userClient(port, { keyPrefix: "app:", username: "default" })
      const holder = await managerOver(await openNodes(driver, [{ client: holderClient.client }]))
      const other = await managerOver(await openNodes(driver, [{ client: otherClient.client }]))
      // The waiters retry only after 10 s: sooner, the release woke them.
      for (const [heardBy, waiter] of [["the release's answer", holder], ["the channel", other]] as const) {
        const woken = await wokenAfterRelease(holder, waiter, `prefixed by ${heardBy}`)
        assert.isBelow(woken, 1_000, `woken by ${heardBy}`)
      }
      // The lock key is where the client's own commands put keys.
      const lock = await holder.acquire("prefixed", { ttl: 10_000 })
      assert.strictEqual(await fleet.servers[0].call("GET", `${holderClient.keyPrefix}redlock:prefixed`), lock.value)
      await holder.release(lock)
    })

    it("one server listed twice (the same host and port, by URL or fields, any db; one client twice): InvalidOptions before connecting", async () => {
      const port = fleet.servers[0].port
      const user = await userClient(port)
      const lists: ReadonlyArray<[ReadonlyArray<unknown>, RegExp]> = [
        [
          [fleet.nodes[0], fleet.nodes[1], fleet.nodes[0]],
          new RegExp(`^nodes 0 and 2 are one server \\(127\\.0\\.0\\.1:${port}\\)`)
        ],
        [[fleet.nodes[0], { url: `redis://:s3cret@127.0.0.1:${port}/3` }], /^nodes 0 and 1 are one server/],
        [[{ url: `redis://:s3cret@127.0.0.1:${port}` }, { ...fleet.nodes[0], db: 1 }], /^nodes 0 and 1 are one server/],
        [
          [{ client: user.client }, fleet.nodes[1], { client: user.client, name: "again" }],
          /^nodes 0 and 2 are one server \(the same client\)/
        ]
      ]
      for (const [nodes, detail] of lists) {
        const error = await rejectionOf(openNodes(driver, nodes))
        assert.instanceOf(error, InvalidOptions)
        assert.strictEqual((error as InvalidOptions).option, "nodes")
        assert.match((error as InvalidOptions).detail, detail)
      }
    })

    it("two nodes that are one server by other names vote once: the later abstains, and the manager says so at start", async () => {
      // Two clients of the user's to one server: nothing in the options tells them apart.
      const first = await userClient(fleet.servers[0].port)
      const second = await userClient(fleet.servers[0].port)
      const logged: Array<string> = []
      const logger = { warn: (message: string) => void logged.push(message) }
      const once = { retry: noRetry, ttl: 10_000 } as const

      const twice = await managerOver(
        await openNodes(driver, [{ client: first.client, name: "a" }, { client: second.client, name: "a again" }]),
        { logger }
      )
      assert.strictEqual(logged.length, 1)
      assert.match(
        logged[0],
        /^effect-redlock: 1 of 2 nodes do not vote \(a again: the same server as a \(run_id [0-9a-f]{40}\)/
      )
      assert.include(logged[0], "1 vote, 2 needed: every acquisition fails. List each Redis server once")
      const refused = await rejectionOf(twice.acquire("alone", once)) as LockNotAcquired
      assert.instanceOf(refused, LockNotAcquired)
      // Decided as soon as the later node abstains: the first one's yes may not have been awaited yet.
      const awaitedOrNot = (tag: string) => tag === "NotAwaited" ? "Ok" : tag
      assert.deepStrictEqual(refused.outcomes.map((outcome) => awaitedOrNot(outcome._tag)), ["Ok", "Abstained"])
      assert.instanceOf(
        await rejectionOf(twice.acquirePermit("slots", { ...once, limit: 2 })),
        LockNotAcquired,
        "a permit's vote too"
      )

      // With a third server: b's key is someone else's, so only a votes yes. Counted twice, a alone was a majority.
      const three = await managerOver(
        await openNodes(driver, [{ client: first.client }, { client: second.client }, fleet.nodes[1]]),
        { logger }
      )
      const [onB] = await openNodes(driver, [fleet.nodes[1]])
      assert.isTrue(await onB.promises.acquire(["redlock:shared"], "someone else", 10_000))
      const held = await rejectionOf(three.acquire("shared", once)) as LockNotAcquired
      assert.deepStrictEqual(
        held.outcomes.map((outcome) => awaitedOrNot(outcome._tag)),
        ["Ok", "Abstained", "Held"],
        held.message
      )
      // And a free resource is granted by a and b: the one server listed twice costs no liveness beyond its one vote.
      const free = await three.acquire("free", once)
      const granted = free.outcomes.map((outcome) => outcome._tag)
      await three.release(free)
      assert.deepStrictEqual([granted[0], granted[2]], ["Ok", "Ok"])
      assert.oneOf(
        granted[1],
        ["Abstained", "NotAwaited"],
        "its answer counts for nothing, if it came before the quorum"
      )

      // A release is no vote: on one server, whichever of its nodes runs it first deletes the key, here the second.
      const lock = await three.acquire("released", once)
      const blocked = first.blockFor(0.2)
      const released = await three.release(lock)
      assert.strictEqual(released.status, "Released", JSON.stringify(released.outcomes))
      assert.deepStrictEqual(released.outcomes.slice(1).map((outcome) => outcome._tag), ["Ok", "Ok"])
      await blocked

      // Inspecting reads each server once: a key on that one server alone is held by nobody.
      const [onA] = await openNodes(driver, [fleet.nodes[0]])
      assert.isTrue(await onA.promises.acquire(["redlock:stray"], "left over", 10_000))
      assert.isNull((await three.inspect("stray")).holder, "not held on a majority of the servers")
    })

    it("a server that may evict keys (maxmemory, an evicting policy) is named by a warning at start; noeviction is not", async () => {
      const server = fleet.servers[1]
      await server.call("CONFIG", "SET", "maxmemory", "100mb", "maxmemory-policy", "volatile-ttl")
      Cleanup.add(() => server.call("CONFIG", "SET", "maxmemory", "0", "maxmemory-policy", "noeviction"), undefined)
      const logged: Array<string> = []
      const start = async () => {
        const { nodes, close } = await openNodesApart(driver, [fleet.nodes[0], fleet.nodes[1]])
        await (await makeRedlock(nodes, {
          restartQuarantine: false,
          logger: { warn: (message) => void logged.push(message) }
        })).close()
        await close()
      }
      await start()
      assert.strictEqual(logged.length, 1, logged.join("\n"))
      assert.match(
        logged[0],
        new RegExp(
          `^effect-redlock: 1 of 2 nodes may evict keys \\(127\\.0\\.0\\.1:${server.port}: maxmemory 100\\.00M with maxmemory-policy volatile-ttl`
        )
      )
      assert.include(logged[0], "set maxmemory-policy noeviction on lock servers")
      await server.call("CONFIG", "SET", "maxmemory-policy", "noeviction")
      await start()
      assert.strictEqual(logged.length, 1, "a full server that refuses writes loses no held key")
    })

    it("a node that never answered at start-up is Unavailable at once, and joins when it comes up", async () => {
      const server = fleet.servers[0]
      await server.kill()
      Cleanup.add(() => server.start(), undefined)
      const [node] = await openNodes(driver, [{ ...fleet.nodes[0], connectTimeout: 100 }])
      const error = await rejectionOf(node.promises.acquire(["k"], "v", 1_000)) as RedisNodeError
      assert.strictEqual(error.reason, "Unavailable")
      await server.start()
      const joined = await eventually(() => node.promises.acquire(["k"], "v", 1_000), 5_000, 50)
      assert.isTrue(joined)
    })

    it("a server that refuses the connection does not hold the opening up for its connect timeout", async () => {
      const server = fleet.servers[0]
      await server.kill()
      Cleanup.add(() => server.start(), undefined)
      const started = performance.now()
      const [node] = await openNodes(driver, [{ ...fleet.nodes[0], connectTimeout: 3_000 }])
      const built = performance.now() - started
      assert.strictEqual(node.run()._tag, "Unknown")
      assert.isBelow(built, 1_500, `opened in ${Math.round(built)} ms; the connect timeout is 3 s`)
    })

    it("a key watched again and again keeps its one subscription; it is dropped a second after the last watch", async () => {
      const server = fleet.servers[0]
      const [node] = await openNodes(driver, [fleet.nodes[0]])
      const commandCalls = async (name: string) =>
        Number(
          new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(String(await server.call("INFO", "commandstats")))?.[1] ?? 0
        )
      const subscribesBefore = await commandCalls("subscribe")
      const unsubscribesBefore = await commandCalls("unsubscribe")
      // Watched for 100 ms out of every 400, for 2 s: never unwatched for a whole second.
      for (let i = 0; i < 5; i++) {
        const watch = node.watchReleasesNow!("turns", () => {})
        await watch.ready
        await sleep(100)
        watch.stop()
        await sleep(300)
      }
      assert.strictEqual((await commandCalls("subscribe")) - subscribesBefore, 1)
      assert.strictEqual((await commandCalls("unsubscribe")) - unsubscribesBefore, 0)
      await sleep(1_200)
      assert.strictEqual(
        (await commandCalls("unsubscribe")) - unsubscribesBefore,
        1,
        "unsubscribed once nobody watched for a second"
      )
    })

    it("lock managers of one process share one subscriber connection per server, until the last one closes", async () => {
      const server = fleet.servers[0]
      const subscribers = async () =>
        String(await server.call("CLIENT", "LIST", "TYPE", "pubsub")).split("\n").filter((line) => line.trim() !== "")
          .length
      const first = await openNodesApart(driver, [fleet.nodes[0]])
      const second = await openNodesApart(driver, [fleet.nodes[0]])
      Cleanup.add(() => Promise.all([first.close(), second.close()]), undefined)
      const heardA: Array<string | null> = []
      const heardB: Array<string | null> = []
      const watchA = first.nodes[0].watchReleasesNow!("shared", (next) => void heardA.push(next))
      const watchB = second.nodes[0].watchReleasesNow!("shared", (next) => void heardB.push(next))
      await Promise.all([watchA.ready, watchB.ready])
      assert.strictEqual(await subscribers(), 1, "one subscriber for both managers")
      // The nodes that opened the connection go away; the others still hear releases.
      watchA.stop()
      await first.close()
      await server.call("PUBLISH", `${Scripts.releaseChannelPrefix}shared`, "next-waiter")
      await sleep(100)
      assert.deepStrictEqual(heardA, [])
      assert.deepStrictEqual(heardB, ["next-waiter"])
      assert.strictEqual(await subscribers(), 1)
      watchB.stop()
      await second.close()
      await sleep(100)
      assert.strictEqual(await subscribers(), 0, "closed with the last one")
    })

    it("a release tells this process's watchers what it announced from its own answer: before it is answered, even where pub/sub is refused, and once", async () => {
      const slots = [0, 1].map((index) => `told\u0000permit${index}`)
      // Tickets in the recent past, in order (a node bounds them by its own time).
      const turn = (order: number): Turn => ({ ticket: Date.now() - 1_000 + order, leaseMillis: 10_000, setting: "2" })
      // Both slots held and a waiter in line; the release of slot 0 hands it over. What the watcher had heard
      // when the release was answered, and 200 ms later.
      const handOver = async (node: Node) => {
        const heard: Array<string | null> = []
        const watch = node.watchReleasesNow!("told\u0000permit", (next) => void heard.push(next))
        await watch.ready
        const promises = node.promises
        assert.strictEqual((await promises.acquireSlot(slots, "a.5000.2", 5_000, turn(1)))._tag, "Granted")
        assert.strictEqual((await promises.acquireSlot(slots, "b.5000.2", 5_000, turn(2)))._tag, "Granted")
        assert.strictEqual((await promises.acquireSlot(slots, "w.5000.2", 5_000, turn(3)))._tag, "Held")
        const whenAnswered = await promises.release([slots[0]], "a.5000.2", true).then(() => [...heard])
        await sleep(200)
        watch.stop()
        await promises.release(slots, "w.5000.2", false)
        await promises.release(slots, "b.5000.2", false)
        return { whenAnswered, later: heard }
      }
      const [node] = await openNodes(driver, [fleet.nodes[0]])
      const hearing = await handOver(node)
      assert.deepStrictEqual(
        hearing.whenAnswered,
        ["w.5000.2/0"],
        "told from the answer, before the caller heard of it"
      )
      assert.deepStrictEqual(hearing.later, ["w.5000.2/0"], "the channel's copy is not told again")
      await aclUser(fleet, "told-deaf", "secret", "-@pubsub")
      const [deaf] = await openNodes(driver, [{ ...fleet.nodes[0], username: "told-deaf", password: "secret" }])
      const deafHearing = await handOver(deaf)
      assert.deepStrictEqual(
        deafHearing.whenAnswered,
        ["w.5000.2/0"],
        "the server refuses PUBLISH and SUBSCRIBE: the answer tells"
      )
      assert.deepStrictEqual(deafHearing.later, ["w.5000.2/0"])
    })

    it("closing nodes does not wait for a hung server (a polite close is given up on after 1 s)", async () => {
      const server = fleet.servers[1]
      const { nodes: [node], close } = await openNodesApart(driver, [fleet.nodes[1]])
      assert.strictEqual(node.run()._tag, "Known", "identified at start-up")
      await server.pause()
      Cleanup.add(() => server.resume(), undefined)
      // A command the hung server will not answer: a polite close (QUIT, or waiting for the replies) waits for it.
      node.promises.inspect("k").catch(() => {})
      const started = performance.now()
      await close()
      const elapsed = performance.now() - started
      await server.resume()
      assert.isAtLeast(elapsed, 900, "the polite close was tried")
      assert.isBelow(elapsed, 3000, `closing took ${Math.round(elapsed)} ms`)
    })

    it("scripts lost (SCRIPT FLUSH): NOSCRIPT means 'did not run', nothing is sent again out of order, the scripts are loaded again", async () => {
      await fleet.reset()
      const server = fleet.servers[0]
      const [node] = await openNodes(driver, [fleet.nodes[0]])
      await server.call("SCRIPT", "FLUSH")
      // A refused attempt's undo, then the next attempt on the same node, sent back to back as the engine sends them.
      const [undone, taken] = await Promise.allSettled([
        node.promises.release(["k"], "v", false, true),
        node.promises.acquire(["k"], "v", 10_000)
      ])
      const held = await server.call("GET", "k")
      assert.strictEqual(
        taken.status === "fulfilled" && taken.value === true,
        held === "v",
        `the node's answer to the acquire (${JSON.stringify(taken)}) must match what the server holds (${held})`
      )
      assert.strictEqual(undone.status, "rejected")
      assert.strictEqual((undone as PromiseRejectedResult).reason.reason, "NoScript")
      // The NOSCRIPT reply loaded the scripts again, ahead of the next command.
      assert.isTrue(await node.promises.acquire(["k"], "v", 10_000))
      assert.strictEqual(await node.promises.release(["k"], "v", true), 1)
    })

    it("a restarted server (its scripts gone) is given them again before any command of ours", async () => {
      const server = fleet.servers[0]
      const [node] = await openNodes(driver, [fleet.nodes[0]])
      await server.kill()
      await server.start()
      // The first answer after the reconnection, once the node is no longer Unavailable.
      const first = await eventually(
        async () => {
          const answer = await settled(node.promises.inspect("k"))
          assert.notStrictEqual((answer as { readonly reason?: unknown }).reason, "Unavailable")
          return answer
        },
        5_000,
        20
      )
      const unseen = under.reconnectsUnseen === true && (first as { readonly reason?: unknown }).reason === "NoScript"
      assert.notInstanceOf(unseen ? await settled(node.promises.inspect("k")) : first, Error, String(first))
      // A driver whose reconnects go unseen reads the clock in its marks (quietConnection.ts): its votes go untimed.
      const nodeScripts = Scripts.nodeScripts(under.reconnectsUnseen !== true)
      const loaded = await server.call("SCRIPT", "EXISTS", ...nodeScripts.map((script) => script.sha))
      assert.deepStrictEqual(loaded, nodeScripts.map(() => 1))
    })

    it("where an ACL refuses SCRIPT LOAD, scripts are sent whole (EVAL) and locks work", async () => {
      await fleet.reset()
      const server = fleet.servers[1]
      await server.call("SCRIPT", "FLUSH")
      await aclUser(fleet, "evalonly", "pw", "-script|load")
      const [node] = await openNodes(driver, [{ ...fleet.nodes[1], username: "evalonly", password: "pw" }])
      assert.isTrue(await node.promises.acquire(["k"], "v", 10_000))
      assert.strictEqual(await node.promises.release(["k"], "v", true), 1)
      assert.strictEqual(await server.call("GET", "k"), null)
    })
  })

/**
 * Locks over the driver's nodes on three servers: managers contending never
 * overlap and leave nothing behind, and a waiter is woken by the release,
 * not by its next poll; over connections of ours, and over clients of the
 * user's (made as by default). The holders use connections of their own.
 */
export const lockSuite = (under: DriverUnderTest) =>
  describe(`${under.name}: locks over its nodes, 3 redis-servers`, () => {
    const fleetOf = localFleet(3)
    let fleet: LocalFleet
    let driver: NodeOptions.Driver<unknown>
    beforeAll(async () => {
      fleet = fleetOf()
      driver = await under.driver()
    })

    const reaches: ReadonlyArray<readonly [string, () => Promise<ReadonlyArray<unknown>>]> = [
      ["connections of ours", async () => fleet.nodes],
      ["users' clients", () =>
        Promise.all(fleet.servers.map(async (server) => {
          const user = await under.userClient(server.port, undefined)
          return Cleanup.add(user.close, { client: user.client })
        }))]
    ]

    for (const [reach, options] of reaches) {
      it(`${reach}: managers contending never overlap, and leave nothing behind`, async () => {
        await fleet.reset()
        const managers = [
          await managerOver(await openNodes(driver, fleet.nodes)),
          await managerOver(await openNodes(driver, fleet.nodes)),
          await managerOver(await openNodes(driver, await options()))
        ]
        const sections: Array<{ readonly start: number; readonly end: number }> = []
        const turns = retry({ delay: 20, times: 500 })
        await Promise.all(managers.map(async (redlock) => {
          for (let turn = 0; turn < 10; turn++) {
            const lock = await redlock.acquire("turns", { ttl: 10_000, retry: turns })
            const start = performance.now()
            await sleep(2)
            sections.push({ start, end: performance.now() })
            assert.strictEqual((await redlock.release(lock)).status, "Released")
          }
        }))
        assert.strictEqual(sections.length, 30)
        assert.deepStrictEqual(overlapping(sections), [])
        await expectEmpty(fleet)
      })

      it(`${reach}: a waiter is woken by the release, not by its next poll`, async () => {
        await fleet.reset()
        const holder = await managerOver(await openNodes(driver, fleet.nodes))
        const waiter = await managerOver(await openNodes(driver, await options()))
        const wokenAfter = await wokenAfterRelease(holder, waiter, "woken")
        assert.isBelow(wokenAfter, 500, `woken ${Math.round(wokenAfter)} ms after the release`)
        await expectEmpty(fleet)
      })
    }
  })
