/**
 * Waiting when the release announcements cannot arrive, or arrive late: user
 * clients made with `lazyConnect`, a user the ACLs refuse pub/sub, the
 * subscriber connection killed mid-wait, and a user's clients quitting while
 * the lock manager stands. In each, no free key sits idle for a waiter that
 * cannot hear of it, and nothing the library opened outlives the user's own
 * clients.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Fiber, Redacted } from "effect"
import { Redis } from "ioredis"
import * as ChildProcess from "node:child_process"
import { fileURLToPath } from "node:url"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import type * as Lock from "../src/Lock.js"
import * as Scripts from "@effect-redlock/core/nodes/scripts.js"
import * as Redlock from "../src/Redlock.js"
import type * as Ioredis from "../src/RedisNode/Ioredis.js"
import { aclUser, expectEmpty, overlaps, recordSection, redisManager, type Section, slowRetry, wokenAfterRelease } from "./support.js"

const pubsubConnections = (server: RedisFleet.RedisServer) =>
  Effect.map(server.call("CLIENT", "LIST", "TYPE", "pubsub"), (list) =>
    String(list).split("\n").filter((line) => line.trim() !== "").length)

/** ioredis clients the user makes and owns, closed when the scope closes. */
const userClients = (fleet: RedisFleet.Fleet, options: { readonly connectFirst: boolean }) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const clients = fleet.servers.map((server) => new Redis({ host: "127.0.0.1", port: server.port, lazyConnect: true }))
      if (options.connectFirst) await Promise.all(clients.map((client) => client.connect()))
      return clients
    }),
    (clients) => Effect.promise(() => Promise.all(clients.map((client) => client.quit().catch(() => undefined))))
  )

