/**
 * The manager and its nodes from configuration (`REDLOCK_*`), as a
 * deployment gives them.
 */
import { assert, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Logger from "effect/Logger"
import * as Context from "effect/Context"
import { Redlock, RedisNode } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import { Redis } from "ioredis"
import { layerLocal, RedisFleet } from "./fleet.js"

const configured = (env: Record<string, string>) =>
  Redlock.layerConfig().pipe(Layer.provide(Ioredis.layerConfig()), Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))))

it.live("REDLOCK_NODES and the options' variables make the manager: its key prefix is used on every node", () =>
  Effect.gen(function*() {
    const fleet = yield* RedisFleet
    const env = {
      REDLOCK_NODES: fleet.nodes.map((node) => `redis://127.0.0.1:${node.port}`).join(","),
      REDLOCK_KEY_PREFIX: "app:",
      // As people write durations (parseDuration), as on Effect 3.
      REDLOCK_MAX_TTL: "10s",
      REDLOCK_RESTART_QUARANTINE: "false"
    }
    yield* Effect.provide(
      Effect.gen(function*() {
        const redlock = yield* Redlock.Redlock
        assert.strictEqual(redlock.nodes.length, 3)
        const lock = yield* redlock.acquire("job", { ttl: "5 seconds" })
        assert.deepStrictEqual(lock.keys, ["app:job"])
        for (const server of fleet.servers) {
          assert.strictEqual(yield* Effect.promise(() => server.admin.get("app:job")), lock.value)
        }
        const tooLong = yield* Effect.flip(Effect.scoped(redlock.acquire("job", { ttl: "20 seconds" })))
        assert.strictEqual(tooLong._tag === "InvalidOptions" ? tooLong.option : tooLong._tag, "ttl", "REDLOCK_MAX_TTL is the bound")
      }).pipe(Effect.scoped),
      configured(env)
    )
    const missing = yield* Effect.flip(Effect.provide(Redlock.Redlock, configured({})))
    assert.include(String(missing), "REDLOCK_NODES")
    const unreadable = yield* Effect.flip(Effect.provide(Redlock.Redlock, configured({ ...env, REDLOCK_NODE_TIMEOUT: "soon" })))
    assert.instanceOf(unreadable, Config.ConfigError)
    assert.include(unreadable.message, "REDLOCK_NODE_TIMEOUT")
    assert.include(unreadable.message, "not a duration")
    const bad = yield* Effect.flip(Effect.provide(Redlock.Redlock, configured({ ...env, REDLOCK_DRIFT_FACTOR: "2" })))
    assert.strictEqual(bad._tag === "InvalidOptions" ? bad.option : bad._tag, "driftFactor")
  }).pipe(Effect.provide(layerLocal(3))))

it.effect("a REDLOCK_NODES entry that is no redis:// URL is a ConfigError naming the variable, as on Effect 3, the password hidden", () =>
  Effect.gen(function*() {
    const nodes = Ioredis.layerConfig().pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({
      REDLOCK_NODES: "redis://127.0.0.1:1,ftp://me:s3cret@x"
    }))))
    const error = yield* Effect.flip(Effect.provide(Effect.service(RedisNode.RedisNodes), nodes))
    assert.instanceOf(error, Config.ConfigError)
    assert.include(error.message, "REDLOCK_NODES")
    assert.include(error.message, "not a redis:// URL")
    assert.notInclude(error.message, "s3cret")
    // A configuration of the user's own fails the same way.
    const own = Config.succeed({ urls: ["redis://127.0.0.1:1", "ftp://me:s3cret@x"], password: Option.none() })
    const ownError = yield* Effect.flip(Effect.provide(Effect.service(RedisNode.RedisNodes), Ioredis.layerConfig(own)))
    assert.instanceOf(ownError, Config.ConfigError)
    assert.include(ownError.message, "not a redis:// URL")
    assert.notInclude(ownError.message, "s3cret")
  }))

