/**
 * The ioredis nodes: what every driver does (driverSuite.ts), and what only
 * this one does (EVALSHA's wire form built once, a client's key prefix, one
 * write per turn).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { Command, Redis } from "ioredis"
import { createClient } from "redis"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Fenced from "../src/Fencing/Ioredis.js"
import { makeRedlock } from "../src/Promise.js"
import * as Ioredis from "../src/RedisNode/Ioredis.js"
import { InvalidOptions } from "../src/RedlockError.js"
import type { IoredisClient, IoredisClientOptions } from "@effect-redlock/core/nodes/ioredis/client.js"
import * as IoredisCommands from "@effect-redlock/core/nodes/ioredis/commands.js"
import * as IoredisNode from "@effect-redlock/core/nodes/ioredis/node.js"
import * as Scripts from "@effect-redlock/core/nodes/scripts.js"
import { driverSuite, ioredisClientVariants, nodesOf } from "./driverSuite.js"
import { failureOf } from "./support.js"

describe("EVALSHA encoded once per fan-out", () => {
  it("is byte for byte what ioredis sends for the same command, multi-byte characters included", () => {
    const keys = ["redlock:ключ", "redlock:ключ\u0000queue", "redlock:ключ\u0000lease"]
    const args = ["värde-é", 10_000, 1_700_000_000_000, 250]
    const ours = IoredisCommands.encodedEvalsha.command(Command, Scripts.acquireInTurn, keys, args).toWritable(undefined as never)
    const theirs = new Command("evalsha", [Scripts.acquireInTurn.sha, keys.length, ...keys, ...args], { replyEncoding: "utf8" })
      .toWritable(undefined as never)
    assert.strictEqual(ours, theirs)
    // The next node of the same fan-out gets the same wire form; other arguments get their own.
    assert.strictEqual(IoredisCommands.encodedEvalsha.command(Command, Scripts.acquireInTurn, keys, [...args]).toWritable(undefined as never), theirs)
    assert.notStrictEqual(IoredisCommands.encodedEvalsha.command(Command, Scripts.acquireInTurn, keys, ["other", 1, 2, 3]).toWritable(undefined as never), theirs)
  })
})

describe("objects that are no ioredis client", () => {
  it.effect("a node-redis client, a plain object, a string: InvalidOptions (client) before anything is sent", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
        [createClient({ socket: { host: "127.0.0.1", port: 1 } }), /^must be an ioredis client \(new Redis\(\.\.\.\) or new Cluster\(\.\.\.\)\): it has no status$/],
        [{ status: "ready" }, /: it has no sendCommand\(\)$/],
        ["redis://127.0.0.1", /^must be an ioredis client/]
      ]
      for (const [client, detail] of cases) {
        const error = failureOf(yield* Effect.exit(Effect.scoped(nodesOf(Ioredis.layer([{ client } as unknown as Ioredis.NodeOptions])))))
        assert.instanceOf(error, InvalidOptions)
        assert.strictEqual((error as InvalidOptions).option, "client")
        assert.match((error as InvalidOptions).detail, detail)
      }
    }))
})

describe("a user's client's default node name", () => {
  it("is its server's address: host and port, a Unix socket's path, a Sentinel's master (ioredis's default host and port are no server's there)", () => {
    const named = (options: IoredisClientOptions) => IoredisNode.clientName({ options } as IoredisClient)
    assert.strictEqual(named({ host: "cache.local", port: 6380 }), "cache.local:6380")
    assert.strictEqual(named({ host: "localhost", port: 6379, path: "/run/redis/redis.sock" }), "/run/redis/redis.sock")
    assert.strictEqual(named({ host: "localhost", port: 6379, sentinels: [{ host: "s", port: 26379 }], name: "orders" }), "orders (sentinel)")
  })
})

describe("fromUrl", () => {
  it("reads host, port, user, password (decoded, redacted), db and TLS", () => {
    const parsed = Option.getOrThrow(Ioredis.fromUrl("rediss://app:p%40ss@cache.local:6380/2"))
    assert.strictEqual(parsed.host, "cache.local")
    assert.strictEqual(parsed.port, 6380)
    assert.strictEqual(parsed.username, "app")
    assert.strictEqual(Redacted.value(parsed.password!), "p@ss")
    assert.notInclude(String(parsed.password), "p@ss")
    assert.strictEqual(parsed.db, 2)
    assert.strictEqual(parsed.tls, true)
    const plain = Option.getOrThrow(Ioredis.fromUrl("redis://10.0.0.1"))
    assert.deepStrictEqual([plain.port, plain.tls, plain.db, plain.password], [6379, false, undefined, undefined])
  })

  it("rejects what is not a redis URL", () => {
    for (const url of ["", "http://host:6379", "redis://host/notanumber", "not a url"]) {
      assert.isTrue(Option.isNone(Ioredis.fromUrl(url)), url)
    }
  })
})


layer(RedisFleet.layerLocal(2, { password: "s3cret" }), { timeout: 30_000, excludeTestServices: true })(
  "ioredis node options",
  (it) => {
    it.scoped("a user's client with a key prefix keeps it: scripts go through ioredis, which prefixes their keys", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const client = yield* Effect.acquireRelease(
          Effect.sync(() => new Redis({ host: "127.0.0.1", port: fleet.servers[0].port, password: "s3cret", keyPrefix: "app:" })),
          (client) => Effect.promise(() => client.quit())
        )
        const [node] = yield* nodesOf(Ioredis.layer([{ client }]))
        assert.strictEqual((yield* node.acquireInTurn(["prefixed"], "v", 10_000, { ticket: 1, leaseMillis: 0 }))._tag, "Granted")
        assert.strictEqual(yield* fleet.servers[0].call("GET", "app:prefixed"), "v")
        assert.strictEqual(yield* node.release(["prefixed"], "v", true), 1)
        assert.strictEqual(yield* fleet.servers[0].call("EXISTS", "app:prefixed"), 0)
      }))

    it.scoped("a user's client with stringNumbers (integers read as strings): extensions, waiting, permits, inspect and fencing read them", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const client = yield* Effect.acquireRelease(
          Effect.sync(() => new Redis({ host: "127.0.0.1", port: fleet.servers[0].port, password: "s3cret", stringNumbers: true })),
          (client) => Effect.promise(() => client.quit())
        )
        const redlock = yield* Effect.acquireRelease(
          Effect.promise(() => makeRedlock([{ client }], { restartQuarantine: false })),
          (redlock) => Effect.promise(() => redlock.close())
        )
        yield* Effect.promise(async () => {
          const lock = await redlock.acquire("string-numbers", { ttl: 10_000 })
          // An extension answered "1" is an extension, not a lost lock.
          const extended = await redlock.extend(lock, 20_000)
          assert.isAbove(extended.remaining(), 10_000)
          const seen = await redlock.inspect("string-numbers")
          assert.strictEqual(seen.holder, lock.value)
          assert.isAbove(seen.ttlMillis!, 10_000)
          const read = seen.nodes[0]!
          assert.isAbove("ttlMillis" in read ? read.ttlMillis! : 0, 10_000)
          // A waiter's attempts answered ["3"] and ["1"]: it waits its turn and is granted, not refused as held.
          const waiting = redlock.acquire("string-numbers", { ttl: 10_000 })
          await new Promise((resolve) => setTimeout(resolve, 50))
          await redlock.release(extended)
          const next = await waiting
          const token = await next.fencingToken()
          await redlock.release(next)
          const permit = await redlock.acquirePermit("string-numbers-permit", { limit: 2, ttl: 10_000 })
          // Its grant ["1", "<slot>"] names the slot that holds it.
          const slots = await Promise.all([0, 1].map((slot) => Effect.runPromise(fleet.servers[0].call("GET", `redlock:string-numbers-permit\u0000permit${slot}`))))
          assert.include(slots, permit.value)
          await redlock.release(permit)
          // A fenced write refused: the highest token seen, from a reply that is no "1".
          await Effect.runPromise(Fenced.set(client, { key: "string-numbers:data", value: "new", token }))
          const stale = await Effect.runPromise(Effect.flip(Fenced.set(client, { key: "string-numbers:data", value: "old", token: token - 1n })))
          assert.strictEqual(stale._tag, "StaleFencingToken")
          assert.strictEqual(stale._tag === "StaleFencingToken" ? stale.highestSeen : undefined, token)
        })
      }))

    it.scoped("commands sent in the same turn reach the server in one write", () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const server = fleet.servers[0]
        const [node] = yield* nodesOf(Ioredis.layer([fleet.nodes[0]]))
        const readsProcessed = Effect.map(
          server.call("INFO", "stats"),
          (info) => Number(/total_reads_processed:(\d+)/.exec(String(info))![1])
        )
        const promises = node.promises!
        // Warm the scripts up, so that no NOSCRIPT fallback adds a round.
        yield* Effect.promise(() => promises.release(["warm"], "v", false))
        const before = yield* readsProcessed
        const granted = yield* Effect.promise(() =>
          Promise.all(Array.from({ length: 50 }, (_, i) => promises.acquire([`batch:${i}`], "v", 10_000)))
        )
        const reads = (yield* readsProcessed) - before
        assert.deepStrictEqual(granted, granted.map(() => true))
        // One read for the 50 commands, one for the INFO above (counted when it is read).
        assert.isAtMost(reads, 3, `${reads} reads for 50 commands`)
      }))


    driverSuite(it, {
      layer: Ioredis.layer,
      layerConfig: () => Ioredis.layerConfig(),
      clientVariants: ioredisClientVariants,
      userClient: (port, password, options = {}) =>
        Effect.map(
          Effect.acquireRelease(
            Effect.promise(async () => {
              const { driverOptions, ...named } = options
              const client = new Redis({ host: "127.0.0.1", port, password, ...named, ...driverOptions })
              // Connected, as a user's client is before use (without an offline queue a command would fail before).
              await new Promise((resolve) => client.once("ready", resolve))
              return client
            }),
            (client) => Effect.sync(() => client.disconnect())
          ),
          (client) => ({
            client,
            keyPrefix: options.keyPrefix ?? "",
            isReady: () => client.status === "ready",
            get: (key) => client.get(key),
            blockFor: (seconds) => client.blpop("nowhere", seconds)
          })
        )
    })
  }
)
