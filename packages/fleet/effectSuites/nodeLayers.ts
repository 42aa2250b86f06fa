/**
 * Nodes as an Effect program makes them: the drivers' layers from node
 * options, from configuration (`REDLOCK_*`, as a deployment gives them) and
 * `fromUrl`; what each layer refuses, and how (a typed InvalidOptions or a
 * ConfigError, never a defect); the manager's start-up warnings through the
 * program's logger. What the nodes do once open is core's driver suite
 * (packages/core/test/driverSuite.ts), run once for every front end.
 *
 * One suite, run by both Effect lines (each package's test/nodeLayers.test.ts).
 */
import {
  assert,
  captureLogs,
  configFrom,
  Context,
  describe,
  Effect,
  Ioredis,
  isConfigError,
  it,
  Layer,
  layer,
  layerFleet,
  NodeRedis,
  Option,
  Redacted,
  RedisFleet,
  RedisNode,
  Redlock,
  RedlockError
} from "@effect-redlock/line"
import { Redis } from "ioredis"
import { createClientPool } from "redis"
import { failureOf } from "./support.js"

/** The manager over the configuration `env`, its nodes from REDLOCK_NODES. */
const configured = (env: Record<string, string>) =>
  Redlock.layerConfig().pipe(Layer.provide(Ioredis.layerConfig()), Layer.provide(configFrom(env)))

/** The failure of building a manager over `nodes`. */
const refusalOver = (nodes: Layer.Layer<RedisNode.RedisNodes, unknown>) =>
  Effect.map(Effect.exit(Effect.scoped(Layer.build(Redlock.layer().pipe(Layer.provide(nodes))))), failureOf)

