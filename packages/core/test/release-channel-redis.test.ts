/**
 * Waiting when the release announcements cannot arrive, or arrive late, on
 * real servers: user clients made with `lazyConnect`, a user the ACLs refuse
 * pub/sub, the subscriber connection killed mid-wait, and a user's clients
 * quitting while the lock manager stands. In each, no free key sits idle for
 * a waiter that cannot hear of it, and nothing the library opened outlives
 * the user's own clients. (release-channels.test.ts: the channels' own rules.)
 */
import { assert, beforeAll, describe, it } from "vitest"
import { Redis } from "ioredis"
import * as ChildProcess from "node:child_process"
import { fileURLToPath } from "node:url"
import type { LocalFleet } from "@effect-redlock/fleet/fleet.js"
import type { ServerProcess } from "@effect-redlock/fleet/servers.js"
import * as Scripts from "../src/nodes/scripts.js"
import { noRetry, type PromiseLock, retry } from "../src/Promise.js"
import {
  aclUser,
  Cleanup,
  expectEmpty,
  localFleet,
  managerOver,
  overlapping,
  settled,
  sleep,
  slowRetry,
  wokenAfterRelease
} from "./driverSuite.js"

const pubsubConnections = async (server: ServerProcess) =>
  String(await server.call("CLIENT", "LIST", "TYPE", "pubsub")).split("\n").filter((line) => line.trim() !== "").length

/** An ioredis client of the test's own on `port`, closed after the test. */
const ownClient = (port: number, options: { readonly lazyConnect?: boolean } = {}) => {
  const client = new Redis({ host: "127.0.0.1", port, ...options })
  client.on("error", () => {})
  return Cleanup.add(() => client.quit().catch(() => undefined), client)
}

