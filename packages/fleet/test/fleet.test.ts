/**
 * The test fleet itself: servers start on free ports, fault controls act on
 * the right process, every process it started is gone when it stops, and a
 * server that cannot start is started again or ends in its error, never in a
 * wait (a hung start once held a test and its teardown past both timeouts).
 */
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { startLocalFleet } from "../src/fleet.js"
import { isRunning as alive, startServer } from "../src/servers.js"

/** A port held by a listener of this process until `close`. */
const takenPort = () =>
  new Promise<{ readonly port: number; readonly close: () => void }>((resolve) => {
    const holder = Net.createServer()
    holder.listen(0, "127.0.0.1", () => {
      const address = holder.address()
      resolve({ port: typeof address === "object" && address !== null ? address.port : 0, close: () => holder.close() })
    })
  })

const parent = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-redlock-fleet-test-"))
afterAll(() => Fs.rmSync(parent, { recursive: true, force: true }))

const serverArgs = (
  dir: string,
  port: number
) => ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir]

describe("local redis-server fleet", () => {
  it("starts servers on distinct free ports; pause, resume, kill and start act on that server; stop ends every process", async () => {
    const fleet = await startLocalFleet(2)
    const [first, second] = fleet.servers
    const pids = [first.pid(), second.pid()]
    expect(first.port).not.toBe(second.port)
    expect(pids.every(alive)).toBe(true)
    expect(await first.call("PING")).toBe("PONG")

    await first.pause()
    const paused = await Promise.race([
      first.admin.ping(),
      new Promise((resolve) => setTimeout(() => resolve("no answer"), 200))
    ])
    expect(paused, "a paused server does not answer").toBe("no answer")
    expect(await second.call("PING"), "the other server is not affected").toBe("PONG")
    await first.resume()
    expect(await first.call("PING")).toBe("PONG")

    await first.call("SET", "k", "v")
    await first.kill()
    expect(alive(pids[0]), "kill resolves once the process is gone").toBe(false)
    expect(first.pid()).toBeUndefined()
    await first.start()
    expect(first.pid()).not.toBe(pids[0])
    expect(await first.call("DBSIZE"), "a restart without persistence loses every key").toBe(0)

    const restarted = first.pid()
    await first.pause() // stopping the fleet must also end a paused server
    await fleet.stop()
    expect(alive(restarted)).toBe(false)
    expect(alive(pids[1])).toBe(false)
  })

  it("a persistent fleet keeps an acknowledged write across a kill; reset empties it", async () => {
    const fleet = await startLocalFleet(1, { persistence: true })
    try {
      const [server] = fleet.servers
      await server.call("SET", "k", "v")
      await server.kill()
      await server.start()
      expect(await server.call("GET", "k")).toBe("v")
      await server.pause()
      await fleet.reset()
      expect(await fleet.dbsizes()).toEqual([0])
    } finally {
      await fleet.stop()
    }
  })

  it("a shifted clock: the server's TIME jumps and a key with a ttl expires at once; the other servers' clocks stay; a restart keeps the shift", async () => {
    const fleet = await startLocalFleet(2, { shiftableClocks: true })
    try {
      const skew = async (index: number) => {
        const [seconds, micros] = await fleet.servers[index].call("TIME") as [string, string]
        return Number(seconds) * 1000 + Number(micros) / 1000 - Date.now()
      }
      expect(Math.abs(await skew(0))).toBeLessThan(500)
      await fleet.servers[0].call("SET", "k", "v", "PX", 10_000)
      fleet.shiftClock(0, 20_000)
      expect(await skew(0)).toBeGreaterThan(19_000)
      expect(Math.abs(await skew(1))).toBeLessThan(500)
      expect(await fleet.servers[0].call("GET", "k")).toBeNull()
      await fleet.servers[0].kill()
      await fleet.servers[0].start()
      expect(await skew(0)).toBeGreaterThan(19_000)
      fleet.shiftClock(0, -5_000)
      expect(await skew(0)).toBeLessThan(-4_000)
      // A clock that runs fast: 50% here, so that the timer's noise does not hide it.
      const serverMillis = async () => {
        const [seconds, micros] = await fleet.servers[0].call("TIME") as [string, string]
        return Number(seconds) * 1000 + Number(micros) / 1000
      }
      fleet.shiftClock(0, 0, 0.5)
      const [server0, local0] = [await serverMillis(), Date.now()]
      await new Promise((resolve) => setTimeout(resolve, 400))
      const [server1, local1] = [await serverMillis(), Date.now()]
      expect((server1 - server0) / (local1 - local0)).toBeGreaterThan(1.4)
      expect((server1 - server0) / (local1 - local0)).toBeLessThan(1.6)
      expect(() => fleet.shiftClock(2, 1)).toThrow(/cannot be shifted/)
    } finally {
      await fleet.stop()
    }
  })

  it("a server that exits before it answers (its port taken) is started again on new ports", async () => {
    const taken = await takenPort()
    const given: Array<number> = []
    const dirs: Array<string> = []
    const server = await startServer({
      index: 0,
      parent,
      name: "taken",
      portCount: 1,
      argsOf: (dir, [port]) => {
        given.push(port)
        dirs.push(dir)
        return serverArgs(dir, given.length === 1 ? taken.port : port)
      }
    })
    try {
      expect(given.length, "started twice").toBe(2)
      expect(given[0]).not.toBe(given[1])
      expect(server.port).toBe(given[1])
      expect(await server.call("PING")).toBe("PONG")
      expect(Fs.existsSync(dirs[0]), "the first try's folder is removed").toBe(false)
    } finally {
      await server.stop()
      taken.close()
    }
  })

  it("a server that never starts ends in its error after three tries", async () => {
    const taken = await takenPort()
    const dirs: Array<string> = []
    const error = await startServer({
      index: 0,
      parent,
      name: "never",
      portCount: 1,
      argsOf: (dir) => {
        dirs.push(dir)
        return serverArgs(dir, taken.port)
      }
    }).then(() => undefined, (error: Error) => error)
    taken.close()
    expect(error?.message ?? "started").toMatch(/exited \(1\) before it was ready/)
    expect(dirs.length).toBe(3)
    expect(dirs.every((dir) => !Fs.existsSync(dir)), "every try's folder is removed").toBe(true)
  })
})