layer(RedisFleet.layerLocal(3), { timeout: 60_000, excludeTestServices: true })("the release channel (redis-servers)", (it) => {
  for (const connectFirst of [true, false]) {
    it.scoped(`user clients made with lazyConnect (${connectFirst ? "connected first" : "never connected"}): no stall at start, the subscriber connects, a waiter is woken by the release`, () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        yield* fleet.reset
        const clients = yield* userClients(fleet, { connectFirst })
        const started = performance.now()
        const waiter = yield* redisManager(clients.map((client): Ioredis.NodeOptions => ({ client })))
        const built = performance.now() - started
        // A client never connected was waited for until the 1 s connect timeout, in vain.
        assert.isBelow(built, 900, `the layer took ${Math.round(built)} ms`)
        const holder = yield* redisManager(fleet.nodes)
        const wokenAfter = yield* wokenAfterRelease(holder, waiter, `lazy-${connectFirst}`)
        assert.isBelow(wokenAfter, 500, `woken ${Math.round(wokenAfter)} ms after the release (next poll: 10 s)`)
        assert.isAtLeast(yield* pubsubConnections(fleet.servers[0]), 1, "the release subscriber is connected")
      }))
  }

  it.scoped("an ACL user without pub/sub: releases say Released, a waiter that cannot hear takes no place in line, so a released key is free for anyone", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const user = "no-pubsub"
      yield* aclUser(fleet, user, "secret", "-@pubsub")
      const nodes = fleet.nodes.map((node) => ({ ...node, username: user, password: Redacted.make("secret") }))
      const holder = yield* redisManager(nodes)
      const waiter = yield* redisManager(nodes)
      const newcomer = yield* redisManager(nodes)
      const held = yield* holder.acquire("acl", { ttl: "10 seconds" })
      const waiting = yield* Effect.fork(Effect.scoped(waiter.acquire("acl", { ttl: "10 seconds", retry: slowRetry })))
      // Its first attempt took a place; the refused SUBSCRIBE makes it try again at once, out of line.
      yield* Effect.sleep("300 millis")
      const inLine = yield* Effect.forEach(fleet.servers, (server) => server.call("ZCARD", "redlock:acl\u0000queue"))
      assert.deepStrictEqual(inLine, [0, 0, 0], "the deaf waiter left the line")
      // Gone before the release: a waiter of the releasing process is told by the release's own answer (no
      // channel needed), and would race the newcomer for the free key.
      yield* Fiber.interrupt(waiting)
      // The release's PUBLISH is refused inside the script, after the delete: the release still succeeds.
      const released = yield* holder.release(held)
      assert.strictEqual(released.status, "Released", JSON.stringify(released.outcomes))
      // Handed to the waiter, the key would sit idle until its next poll (10 s away); free, anyone takes it.
      const taken = yield* Effect.scoped(Effect.as(newcomer.acquire("acl", { ttl: "10 seconds", retry: Redlock.noRetry }), true))
      assert.isTrue(taken)

      // Three deaf managers contending in turn: every one gets the lock, no overlap, every release says Released.
      const sections: Array<Section> = []
      const statuses: Array<string> = []
      const retry = Redlock.retry({ delay: 20, times: 500 })
      yield* Effect.forEach([holder, waiter, newcomer], (manager, index) =>
        Effect.repeatN(
          Effect.gen(function*() {
            const lock = yield* manager.acquire("acl-turns", { ttl: "10 seconds", retry })
            yield* recordSection(`m${index}`, lock, Effect.sleep("2 millis"), sections)
            statuses.push((yield* manager.release(lock)).status)
          }).pipe(Effect.scoped),
          4
        ), { concurrency: "unbounded", discard: true })
      assert.strictEqual(sections.length, 15)
      assert.deepStrictEqual(overlaps(sections), [])
      assert.deepStrictEqual([...new Set(statuses)], ["Released"])
      yield* expectEmpty(fleet)
    }))

  it.scoped("a refused SUBSCRIBE is remembered past the managers that met it: the next one's waiters do not ask again", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const user = "no-pubsub-again"
      yield* aclUser(fleet, user, "secret", "-@pubsub")
      const nodes = fleet.nodes.map((node) => ({ ...node, username: user, password: Redacted.make("secret") }))
      const refusedSubscribes = Effect.map(
        Effect.forEach(fleet.servers, (server) => server.call("INFO", "commandstats")),
        (infos) => infos.reduce((sum: number, info) => sum + Number(/cmdstat_subscribe:.*rejected_calls=(\d+)/.exec(String(info))?.[1] ?? 0), 0)
      )
      const holder = yield* redisManager(fleet.nodes)
      const held = yield* holder.acquire("again", { ttl: "10 seconds" })
      const waitOnce = Effect.scoped(Effect.gen(function*() {
        const waiter = yield* redisManager(nodes)
        const exit = yield* Effect.exit(Effect.scoped(waiter.acquire("again", { ttl: "10 seconds", retry: Redlock.retry({ delay: 20, times: 2 }) })))
        assert.isTrue(exit._tag === "Failure", "the holder keeps it")
      }))
      const before = yield* refusedSubscribes
      yield* waitOnce
      const refusedFirst = yield* refusedSubscribes
      assert.strictEqual(refusedFirst - before, 3, "the first manager asked each server once")
      // Every manager of that user is closed: the next one knows already.
      yield* waitOnce
      assert.strictEqual(yield* refusedSubscribes, refusedFirst, "the next manager asked no server again")
      yield* holder.release(held)
    }))

  it.scoped("the subscriber connection killed mid-wait: a release while it reconnects is not lost, the waiter tries again once it listens", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const holder = yield* redisManager(fleet.nodes)
      const waiter = yield* redisManager(fleet.nodes)
      const killSubscribers = Effect.asVoid(
        Effect.forEach(fleet.servers, (server) => server.call("CLIENT", "KILL", "TYPE", "pubsub"))
      )
      // Released by another process (the script sent on the test's own connections): only the channel could
      // tell the waiter (a release of this process tells it from the release's answer).
      const releasedElsewhere = (held: Lock.Lock) =>
        Effect.asVoid(Effect.forEach(fleet.servers, (server) =>
          server.call("EVAL", Scripts.releaseOwned.lua, "1", ...held.keys, held.value)))
      const wokenAfter = yield* wokenAfterRelease(holder, waiter, "killed", killSubscribers, releasedElsewhere)
      // The subscriber reconnects 50 ms after the kill, and subscribes the watched key again.
      assert.isBelow(wokenAfter, 2_000, `acquired ${Math.round(wokenAfter)} ms after the release (next poll: 10 s)`)
      // Announcements work again on the new connection.
      const next = yield* wokenAfterRelease(holder, waiter, "killed", Effect.void, releasedElsewhere)
      assert.isBelow(next, 500, `woken ${Math.round(next)} ms after the release (next poll: 10 s)`)
    }))

  it.scoped("a hand-over between waiters of one process publishes nothing; a release another connection listens for is published to it", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const published = Effect.map(
        Effect.forEach(fleet.servers, (server) => server.call("INFO", "commandstats")),
        (infos) => infos.map((info) => Number(/cmdstat_publish:calls=(\d+)/.exec(String(info))?.[1] ?? 0))
      )
      const holder = yield* redisManager(fleet.nodes)
      const waiter = yield* redisManager(fleet.nodes)
      let before: ReadonlyArray<number> = []
      const count = Effect.map(published, (counts) => void (before = counts))
      const wokenAfter = yield* wokenAfterRelease(holder, waiter, "own", count)
      assert.isBelow(wokenAfter, 500, `woken ${Math.round(wokenAfter)} ms after the release (next poll: 10 s)`)
      assert.deepStrictEqual(yield* published, before, "only this process listened: the release's answer told its waiter")

      // Another process listens to the channel: the same release is published, naming the waiter.
      const listener = yield* Effect.acquireRelease(
        Effect.sync(() => new Redis({ host: "127.0.0.1", port: fleet.servers[0].port })),
        (client) => Effect.promise(() => client.quit().catch(() => undefined))
      )
      const messages: Array<string> = []
      listener.on("message", (_channel: string, message: string) => void messages.push(message))
      yield* Effect.promise(() => listener.subscribe(`${Scripts.releaseChannelPrefix}redlock:other`))
      const again = yield* wokenAfterRelease(holder, waiter, "other", count)
      assert.isBelow(again, 500, `woken ${Math.round(again)} ms after the release (next poll: 10 s)`)
      // Two releases: the holder's, naming the waiter, and the waiter's own at the end, naming nobody.
      const after = yield* published
      assert.deepStrictEqual(after.map((calls, index) => calls - before[index]), [2, 0, 0], "published where it is listened for")
      yield* Effect.sleep("50 millis")
      assert.strictEqual(messages.length, 2, "the listener heard both")
      assert.match(messages[0], /^[\w-]{28}$/, "the first names the waiter first in line")
      assert.strictEqual(messages[1], "")
    }))

  it.scoped("the release script: a plain key nobody waits for answers a number (deleted, announced, published only where heard); one with a line, its list", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const server = fleet.servers[0]
      const release = (key: string, ...args: ReadonlyArray<string>) =>
        server.call("EVALSHA", Scripts.releaseOwned.sha, 1, key, ...args)
      yield* server.call("SCRIPT", "LOAD", Scripts.releaseOwned.lua)
      const set = (key: string, value: string) => server.call("SET", key, value, "PX", 10_000)

      const { plainReleaseAnnounced: announced, plainReleasePublished: published } = Scripts
      // Ours, nobody subscribed: deleted, announced, not published (no one heard it), whatever the process hears.
      for (const own of ["0", "1"]) {
        yield* set("plain", "v")
        assert.strictEqual(yield* release("plain", "v", "1", "0", own), announced, `own subscribers ${own}`)
        assert.strictEqual(yield* server.call("EXISTS", "plain"), 0)
      }
      // No count (a cluster's node): published as before.
      yield* set("plain", "v")
      assert.strictEqual(yield* release("plain", "v", "1", "0"), published)
      // Not announced; not ours; someone's data of another type: nothing else done.
      yield* set("plain", "v")
      assert.strictEqual(yield* release("plain", "v", "0", "0", "0"), 1)
      yield* set("plain", "w")
      assert.strictEqual(yield* release("plain", "v", "1", "0", "0"), 0)
      assert.strictEqual(yield* server.call("GET", "plain"), "w")
      yield* server.call("RPUSH", "data", "x")
      assert.strictEqual(yield* release("data", "v", "1", "0", "0"), 0)
      assert.strictEqual(yield* server.call("LLEN", "data"), 1)

      // Another connection listens: published to it; not where its one listener is the process's own (own "1");
      // published again once a second one listens.
      const messages: Array<string> = []
      const listen = Effect.acquireRelease(
        Effect.promise(async () => {
          const client = new Redis({ host: "127.0.0.1", port: server.port })
          client.on("message", (_channel: string, message: string) => void messages.push(message))
          await client.subscribe(`${Scripts.releaseChannelPrefix}plain`)
          return client
        }),
        (client) => Effect.promise(() => client.quit().catch(() => undefined))
      )
      yield* listen
      yield* set("plain", "v")
      assert.strictEqual(yield* release("plain", "v", "1", "0", "0"), published)
      yield* set("plain", "v")
      assert.strictEqual(yield* release("plain", "v", "1", "0", "1"), announced)
      yield* listen
      yield* set("plain", "v")
      assert.strictEqual(yield* release("plain", "v", "1", "0", "1"), published)
      yield* Effect.sleep("50 millis")
      assert.deepStrictEqual(messages, ["", "", ""], "the first listener heard two releases, the second one")

      // A line (the general path): the key is handed to the first waiter, whose value the announcement names.
      yield* set("plain", "v")
      yield* server.call("ZADD", Scripts.queueKey("plain"), 1, "next")
      yield* server.call("ZADD", "plain\u0000lease", Date.now() + 5_000, "next")
      assert.deepStrictEqual(yield* release("plain", "v", "1", "0", "0"), [1, "plain", "next", 1])
      assert.strictEqual(yield* server.call("GET", "plain"), "next")
    }))

  it.scoped("a user's program whose clients quit without closing the lock manager ends by itself", () =>
    Effect.gen(function*() {
      const fleet = yield* RedisFleet.RedisFleet
      yield* fleet.reset
      const script = fileURLToPath(new URL("./fixtures/user-quits-clients.ts", import.meta.url))
      const ports = fleet.servers.map((server) => String(server.port))
      const ended = yield* Effect.async<{ readonly code: number | null; readonly output: string; readonly afterQuit: number }>(
        (resume) => {
          const child = ChildProcess.spawn(process.execPath, ["--import", "tsx", script, ...ports], {
            stdio: ["ignore", "pipe", "pipe"]
          })
          let output = ""
          let quitAt = Number.NaN
          child.stdout.on("data", (chunk) => {
            output += chunk
            if (output.includes("quit") && Number.isNaN(quitAt)) quitAt = performance.now()
          })
          child.stderr.on("data", (chunk) => void (output += chunk))
          child.on("exit", (code) => resume(Effect.succeed({ code, output, afterQuit: performance.now() - quitAt })))
          // Stopped by its PID if it does not end: the test then fails on the exit code.
          const limit = setTimeout(() => child.kill("SIGKILL"), 20_000)
          child.on("exit", () => clearTimeout(limit))
          return Effect.sync(() => child.kill("SIGKILL"))
        }
      )
      assert.strictEqual(ended.code, 0, ended.output)
      assert.include(ended.output, "quit")
      assert.isBelow(ended.afterQuit, 3_000, `the process lived ${Math.round(ended.afterQuit)} ms after its clients quit`)
    }))
})