export const nodeLayersSuite = () => {
  describe("fromUrl", () => {
    it("reads host, port, user, password (decoded, redacted), db and TLS", () => {
      const parsed = Option.getOrThrow(Ioredis.fromUrl("rediss://app:p%40ss@cache.local:6380/2"))
      assert.strictEqual(parsed.host, "cache.local")
      assert.strictEqual(parsed.port, 6380)
      assert.strictEqual(parsed.username, "app")
      assert.strictEqual(Redacted.value(parsed.password as Redacted.Redacted<string>), "p@ss")
      assert.notInclude(String(parsed.password), "p@ss")
      assert.strictEqual(parsed.db, 2)
      assert.strictEqual(parsed.tls, true)
      const plain = Option.getOrThrow(NodeRedis.fromUrl("redis://10.0.0.1"))
      assert.deepStrictEqual([plain.port, plain.tls, plain.db, plain.password], [6379, false, undefined, undefined])
    })

    it("rejects what is not a redis URL", () => {
      for (const url of ["", "http://host:6379", "redis://host/notanumber", "not a url"]) {
        assert.isTrue(Option.isNone(Ioredis.fromUrl(url)), url)
      }
    })
  })

  describe("what the layers refuse", () => {
    it.effect("node options that are no list, no object (a URL: its password hidden), a bad host, client, port or connectTimeout, one server twice: InvalidOptions naming it, nothing opened", () =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [unknown, string, RegExp]> = [
          [
            "redis://127.0.0.1",
            "nodes",
            /expected an array .*got "redis:\/\/127\.0\.0\.1" \(a URL goes as \{ url \}\)$/
          ],
          [
            ["redis://app:s3cret@127.0.0.1"],
            "nodes",
            /got "redis:\/\/\*\*\*@127\.0\.0\.1" \(a URL goes as \{ url \}\)$/
          ],
          [
            [{ host: "redis://app:s3cret@127.0.0.1", port: 6379 }],
            "host",
            /^must be a host name or an IP address, got "redis:\/\/\*\*\*@/
          ],
          [[null], "nodes", /a node must be .*got null$/],
          [[{ host: "127.0.0.1", port: "6379" }], "port", /got "6379"$/],
          [[{ host: "127.0.0.1", port: 0 }], "port", /got 0$/],
          [[{ host: 5, port: 6379 }], "host", /got 5$/],
          [[{ client: { status: "ready" } }], "client", /^must be an ioredis client .*: it has no sendCommand\(\)$/],
          [[{ host: "127.0.0.1", port: 6379, connectTimeout: "soon" }], "connectTimeout", /got "soon"$/],
          [
            [{ host: "127.0.0.1", port: 6379, password: 42 }],
            "password",
            /^expected a string or a Redacted string, got 42$/
          ],
          [
            [{ host: "127.0.0.1", port: 6379 }, { url: "redis://127.0.0.1:6379/1" }],
            "nodes",
            /^nodes 0 and 1 are one server \(127\.0\.0\.1:6379\)/
          ],
          [
            [{ host: "127.0.0.1", port: 1 }, { host: "Redis.Local" }, { host: "redis.local", port: 6379 }],
            "nodes",
            /^nodes 1 and 2 are one server \(redis\.local:6379\)/
          ]
        ]
        for (const [nodes, option, detail] of cases) {
          const error = yield* refusalOver(Ioredis.layer(nodes as Parameters<typeof Ioredis.layer>[0]))
          assert.strictEqual(error instanceof RedlockError.InvalidOptions ? error.option : String(error), option)
          assert.match((error as RedlockError.InvalidOptions).detail, detail)
        }
      }))

    // A pool passed for a client took locks, then threw in the first waiter (it has no duplicate() for the
    // release subscriber) and ended the process.
    it.effect("a node-redis client pool is InvalidOptions (client) before anything is sent", () =>
      Effect.gen(function*() {
        const pool = createClientPool({ socket: { host: "127.0.0.1", port: 1 } })
        const error = yield* refusalOver(NodeRedis.layer([{ client: pool } as unknown as NodeRedis.NodeOptions]))
        assert.instanceOf(error, RedlockError.InvalidOptions)
        assert.strictEqual((error as RedlockError.InvalidOptions).option, "client")
        assert.match(
          (error as RedlockError.InvalidOptions).detail,
          /^a node-redis client pool \(createClientPool\) cannot subscribe/
        )
      }))

    it.effect("a REDLOCK_NODES entry that is no redis:// URL is a ConfigError naming the variable, the password hidden", () =>
      Effect.gen(function*() {
        for (const layer of [Ioredis.layerConfig(), NodeRedis.layerConfig()]) {
          const nodes = layer.pipe(
            Layer.provide(configFrom({ REDLOCK_NODES: "redis://127.0.0.1:1,ftp://me:s3cret@x" }))
          )
          const error = yield* refusalOver(nodes)
          assert.isTrue(isConfigError(error), String(error))
          assert.include(String(error), "REDLOCK_NODES")
          assert.include(String(error), "not a redis:// URL")
          assert.notInclude(String(error), "s3cret")
        }
        // A configuration of the user's own fails the same way.
        const own = Effect.succeed({ urls: ["redis://127.0.0.1:1", "ftp://me:s3cret@x"], password: Option.none() })
        const ownError = yield* refusalOver(
          Ioredis.layerConfig(own as unknown as Parameters<typeof Ioredis.layerConfig>[0])
        )
        assert.isTrue(isConfigError(ownError), String(ownError))
        assert.notInclude(String(ownError), "s3cret")
      }))
  })

  layer(layerFleet(2, { password: "s3cret" }), { timeout: 60_000, excludeTestServices: true })(
    "nodes from configuration, 2 redis-servers",
    (it) => {
      it.effect("REDLOCK_NODES, REDLOCK_PASSWORD and the options' variables make the manager: its key prefix is used on every node", () =>
        Effect.gen(function*() {
          const fleet = yield* RedisFleet
          const env = {
            REDLOCK_NODES: fleet.servers.map((server) => `redis://127.0.0.1:${server.port}`).join(", "),
            REDLOCK_PASSWORD: "s3cret",
            REDLOCK_KEY_PREFIX: "app:",
            // As people write durations (parseDuration), on both lines.
            REDLOCK_MAX_TTL: "10s",
            REDLOCK_RESTART_QUARANTINE: "false"
          }
          const redlock = yield* Effect.map(
            Layer.build(configured(env)),
            (context) => Context.get(context, Redlock.Redlock)
          )
          assert.strictEqual(redlock.nodes.length, 2)
          const lock = yield* Effect.scoped(Effect.gen(function*() {
            const lock = yield* redlock.acquire("job", { ttl: "5 seconds" })
            assert.deepStrictEqual(lock.keys, ["app:job"])
            for (const server of fleet.servers) {
              assert.strictEqual(yield* server.call("GET", "app:job"), lock.value)
            }
            return lock
          }))
          assert.deepStrictEqual(lock.outcomes.map((outcome) => outcome._tag), ["Ok", "Ok"])
          const tooLong = failureOf(yield* Effect.exit(Effect.scoped(redlock.acquire("job", { ttl: "20 seconds" }))))
          assert.strictEqual(
            tooLong instanceof RedlockError.InvalidOptions ? tooLong.option : String(tooLong),
            "ttl",
            "REDLOCK_MAX_TTL is the bound"
          )

          const missing = yield* refusalOver(Ioredis.layerConfig().pipe(Layer.provide(configFrom({}))))
          assert.include(String(missing), "REDLOCK_NODES")
          const unreadable = failureOf(
            yield* Effect.exit(Effect.scoped(Layer.build(configured({ ...env, REDLOCK_NODE_TIMEOUT: "soon" }))))
          )
          assert.isTrue(isConfigError(unreadable), String(unreadable))
          assert.include(String(unreadable), "REDLOCK_NODE_TIMEOUT")
          const bad = failureOf(
            yield* Effect.exit(Effect.scoped(Layer.build(configured({ ...env, REDLOCK_DRIFT_FACTOR: "2" }))))
          )
          assert.strictEqual(bad instanceof RedlockError.InvalidOptions ? bad.option : String(bad), "driftFactor")
        }).pipe(Effect.scoped))

      it.effect("the manager's start-up warnings go to the program's logger: two clients of one server vote once; a server that may evict keys", () => {
        // The program's logger, once for the whole test: a layer that replaces the logger leaves it in place while its scope is open.
        const logged: Array<string> = []
        return Effect.gen(function*() {
          const fleet = yield* RedisFleet
          const [a, b] = fleet.servers
          const clients = yield* Effect.acquireRelease(
            Effect.sync(() => [0, 1].map(() => new Redis({ host: "127.0.0.1", port: a.port, password: "s3cret" }))),
            (clients) => Effect.sync(() => clients.forEach((client) => client.disconnect()))
          )
          const managerOver = (nodes: Layer.Layer<RedisNode.RedisNodes, unknown>) =>
            Effect.map(
              Layer.build(Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(nodes))),
              (context) => Context.get(context, Redlock.Redlock)
            )
          const other = { host: "127.0.0.1", port: b.port, password: Redacted.make("s3cret") }
          const redlock = yield* managerOver(
            Ioredis.layer([{ client: clients[0], name: "a" }, { client: clients[1], name: "a again" }, other])
          )
          assert.strictEqual(logged.length, 1, logged.join("\n"))
          assert.match(
            logged[0],
            /^effect-redlock: 1 of 3 nodes do not vote \(a again: the same server as a \(run_id [0-9a-f]{40}\)/
          )
          // b's key is someone else's: a alone says yes, and counted twice it would have been a majority.
          yield* b.call("SET", "redlock:shared", "someone else", "PX", 10_000)
          const refused = failureOf(
            yield* Effect.exit(Effect.scoped(redlock.acquire("shared", { ttl: "5 seconds", retry: Redlock.noRetry })))
          )
          assert.deepStrictEqual(
            refused instanceof RedlockError.LockNotAcquired
              ? refused.outcomes.map((outcome) => outcome._tag)
              : String(refused),
            ["Ok", "Abstained", "Held"]
          )
          yield* b.call("DEL", "redlock:shared")

          yield* Effect.acquireRelease(
            b.call("CONFIG", "SET", "maxmemory", "100mb", "maxmemory-policy", "allkeys-lru"),
            () => Effect.ignore(b.call("CONFIG", "SET", "maxmemory", "0", "maxmemory-policy", "noeviction"))
          )
          yield* Effect.scoped(managerOver(NodeRedis.layer([other])))
          assert.strictEqual(logged.length, 2, JSON.stringify(logged))
          assert.match(
            logged[1],
            /^effect-redlock: 1 of 1 nodes may evict keys \(127\.0\.0\.1:\d+: maxmemory 100\.00M with maxmemory-policy allkeys-lru/
          )
        }).pipe(Effect.scoped, Effect.provide(captureLogs(logged)))
      })
    }
  )
}