describe("the release channel (redis-servers)", () => {
  const fleetOf = localFleet(3)
  let fleet: LocalFleet
  beforeAll(() => void (fleet = fleetOf()))

  for (const connectFirst of [true, false]) {
    it(`user clients made with lazyConnect (${connectFirst ? "connected first" : "never connected"}): no stall at start, the subscriber connects, a waiter is woken by the release`, async () => {
      await fleet.reset()
      const clients = fleet.servers.map((server) => ownClient(server.port, { lazyConnect: true }))
      if (connectFirst) await Promise.all(clients.map((client) => client.connect()))
      const started = performance.now()
      const waiter = await managerOver(clients.map((client) => ({ client })))
      const built = performance.now() - started
      // A client never connected was waited for until the 1 s connect timeout, in vain.
      assert.isBelow(built, 900, `the manager took ${Math.round(built)} ms`)
      const holder = await managerOver(fleet.nodes)
      const wokenAfter = await wokenAfterRelease(holder, waiter, `lazy-${connectFirst}`)
      assert.isBelow(wokenAfter, 500, `woken ${Math.round(wokenAfter)} ms after the release (next poll: 10 s)`)
      assert.isAtLeast(await pubsubConnections(fleet.servers[0]), 1, "the release subscriber is connected")
    })
  }

  it("an ACL user without pub/sub: releases say Released, a waiter that cannot hear takes no place in line, so a released key is free for anyone", async () => {
    await fleet.reset()
    await aclUser(fleet, "no-pubsub", "secret", "-@pubsub")
    const nodes = fleet.nodes.map((node) => ({ ...node, username: "no-pubsub", password: "secret" }))
    const holder = await managerOver(nodes)
    const waiter = await managerOver(nodes)
    const newcomer = await managerOver(nodes)
    const held = await holder.acquire("acl", { ttl: 10_000 })
    const abort = new AbortController()
    const waiting = settled(waiter.acquire("acl", { ttl: 10_000, retry: slowRetry, signal: abort.signal }))
    // Its first attempt took a place; the refused SUBSCRIBE makes it try again at once, out of line.
    await sleep(300)
    const inLine = await Promise.all(fleet.servers.map((server) => server.call("ZCARD", "redlock:acl\u0000queue")))
    assert.deepStrictEqual(inLine, [0, 0, 0], "the deaf waiter left the line")
    // Gone before the release: a waiter of the releasing process is told by the release's own answer (no
    // channel needed), and would race the newcomer for the free key.
    abort.abort()
    await waiting
    // The release's PUBLISH is refused inside the script, after the delete: the release still succeeds.
    const released = await holder.release(held)
    assert.strictEqual(released.status, "Released", JSON.stringify(released.outcomes))
    // Handed to the waiter, the key would sit idle until its next poll (10 s away); free, anyone takes it.
    await newcomer.release(await newcomer.acquire("acl", { ttl: 10_000, retry: noRetry }))

    // Three deaf managers contending in turn: every one gets the lock, no overlap, every release says Released.
    const sections: Array<{ readonly start: number; readonly end: number }> = []
    const statuses: Array<string> = []
    const turns = retry({ delay: 20, times: 500 })
    await Promise.all([holder, waiter, newcomer].map(async (manager) => {
      for (let turn = 0; turn < 5; turn++) {
        const lock = await manager.acquire("acl-turns", { ttl: 10_000, retry: turns })
        const start = performance.now()
        await sleep(2)
        sections.push({ start, end: performance.now() })
        statuses.push((await manager.release(lock)).status)
      }
    }))
    assert.strictEqual(sections.length, 15)
    assert.deepStrictEqual(overlapping(sections), [])
    assert.deepStrictEqual([...new Set(statuses)], ["Released"])
    await expectEmpty(fleet)
  })

  it("a refused SUBSCRIBE is remembered past the managers that met it: the next one's waiters do not ask again", async () => {
    await fleet.reset()
    await aclUser(fleet, "no-pubsub-again", "secret", "-@pubsub")
    const nodes = fleet.nodes.map((node) => ({ ...node, username: "no-pubsub-again", password: "secret" }))
    const refusedSubscribes = async () =>
      (await Promise.all(fleet.servers.map((server) => server.call("INFO", "commandstats"))))
        .reduce(
          (sum: number, info) => sum + Number(/cmdstat_subscribe:.*rejected_calls=(\d+)/.exec(String(info))?.[1] ?? 0),
          0
        )
    const holder = await managerOver(fleet.nodes)
    const held = await holder.acquire("again", { ttl: 10_000 })
    const waitOnce = async () => {
      const waiter = await managerOver(nodes)
      const outcome = await waiter.acquire("again", { ttl: 10_000, retry: retry({ delay: 20, times: 2 }) }).then(
        () => "acquired",
        () => "refused"
      )
      assert.strictEqual(outcome, "refused", "the holder keeps it")
      await waiter.close()
    }
    const before = await refusedSubscribes()
    await waitOnce()
    const refusedFirst = await refusedSubscribes()
    assert.strictEqual(refusedFirst - before, 3, "the first manager asked each server once")
    // Every manager of that user is closed: the next one knows already.
    await waitOnce()
    assert.strictEqual(await refusedSubscribes(), refusedFirst, "the next manager asked no server again")
    await holder.release(held)
  })

  // Released by another process (the script sent on the test's own connections): only the channel could
  // tell the waiter (a release of this process tells it from the release's answer).
  const releasedElsewhere = (held: PromiseLock) =>
    Promise.all(
      fleet.servers.map((server) =>
        server.call("EVAL", Scripts.releaseOwned.lua, "1", `redlock:${held.resources[0]}`, held.value)
      )
    )

  it("the subscriber connection killed mid-wait: a release while it reconnects is not lost, the waiter tries again once it listens", async () => {
    await fleet.reset()
    const holder = await managerOver(fleet.nodes)
    const waiter = await managerOver(fleet.nodes)
    const killSubscribers = () =>
      Promise.all(fleet.servers.map((server) => server.call("CLIENT", "KILL", "TYPE", "pubsub")))
    const wokenAfter = await wokenAfterRelease(holder, waiter, "killed", {
      beforeRelease: killSubscribers,
      release: releasedElsewhere
    })
    // The subscriber reconnects 50 ms after the kill, and subscribes the watched key again.
    assert.isBelow(wokenAfter, 2_000, `acquired ${Math.round(wokenAfter)} ms after the release (next poll: 10 s)`)
    // Announcements work again on the new connection.
    const next = await wokenAfterRelease(holder, waiter, "killed", { release: releasedElsewhere })
    assert.isBelow(next, 500, `woken ${Math.round(next)} ms after the release (next poll: 10 s)`)
  })

  it("a hand-over between waiters of one process publishes nothing; a release another connection listens for is published to it", async () => {
    await fleet.reset()
    const published = async () =>
      (await Promise.all(fleet.servers.map((server) => server.call("INFO", "commandstats"))))
        .map((info) => Number(/cmdstat_publish:calls=(\d+)/.exec(String(info))?.[1] ?? 0))
    const holder = await managerOver(fleet.nodes)
    const waiter = await managerOver(fleet.nodes)
    let before: ReadonlyArray<number> = []
    const count = async () => void (before = await published())
    const wokenAfter = await wokenAfterRelease(holder, waiter, "own", { beforeRelease: count })
    assert.isBelow(wokenAfter, 500, `woken ${Math.round(wokenAfter)} ms after the release (next poll: 10 s)`)
    assert.deepStrictEqual(
      await published(),
      before,
      "only this process listened: the release's answer told its waiter"
    )

    // Another process listens to the channel: the same release is published, naming the waiter.
    const listener = ownClient(fleet.servers[0].port)
    const messages: Array<string> = []
    listener.on("message", (_channel: string, message: string) => void messages.push(message))
    await listener.subscribe(`${Scripts.releaseChannelPrefix}redlock:other`)
    const again = await wokenAfterRelease(holder, waiter, "other", { beforeRelease: count })
    assert.isBelow(again, 500, `woken ${Math.round(again)} ms after the release (next poll: 10 s)`)
    // Two releases: the holder's, naming the waiter, and the waiter's own at the end, naming nobody.
    const after = await published()
    assert.deepStrictEqual(
      after.map((calls, index) => calls - before[index]),
      [2, 0, 0],
      "published where it is listened for"
    )
    await sleep(50)
    assert.strictEqual(messages.length, 2, "the listener heard both")
    assert.match(messages[0], /^[\w-]{28}$/, "the first names the waiter first in line")
    assert.strictEqual(messages[1], "")
  })

  it("the release script: a plain key nobody waits for answers a number (deleted, announced, published only where heard); one with a line, its list", async () => {
    await fleet.reset()
    const server = fleet.servers[0]
    const release = (key: string, ...args: ReadonlyArray<string>) =>
      server.call("EVALSHA", Scripts.releaseOwned.sha, 1, key, ...args)
    await server.call("SCRIPT", "LOAD", Scripts.releaseOwned.lua)
    const set = (key: string, value: string) => server.call("SET", key, value, "PX", 10_000)

    const { plainReleaseAnnounced: announced, plainReleasePublished: published } = Scripts
    // Ours, nobody subscribed: deleted, announced, not published (no one heard it), whatever the process hears.
    for (const own of ["0", "1"]) {
      await set("plain", "v")
      assert.strictEqual(await release("plain", "v", "1", "0", own), announced, `own subscribers ${own}`)
      assert.strictEqual(await server.call("EXISTS", "plain"), 0)
    }
    // No count (a cluster's node): published as before.
    await set("plain", "v")
    assert.strictEqual(await release("plain", "v", "1", "0"), published)
    // Not announced; not ours; someone's data of another type: nothing else done.
    await set("plain", "v")
    assert.strictEqual(await release("plain", "v", "0", "0", "0"), 1)
    await set("plain", "w")
    assert.strictEqual(await release("plain", "v", "1", "0", "0"), 0)
    assert.strictEqual(await server.call("GET", "plain"), "w")
    await server.call("RPUSH", "data", "x")
    assert.strictEqual(await release("data", "v", "1", "0", "0"), 0)
    assert.strictEqual(await server.call("LLEN", "data"), 1)

    // Another connection listens: published to it; not where its one listener is the process's own (own "1");
    // published again once a second one listens.
    const messages: Array<string> = []
    const listen = async () => {
      const client = ownClient(server.port)
      client.on("message", (_channel: string, message: string) => void messages.push(message))
      await client.subscribe(`${Scripts.releaseChannelPrefix}plain`)
    }
    await listen()
    await set("plain", "v")
    assert.strictEqual(await release("plain", "v", "1", "0", "0"), published)
    await set("plain", "v")
    assert.strictEqual(await release("plain", "v", "1", "0", "1"), announced)
    await listen()
    await set("plain", "v")
    assert.strictEqual(await release("plain", "v", "1", "0", "1"), published)
    await sleep(50)
    assert.deepStrictEqual(messages, ["", "", ""], "the first listener heard two releases, the second one")

    // A line (the general path): the key is handed to the first waiter, whose value the announcement names.
    await set("plain", "v")
    await server.call("ZADD", Scripts.queueKey("plain"), 1, "next")
    await server.call("ZADD", "plain\u0000lease", Date.now() + 5_000, "next")
    assert.deepStrictEqual(await release("plain", "v", "1", "0", "0"), [1, "plain", "next", 1])
    assert.strictEqual(await server.call("GET", "plain"), "next")
  })

  it("a user's program whose clients quit without closing the lock manager ends by itself", async () => {
    await fleet.reset()
    const script = fileURLToPath(new URL("./fixtures/user-quits-clients.ts", import.meta.url))
    const ports = fleet.servers.map((server) => String(server.port))
    const ended = await new Promise<
      { readonly code: number | null; readonly output: string; readonly afterQuit: number }
    >((resolve) => {
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
      // Stopped by its PID if it does not end: the test then fails on the exit code.
      const limit = setTimeout(() => child.kill("SIGKILL"), 20_000)
      child.on("exit", (code) => {
        clearTimeout(limit)
        resolve({ code, output, afterQuit: performance.now() - quitAt })
      })
    })
    assert.strictEqual(ended.code, 0, ended.output)
    assert.include(ended.output, "quit")
    assert.isBelow(ended.afterQuit, 3_000, `the process lived ${Math.round(ended.afterQuit)} ms after its clients quit`)
  })
})
