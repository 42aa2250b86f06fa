/**
 * What every driver's nodes do alike on real servers (RedisNode/Ioredis,
 * RedisNode/NodeRedis): options and URLs, a user's own client, a node that
 * is down, hung or restarted, scripts lost or refused, subscriptions kept
 * and shared. Each driver's test file runs it with its driver.
 */
import { assert } from "@effect/vitest"
import { ConfigError, ConfigProvider, Context, Duration, Effect, Exit, Layer, Logger, Option, Redacted, Schedule, Scope } from "effect"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import type * as DriverNodes from "../src/internal/driverNodes.js"
import * as Scripts from "@effect-redlock/core/nodes/scripts.js"
import * as Redlock from "../src/Redlock.js"
import * as RedisNode from "../src/RedisNode.js"
import { InvalidOptions, LockNotAcquired } from "../src/RedlockError.js"
import { aclUser, effectsOf, expectEmpty, failureOf, type TestNode, overlaps, recordSection, type Section, wokenAfterRelease } from "./support.js"

/** One driver's public node module, and a client of the user's made with it. */
export interface DriverUnderTest<Client> {
  readonly layer: (nodes: ReadonlyArray<DriverNodes.NodeOptions<Client>>) => Layer.Layer<RedisNode.RedisNodes, InvalidOptions>
  readonly layerConfig: () => Layer.Layer<RedisNode.RedisNodes, unknown>
  /** A connected client of the user's for the server on `port`, closed with the scope. */
  readonly userClient: (port: number, password: string, options?: UserClientOptions) => Effect.Effect<UserClient<Client>, never, Scope.Scope>
  /** The usual ways users make this library's clients, by name: options the client is made with (`driverOptions`). */
  readonly clientVariants: ReadonlyArray<readonly [name: string, options: UserClientOptions]>
}

/** How else a user makes a client: a key prefix for every key, a user name to log in with, the library's own options. */
export interface UserClientOptions {
  readonly keyPrefix?: string
  readonly username?: string
  readonly driverOptions?: Readonly<Record<string, unknown>>
}