it.effect("node options that are no list, no object (a URL: its password hidden), a bad host (a URL) or client, port or connectTimeout, one server twice: InvalidOptions naming it, nothing opened", () =>
  Effect.gen(function*() {
    const cases: ReadonlyArray<readonly [unknown, string, RegExp]> = [
      ["redis://127.0.0.1", "nodes", /expected an array .*got "redis:\/\/127\.0\.0\.1" \(a URL goes as \{ url \}\)$/],
      [["redis://app:s3cret@127.0.0.1"], "nodes", /got "redis:\/\/\*\*\*@127\.0\.0\.1" \(a URL goes as \{ url \}\)$/],
      [[{ host: "redis://app:s3cret@127.0.0.1", port: 6379 }], "host", /^must be a host name or an IP address, got "redis:\/\/\*\*\*@/],
      [[null], "nodes", /a node must be .*got null$/],
      [[{ host: "127.0.0.1", port: "6379" }], "port", /got "6379"$/],
      [[{ host: "127.0.0.1", port: 0 }], "port", /got 0$/],
      [[{ host: 5, port: 6379 }], "host", /got 5$/],
      [[{ client: { status: "ready" } }], "client", /^must be an ioredis client .*: it has no sendCommand\(\)$/],
      [[{ host: "127.0.0.1", port: 6379, connectTimeout: "soon" }], "connectTimeout", /got "soon"$/],
      [[{ host: "127.0.0.1", port: 6379 }, { url: "redis://127.0.0.1:6379/1" }], "nodes", /^nodes 0 and 1 are one server \(127\.0\.0\.1:6379\)/],
      [[{ host: "127.0.0.1", port: 1 }, { host: "Redis.Local" }, { host: "redis.local", port: 6379 }], "nodes", /^nodes 1 and 2 are one server \(redis\.local:6379\)/]
    ]
    for (const [nodes, option, detail] of cases) {
      const nodesLayer = Ioredis.layer(nodes as Parameters<typeof Ioredis.layer>[0])
      const error = yield* Effect.flip(Effect.provide(Redlock.Redlock, Redlock.layer().pipe(Layer.provide(nodesLayer))))
      assert.strictEqual(error._tag === "InvalidOptions" ? error.option : error._tag, option)
      assert.match(error._tag === "InvalidOptions" ? error.detail : "", detail)
    }
  }))

it.live("two clients of one server vote once: the later abstains, and the manager says so at start", () =>
  Effect.gen(function*() {
    const fleet = yield* RedisFleet
    const [a, b] = fleet.servers
    const clients = yield* Effect.acquireRelease(
      Effect.sync(() => [0, 1].map(() => new Redis({ host: "127.0.0.1", port: a.port }))),
      (clients) => Effect.promise(() => Promise.all(clients.map((client) => client.quit())))
    )
    const logged: Array<string> = []
    const capture = Logger.layer([Logger.make(({ message }) => void logged.push(String(message)))])
    const nodes = Ioredis.layer([{ client: clients[0], name: "a" }, { client: clients[1], name: "a again" }, { host: "127.0.0.1", port: b.port }])
    const redlock = yield* Layer.build(Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(nodes), Layer.provide(capture))).pipe(
      Effect.map(Context.get(Redlock.Redlock))
    )
    assert.strictEqual(logged.length, 1)
    assert.match(logged[0], /^effect-redlock: 1 of 3 nodes do not vote \(a again: the same server as a \(run_id [0-9a-f]{40}\)/)
    assert.include(logged[0], "2 vote, 2 needed. List each Redis server once")
    // b's key is someone else's: a alone says yes, and counted twice it would have been a majority.
    yield* Effect.promise(() => b.admin.set("redlock:shared", "someone else", "PX", 10_000))
    const refused = yield* Effect.flip(Effect.scoped(redlock.acquire("shared", { ttl: "5 seconds", retry: Redlock.noRetry })))
    assert.deepStrictEqual(refused._tag === "LockNotAcquired" ? refused.outcomes.map((outcome) => outcome._tag) : refused._tag, ["Ok", "Abstained", "Held"])
  }).pipe(Effect.scoped, Effect.provide(layerLocal(2))))

it.live("a server that may evict keys is named by a warning at start", () =>
  Effect.gen(function*() {
    const fleet = yield* RedisFleet
    const server = fleet.servers[0]
    yield* Effect.acquireRelease(
      Effect.promise(() => server.admin.config("SET", "maxmemory", "100mb", "maxmemory-policy", "allkeys-lru")),
      () => Effect.promise(() => server.admin.config("SET", "maxmemory", "0", "maxmemory-policy", "noeviction"))
    )
    const logged: Array<string> = []
    const capture = Logger.layer([Logger.make(({ message }) => void logged.push(String(message)))])
    yield* Layer.build(Redlock.layer({ restartQuarantine: false }).pipe(
      Layer.provide(Ioredis.layer([{ host: "127.0.0.1", port: server.port }])),
      Layer.provide(capture)
    ))
    assert.strictEqual(logged.length, 1)
    assert.match(logged[0], /^effect-redlock: 1 of 1 nodes may evict keys \(127\.0\.0\.1:\d+: maxmemory 100\.00M with maxmemory-policy allkeys-lru/)
  }).pipe(Effect.scoped, Effect.provide(layerLocal(1))))