export interface UserClient<Client> {
  readonly client: Client
  /** What the client puts before every key ("" for none, or where its library has no key prefix). */
  readonly keyPrefix: string
  readonly isReady: () => boolean
  readonly get: (key: string) => Promise<unknown>
  /** Block this client's connection (a BLPOP of a list nobody fills) for `seconds`: its next commands wait, other connections' do not. */
  readonly blockFor: (seconds: number) => Promise<unknown>
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

/** The nodes of a layer, built in the current scope. */
export const rawNodesOf = (nodesLayer: Layer.Layer<RedisNode.RedisNodes, unknown>) =>
  Effect.map(Layer.build(nodesLayer), (context) => Context.get(context, RedisNode.RedisNodes))

/** The nodes of a layer, built in the current scope, their operations as effects (support.ts `effectsOf`). */
export const nodesOf = (nodesLayer: Layer.Layer<RedisNode.RedisNodes, unknown>) => Effect.map(rawNodesOf(nodesLayer), (nodes) => nodes.map(effectsOf))

type It = {
  readonly scoped: (name: string, self: () => Effect.Effect<void, unknown, Scope.Scope | RedisFleet.RedisFleet>) => void
}

/** The suite, on a fleet of two servers whose password is "s3cret". */
export const driverSuite = <Client>(it: It, driver: DriverUnderTest<Client>) => {
    it.scoped("a node from a URL carrying the password; its name never shows the password", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const port = fleet.servers[0].port
        const [node] = yield* nodesOf(driver.layer([{ url: `redis://:s3cret@127.0.0.1:${port}` }]))
        assert.strictEqual(node.name, `127.0.0.1:${port}`)
        assert.isTrue(yield* node.acquire(["k"], "v", 1_000))
        assert.strictEqual(yield* node.release(["k"], "v", true), 1)
      }))

    it.scoped("maxPendingCommands below 1 or not whole is InvalidOptions", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        for (const maxPendingCommands of [0, 1.5, -3]) {
          const error = failureOf(yield* Effect.exit(nodesOf(driver.layer([{ ...fleet.nodes[0], maxPendingCommands }]))))
          assert.instanceOf(error, InvalidOptions)
          assert.include((error as InvalidOptions).message, "maxPendingCommands")
        }
      }))

    it.scoped("a node list that is none, a node that is no object, a bad host, port or connectTimeout: InvalidOptions naming it, no defect", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const cases: ReadonlyArray<[unknown, string, RegExp]> = [
          ["redis://127.0.0.1", "nodes", /expected an array .*got "redis:\/\/127\.0\.0\.1" \(a URL goes as \{ url \}\)$/],
          [[null], "nodes", /a node must be .*got null$/],
          [[5], "nodes", /got 5$/],
          [[{ ...fleet.nodes[0], port: "6379" }], "port", /got "6379"$/],
          [[{ ...fleet.nodes[0], port: 70_000 }], "port", /got 70000$/],
          [[{ ...fleet.nodes[0], host: "" }], "host", /got ""$/],
          [[{ ...fleet.nodes[0], host: "redis://app:s3cret@127.0.0.1" }], "host", /got "redis:\/\/\*\*\*@127\.0\.0\.1" \(a URL goes as \{ url \}\)$/],
          [[{ ...fleet.nodes[0], connectTimeout: "soon" }], "connectTimeout", /got "soon"$/]
        ]
        for (const [nodes, option, detail] of cases) {
          const layer = driver.layer(nodes as ReadonlyArray<DriverNodes.NodeOptions<Client>>)
          const error = failureOf(yield* Effect.exit(nodesOf(layer)))
          assert.instanceOf(error, InvalidOptions)
          assert.strictEqual((error as InvalidOptions).option, option)
          assert.match((error as InvalidOptions).detail, detail)
        }
      }))

    it.scoped("a server that stops answering holds at most maxPendingCommands commands; the next fail at once", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const server = fleet.servers[1]
        const [node] = yield* nodesOf(driver.layer([{ ...fleet.nodes[1], maxPendingCommands: 2 }]))
        yield* server.pause
        yield* Effect.addFinalizer(() => server.resume)
        const waiting = [node.promises!.inspect("a"), node.promises!.inspect("b")]
        const started = performance.now()
        const refused = failureOf(yield* Effect.exit(node.inspect("c")))
        assert.isBelow(performance.now() - started, 100, "at once, without waiting for the server")
        assert.strictEqual(refused.reason, "Unavailable")
        assert.include(refused.detail, "2 commands wait for an answer")
        yield* server.resume
        yield* Effect.promise(() => Promise.all(waiting))
        assert.isTrue(Option.isNone((yield* node.inspect("c")).value), "answering again, it takes commands again")
      }))

    it.scoped("a one-key acquire refused by its SET sends nothing more once a later operation on the same key and value was sent", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const [node] = yield* nodesOf(driver.layer([fleet.nodes[0]]))
        const promises = node.promises!
        yield* Effect.promise(() => promises.acquire(["probed"], "other", 10_000))
        // All on the node's one connection, in this order: the SET NX (refused: "other" holds the key), then
        // other's release and our leaving, both before the SET's answer can come back.
        const acquired = promises.acquire(["probed"], "ours", 10_000)
        const released = promises.release(["probed"], "other", true)
        const left = promises.release(["probed"], "ours", false)
        assert.deepStrictEqual(yield* Effect.promise(() => Promise.all([acquired, released, left])), [false, 1, 0])
        yield* Effect.sleep("50 millis")
        // Before: the script that follows a refused SET went out after the leaving, found the key free, and set it.
        assert.isUndefined((yield* Effect.promise(() => promises.inspect("probed"))).value, "no key left behind")
      }))

    it.scoped("a malformed URL is InvalidOptions, without the password", () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(nodesOf(driver.layer([{ url: "http://user:s3cret@127.0.0.1:1" }])))
        const error = failureOf(exit)
        assert.instanceOf(error, InvalidOptions)
        assert.notInclude((error as InvalidOptions).message, "s3cret")
      }))

    it.scoped("layerConfig reads REDLOCK_NODES and REDLOCK_PASSWORD", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const urls = fleet.servers.map((server) => `redis://127.0.0.1:${server.port}`).join(", ")
        const provider = ConfigProvider.fromMap(new Map([["REDLOCK_NODES", urls], ["REDLOCK_PASSWORD", "s3cret"]]))
        // Quarantine off: the servers were just started (see support.redis).
        const context = yield* Layer.build(Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(driver.layerConfig()))).pipe(
          Effect.withConfigProvider(provider)
        )
        const redlock = Context.get(context, Redlock.Redlock)
        assert.strictEqual(redlock.nodes.length, 2)
        const lock = yield* redlock.acquire("configured", { ttl: "1 second" })
        assert.deepStrictEqual(lock.outcomes.map((o) => o._tag), ["Ok", "Ok"])
      }))

    it.scoped("layerConfig rejects a malformed node list without printing the password", () =>
      Effect.gen(function*() {
        const provider = ConfigProvider.fromMap(new Map([["REDLOCK_NODES", "redis://127.0.0.1:1,ftp://me:s3cret@x"]]))
        const exit = yield* Effect.exit(
          nodesOf(driver.layerConfig()).pipe(Effect.withConfigProvider(provider))
        )
        assert.isTrue(Exit.isFailure(exit))
        assert.isTrue(ConfigError.isConfigError(failureOf(exit)), "a ConfigError, as on Effect 4")
        const text = String(failureOf(exit))
        assert.include(text, "REDLOCK_NODES")
        assert.notInclude(text, "s3cret")
      }))

    it.scoped("a client the user owns is used as it is and left open", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const user = yield* driver.userClient(fleet.servers[1].port, "s3cret")
        const client = user.client
        const scope = yield* Scope.make()
        const [node] = yield* nodesOf(driver.layer([{ client, name: "mine" }])).pipe(Scope.extend(scope))
        assert.strictEqual(node.name, "mine")
        assert.isTrue(yield* node.acquire(["k"], "v", 1_000))
        yield* Scope.close(scope, Exit.void)
        assert.isTrue(user.isReady(), "still connected")
        assert.strictEqual(yield* Effect.promise(() => user.get("k")), "v")
      }))

    it.scoped("users' clients made the usual ways: a lock extended, inspected and released, a permit, and a waiter woken by the release", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        for (const [variant, options] of driver.clientVariants) {
          const user = yield* driver.userClient(fleet.servers[0].port, "s3cret", options)
          const redlock = yield* Effect.map(
            Layer.build(Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(driver.layer([{ client: user.client }])))),
            (context) => Context.get(context, Redlock.Redlock)
          )
          const resource = `variant ${variant}`
          const lock = yield* redlock.acquire(resource, { ttl: "10 seconds" })
          const extended = yield* redlock.extend(lock, "20 seconds")
          const seen = yield* redlock.inspect(resource)
          assert.strictEqual(Option.getOrUndefined(seen.holder), lock.value, variant)
          assert.isAbove(Duration.toMillis(Option.getOrThrow(seen.ttl)), 10_000, variant)
          assert.strictEqual((yield* redlock.release(extended)).status, "Released", variant)
          const permit = yield* redlock.acquirePermit(resource, { ttl: "10 seconds", limit: 2 })
          assert.strictEqual((yield* redlock.release(permit)).status, "Released", variant)
          const woken = yield* wokenAfterRelease(redlock, redlock, `${resource} wake`)
          assert.isBelow(woken, 1_000, `${variant}: woken ${Math.round(woken)} ms after the release`)
        }
      }))

    it.scoped("a user's client with a key prefix: lock keys carry it, and waiters hear releases from this process's answer and over the channel", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const port = fleet.servers[0].port
        // Clients that share no release subscriber (the other logs in by user name): the holder's releases
        // reach the other manager's waiters over the channel only.
        const holderClient = yield* driver.userClient(port, "s3cret", { keyPrefix: "app:" })
        const otherClient = yield* driver.userClient(port, "s3cret", { keyPrefix: "app:", username: "default" })
        const managerOver = (client: Client) =>
          Effect.map(
            Layer.build(Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(driver.layer([{ client }])))),
            (context) => Context.get(context, Redlock.Redlock)
          )
        const holder = yield* managerOver(holderClient.client)
        const other = yield* managerOver(otherClient.client)
        // The waiters retry only after 10 s: sooner, the release woke them (the prefixed key's announcement was
        // once unheard, and waiters of a contended lock waited for their retry).
        for (const [heardBy, waiter] of [["the release's answer", holder], ["the channel", other]] as const) {
          const woken = yield* wokenAfterRelease(holder, waiter, `prefixed by ${heardBy}`)
          assert.isBelow(woken, 1_000, `woken by ${heardBy}`)
        }
        // The lock key is where the client's own commands put keys.
        const lock = yield* holder.acquire("prefixed", { ttl: "10 seconds" })
        assert.strictEqual(yield* fleet.servers[0].call("GET", `${holderClient.keyPrefix}redlock:prefixed`), lock.value)
        yield* holder.release(lock)
      }))

    it.scoped("one server listed twice (the same host and port, by URL or fields, any db; one client twice): InvalidOptions before connecting", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const host = "127.0.0.1"
        const port = fleet.servers[0].port
        const user = yield* driver.userClient(port, "s3cret")
        const lists: ReadonlyArray<[ReadonlyArray<DriverNodes.NodeOptions<Client>>, RegExp]> = [
          [[fleet.nodes[0], fleet.nodes[1], fleet.nodes[0]], new RegExp(`^nodes 0 and 2 are one server \\(127\\.0\\.0\\.1:${port}\\)`)],
          [[fleet.nodes[0], { url: `redis://:s3cret@${host}:${port}/3` }], /^nodes 0 and 1 are one server/],
          [[{ url: `redis://:s3cret@${host}:${port}` }, { ...fleet.nodes[0], db: 1 }], /^nodes 0 and 1 are one server/],
          [[{ client: user.client }, fleet.nodes[1], { client: user.client, name: "again" }], /^nodes 0 and 2 are one server \(the same client\)/]
        ]
        for (const [nodes, detail] of lists) {
          const error = failureOf(yield* Effect.exit(nodesOf(driver.layer(nodes))))
          assert.instanceOf(error, InvalidOptions)
          assert.strictEqual((error as InvalidOptions).option, "nodes")
          assert.match((error as InvalidOptions).detail, detail)
        }
      }))

    it.scoped("two nodes that are one server by other names vote once: the later abstains, and the manager says so at start", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        // Two clients of the user's to one server: nothing in the options tells them apart.
        const first = yield* driver.userClient(fleet.servers[0].port, "s3cret")
        const second = yield* driver.userClient(fleet.servers[0].port, "s3cret")
        const logged: Array<string> = []
        const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void logged.push(String(message))))
        // Built in the test's scope: the connections of ours stay open until it ends.
        const managerOver = (nodes: ReadonlyArray<DriverNodes.NodeOptions<Client>>) =>
          Effect.map(
            Layer.build(Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(driver.layer(nodes)), Layer.provide(capture))),
            (context) => Context.get(context, Redlock.Redlock)
          )
        const once = { retry: Redlock.noRetry, ttl: "10 seconds" } as const

        const twice = yield* managerOver([{ client: first.client, name: "a" }, { client: second.client, name: "a again" }])
        assert.strictEqual(logged.length, 1)
        assert.match(logged[0], /^effect-redlock: 1 of 2 nodes do not vote \(a again: the same server as a \(run_id [0-9a-f]{40}\)/)
        assert.include(logged[0], "1 vote, 2 needed: every acquisition fails. List each Redis server once")
        const refused = failureOf(yield* Effect.exit(Effect.scoped(twice.acquire("alone", once)))) as LockNotAcquired
        assert.instanceOf(refused, LockNotAcquired)
        // Decided as soon as the later node abstains: the first one's yes may not have been awaited yet.
        const awaitedOrNot = (tag: string) => tag === "NotAwaited" ? "Ok" : tag
        assert.deepStrictEqual(refused.outcomes.map((outcome) => awaitedOrNot(outcome._tag)), ["Ok", "Abstained"])
        const permit = failureOf(yield* Effect.exit(Effect.scoped(twice.acquirePermit("slots", { ...once, limit: 2 }))))
        assert.instanceOf(permit, LockNotAcquired, "a permit's vote too")

        // With a third server: b's key is someone else's, so only a votes yes. Counted twice, a alone was a majority.
        const three = yield* managerOver([{ client: first.client }, { client: second.client }, fleet.nodes[1]])
        const [onB] = yield* nodesOf(driver.layer([fleet.nodes[1]]))
        assert.isTrue(yield* onB.acquire(["redlock:shared"], "someone else", 10_000))
        const held = failureOf(yield* Effect.exit(Effect.scoped(three.acquire("shared", once)))) as LockNotAcquired
        assert.deepStrictEqual(held.outcomes.map((outcome) => awaitedOrNot(outcome._tag)), ["Ok", "Abstained", "Held"], held.message)
        // And a free resource is granted by a and b: the one server listed twice costs no liveness beyond its one vote.
        const granted = yield* Effect.scoped(Effect.map(three.acquire("free", once), (lock) => lock.outcomes.map((outcome) => outcome._tag)))
        assert.deepStrictEqual([granted[0], granted[2]], ["Ok", "Ok"])
        assert.oneOf(granted[1], ["Abstained", "NotAwaited"], "its answer counts for nothing, if it came before the quorum")

        // A release is no vote: on one server, whichever of its nodes runs it first deletes the key, here the second.
        const lock = yield* three.acquire("released", { ...once, ttl: "10 seconds" })
        const blocked = first.blockFor(0.2)
        const released = yield* three.release(lock)
        assert.strictEqual(released.status, "Released", JSON.stringify(released.outcomes))
        assert.deepStrictEqual(released.outcomes.slice(1).map((outcome) => outcome._tag), ["Ok", "Ok"])
        yield* Effect.promise(() => blocked)

        // Inspecting reads each server once: a key on that one server alone is held by nobody.
        const [onA] = yield* nodesOf(driver.layer([fleet.nodes[0]]))
        assert.isTrue(yield* onA.acquire(["redlock:stray"], "left over", 10_000))
        const view = yield* three.inspect("stray")
        assert.isTrue(Option.isNone(view.holder), "not held on a majority of the servers")
      }))

    it.scoped("a server that may evict keys (maxmemory, an evicting policy) is named by a warning at start; noeviction is not", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const server = fleet.servers[1]
        yield* server.call("CONFIG", "SET", "maxmemory", "100mb", "maxmemory-policy", "volatile-ttl")
        yield* Effect.addFinalizer(() => Effect.orDie(server.call("CONFIG", "SET", "maxmemory", "0", "maxmemory-policy", "noeviction")))
        const logged: Array<string> = []
        const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void logged.push(String(message))))
        const start = Effect.scoped(Layer.build(Redlock.layer({ restartQuarantine: false }).pipe(
          Layer.provide(driver.layer([fleet.nodes[0], fleet.nodes[1]])),
          Layer.provide(capture)
        )))
        yield* start
        assert.strictEqual(logged.length, 1, logged.join("\n"))
        assert.match(logged[0], new RegExp(`^effect-redlock: 1 of 2 nodes may evict keys \\(127\\.0\\.0\\.1:${server.port}: maxmemory 100\\.00M with maxmemory-policy volatile-ttl`))
        assert.include(logged[0], "set maxmemory-policy noeviction on lock servers")
        yield* server.call("CONFIG", "SET", "maxmemory-policy", "noeviction")
        yield* start
        assert.strictEqual(logged.length, 1, "a full server that refuses writes loses no held key")
      }))

    it.scoped("a node that never answered at start-up is Unavailable at once, and joins when it comes up", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const server = fleet.servers[0]
        yield* server.kill
        const [node] = yield* nodesOf(driver.layer([{ ...fleet.nodes[0], connectTimeout: "100 millis" }]))
        const exit = yield* Effect.exit(node.acquire(["k"], "v", 1_000))
        assert.strictEqual((failureOf(exit) as RedisNode.RedisNodeError).reason, "Unavailable")
        yield* server.start
        const joined = yield* node.acquire(["k"], "v", 1_000).pipe(
          Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("5 seconds")))
        )
        assert.isTrue(joined)
      }))

    it.scoped("a server that refuses the connection does not hold the layer up for its connect timeout", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const server = fleet.servers[0]
        yield* server.kill
        const started = performance.now()
        const [node] = yield* nodesOf(driver.layer([{ ...fleet.nodes[0], connectTimeout: "3 seconds" }]))
        const built = performance.now() - started
        assert.strictEqual(node.run()._tag, "Unknown")
        yield* server.start
        assert.isBelow(built, 1_500, `built in ${Math.round(built)} ms; the connect timeout is 3 s`)
      }))

    it.scoped("a key watched again and again keeps its one subscription; it is dropped a second after the last watch", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const server = fleet.servers[0]
        const [node] = yield* nodesOf(driver.layer([fleet.nodes[0]]))
        const commandCalls = (name: string) =>
          Effect.map(server.call("INFO", "commandstats"), (info) =>
            Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(String(info))?.[1] ?? 0))
        const subscribesBefore = yield* commandCalls("subscribe")
        const unsubscribesBefore = yield* commandCalls("unsubscribe")
        // Watched for 100 ms out of every 400, for 2 s: never unwatched for a whole second.
        for (let i = 0; i < 5; i++) {
          const watch = yield* node.watchReleases!("turns", () => {})
          if (watch.ready !== undefined) yield* Effect.promise(() => watch.ready!)
          yield* Effect.sleep("100 millis")
          watch.stop()
          yield* Effect.sleep("300 millis")
        }
        assert.strictEqual((yield* commandCalls("subscribe")) - subscribesBefore, 1)
        assert.strictEqual((yield* commandCalls("unsubscribe")) - unsubscribesBefore, 0)
        yield* Effect.sleep("1200 millis")
        assert.strictEqual((yield* commandCalls("unsubscribe")) - unsubscribesBefore, 1, "unsubscribed once nobody watched for a second")
      }))

    it.scoped("lock managers of one process share one subscriber connection per server, until the last one closes", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const server = fleet.servers[0]
        const subscribers = Effect.map(server.call("CLIENT", "LIST", "TYPE", "pubsub"), (list) =>
          String(list).split("\n").filter((line) => line.trim() !== "").length)
        const first = yield* Scope.make()
        const second = yield* Scope.make()
        const [nodeA] = yield* Scope.extend(nodesOf(driver.layer([fleet.nodes[0]])), first)
        const [nodeB] = yield* Scope.extend(nodesOf(driver.layer([fleet.nodes[0]])), second)
        const heardA: Array<string | null> = []
        const heardB: Array<string | null> = []
        const watchA = yield* nodeA.watchReleases!("shared", (next) => void heardA.push(next))
        const watchB = yield* nodeB.watchReleases!("shared", (next) => void heardB.push(next))
        yield* Effect.promise(() => Promise.all([watchA.ready, watchB.ready]))
        assert.strictEqual(yield* subscribers, 1, "one subscriber for both managers")
        // The manager that opened the connection goes away; the other still hears releases.
        watchA.stop()
        yield* Scope.close(first, Exit.void)
        yield* server.call("PUBLISH", `${Scripts.releaseChannelPrefix}shared`, "next-waiter")
        yield* Effect.sleep("100 millis")
        assert.deepStrictEqual(heardA, [])
        assert.deepStrictEqual(heardB, ["next-waiter"])
        assert.strictEqual(yield* subscribers, 1)
        watchB.stop()
        yield* Scope.close(second, Exit.void)
        yield* Effect.sleep("100 millis")
        assert.strictEqual(yield* subscribers, 0, "closed with the last manager")
      }))

    it.scoped("a release tells this process's watchers what it announced from its own answer: before it is answered, even where pub/sub is refused, and once", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const slots = [0, 1].map((index) => `told\u0000permit${index}`)
        // Tickets in the recent past, in order (a node bounds them by its own time).
        const turn = (order: number): RedisNode.Turn => ({ ticket: Date.now() - 1_000 + order, leaseMillis: 10_000, setting: "2" })
        // Both slots held and a waiter in line; the release of slot 0 hands it over. What the watcher had heard
        // when the release was answered, and 200 ms later.
        const handOver = (node: TestNode) =>
          Effect.gen(function*() {
            const heard: Array<string | null> = []
            const watch = yield* node.watchReleases!("told\u0000permit", (next) => void heard.push(next))
            if (watch.ready !== undefined) yield* Effect.promise(() => watch.ready!)
            assert.strictEqual((yield* node.acquireSlot(slots, "a.5000.2", 5_000, turn(1)))._tag, "Granted")
            assert.strictEqual((yield* node.acquireSlot(slots, "b.5000.2", 5_000, turn(2)))._tag, "Granted")
            assert.strictEqual((yield* node.acquireSlot(slots, "w.5000.2", 5_000, turn(3)))._tag, "Held")
            const whenAnswered = yield* Effect.promise(() => node.promises!.release([slots[0]], "a.5000.2", true).then(() => [...heard]))
            yield* Effect.sleep("200 millis")
            watch.stop()
            yield* node.release(slots, "w.5000.2", false)
            yield* node.release(slots, "b.5000.2", false)
            return { whenAnswered, later: heard }
          })
        const [node] = yield* nodesOf(driver.layer([fleet.nodes[0]]))
        const hearing = yield* handOver(node)
        assert.deepStrictEqual(hearing.whenAnswered, ["w.5000.2/0"], "told from the answer, before the caller heard of it")
        assert.deepStrictEqual(hearing.later, ["w.5000.2/0"], "the channel's copy is not told again")
        yield* aclUser(fleet, "told-deaf", "secret", "-@pubsub")
        const [deaf] = yield* nodesOf(driver.layer([{ ...fleet.nodes[0], username: "told-deaf", password: Redacted.make("secret") }]))
        const deafHearing = yield* handOver(deaf)
        assert.deepStrictEqual(deafHearing.whenAnswered, ["w.5000.2/0"], "the server refuses PUBLISH and SUBSCRIBE: the answer tells")
        assert.deepStrictEqual(deafHearing.later, ["w.5000.2/0"])
      }))

    it.scoped("closing the layer does not wait for a hung server (a polite close is given up on after 1 s)", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const server = fleet.servers[1]
        const scope = yield* Scope.make()
        const [node] = yield* Scope.extend(nodesOf(driver.layer([fleet.nodes[1]])), scope)
        assert.strictEqual(node.run()._tag, "Known", "identified at start-up")
        yield* server.pause
        // A command the hung server will not answer: a polite close (QUIT, or waiting for the replies) waits for it.
        node.promises!.inspect("k").catch(() => {})
        const started = performance.now()
        yield* Scope.close(scope, Exit.void).pipe(Effect.ensuring(server.resume))
        const elapsed = performance.now() - started
        assert.isAtLeast(elapsed, 900, "the polite close was tried")
        assert.isBelow(elapsed, 3000, `closing took ${Math.round(elapsed)} ms`)
      }))

    it.scoped("scripts lost (SCRIPT FLUSH): NOSCRIPT means 'did not run', nothing is sent again out of order, the scripts are loaded again", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        const server = fleet.servers[0]
        const [node] = yield* nodesOf(driver.layer([fleet.nodes[0]]))
        yield* server.call("SCRIPT", "FLUSH")
        // A refused attempt's undo, then the next attempt on the same node, sent back to back as the engine sends them.
        const [undone, taken] = yield* Effect.promise(() =>
          Promise.allSettled([node.promises!.release(["k"], "v", false, true), node.promises!.acquire(["k"], "v", 10_000)])
        )
        const held = yield* server.call("GET", "k")
        assert.strictEqual(
          taken.status === "fulfilled" && taken.value === true,
          held === "v",
          `the node's answer to the acquire (${JSON.stringify(taken)}) must match what the server holds (${held})`
        )
        assert.strictEqual(undone.status, "rejected")
        assert.strictEqual((undone as PromiseRejectedResult).reason.reason, "NoScript")
        // The NOSCRIPT reply loaded the scripts again, ahead of the next command.
        assert.isTrue(yield* node.acquire(["k"], "v", 10_000))
        assert.strictEqual(yield* node.release(["k"], "v", true), 1)
      }))

    it.scoped("a restarted server (its scripts gone) is given them again before any command of ours", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const server = fleet.servers[0]
        const [node] = yield* nodesOf(driver.layer([fleet.nodes[0]]))
        yield* server.kill
        yield* server.start
        // The first answer after the reconnection, once the node is no longer Unavailable.
        const first = yield* Effect.either(node.inspect("k")).pipe(
          Effect.filterOrFail(
            (result) => !(result._tag === "Left" && result.left.reason === "Unavailable"),
            () => "still unavailable"
          ),
          Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("5 seconds")))
        )
        assert.strictEqual(first._tag, "Right", JSON.stringify(first))
        const loaded = yield* server.call("SCRIPT", "EXISTS", ...Scripts.nodeScripts.map((script) => script.sha))
        assert.deepStrictEqual(loaded, Scripts.nodeScripts.map(() => 1))
      }))

    it.scoped("where an ACL refuses SCRIPT LOAD, scripts are sent whole (EVAL) and locks work", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        const server = fleet.servers[1]
        yield* server.call("SCRIPT", "FLUSH")
        yield* Effect.acquireRelease(
          server.call("ACL", "SETUSER", "evalonly", "on", ">pw", "~*", "&*", "+@all", "-script|load"),
          () => Effect.ignore(server.call("ACL", "DELUSER", "evalonly"))
        )
        const [node] = yield* nodesOf(
          driver.layer([{ ...fleet.nodes[1], username: "evalonly", password: Redacted.make("pw") }])
        )
        assert.isTrue(yield* node.acquire(["k"], "v", 10_000))
        assert.strictEqual(yield* node.release(["k"], "v", true), 1)
        assert.strictEqual(yield* server.call("GET", "k"), null)
      }))
}

/**
 * Locks over one driver's nodes on a fleet of three servers: managers
 * contending never overlap and leave nothing behind, and a waiter is woken by
 * the release, not by its next poll. `nodes`: the waiters' nodes (our
 * connections, or clients of the user's made in the scope); the holders use
 * connections of their own.
 */
export const lockSuite = <Client>(
  it: It,
  label: string,
  driver: Pick<DriverUnderTest<Client>, "layer">,
  nodes: (fleet: RedisFleet.Fleet) => Effect.Effect<ReadonlyArray<DriverNodes.NodeOptions<Client>>, never, Scope.Scope>
) => {
  // Quarantine off: the fleet's servers were just started.
  const manager = (options: ReadonlyArray<DriverNodes.NodeOptions<Client>>) =>
    Effect.map(
      Layer.build(Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(driver.layer(options)))),
      (context) => Context.get(context, Redlock.Redlock)
    )

  it.scoped(`${label}: managers contending never overlap, and leave nothing behind`, () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const managers = [yield* manager(fleet.nodes), yield* manager(fleet.nodes), yield* manager(yield* nodes(fleet))]
      const sections: Array<Section> = []
      const retry = Redlock.retry({ delay: 20, times: 500 })
      yield* Effect.forEach(managers, (redlock, index) =>
        Effect.repeatN(
          Effect.gen(function*() {
            const lock = yield* redlock.acquire("turns", { ttl: "10 seconds", retry })
            yield* recordSection(`m${index}`, lock, Effect.sleep("2 millis"), sections)
            assert.strictEqual((yield* redlock.release(lock)).status, "Released")
          }).pipe(Effect.scoped),
          9
        ), { concurrency: "unbounded", discard: true })
      assert.strictEqual(sections.length, 30)
      assert.deepStrictEqual(overlaps(sections), [])
      yield* expectEmpty(fleet)
    }))

  it.scoped(`${label}: a waiter is woken by the release, not by its next poll`, () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const holder = yield* manager(fleet.nodes)
      const waiter = yield* manager(yield* nodes(fleet))
      const wokenAfter = yield* wokenAfterRelease(holder, waiter, "woken")
      assert.isBelow(wokenAfter, 500, `woken ${Math.round(wokenAfter)} ms after the release`)
      yield* expectEmpty(fleet)
    }))
}
