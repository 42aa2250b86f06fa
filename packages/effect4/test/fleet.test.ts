/**
 * The test fleet itself: a server that cannot start is started again, and a
 * start that keeps failing ends in an error, never in a wait (a hung start
 * held a test and its teardown up past both timeouts once).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fs from "node:fs"
import * as Net from "node:net"
import { startProcess, stop } from "./fleet.js"

/** A port held by a listener of this process until `close`. */
const takenPort = () =>
  new Promise<{ readonly port: number; readonly close: () => void }>((resolve) => {
    const holder = Net.createServer()
    holder.listen(0, "127.0.0.1", () => {
      const address = holder.address()
      resolve({ port: typeof address === "object" && address !== null ? address.port : 0, close: () => holder.close() })
    })
  })

const serverArgs = (dir: string, port: number) => ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir]

describe("the test fleet", () => {
  it.live("a server that exits before it answers (its port taken) is started again on new ports", () =>
    Effect.promise(async () => {
      const taken = await takenPort()
      const given: Array<number> = []
      const dirs: Array<string> = []
      const started = await startProcess("effect-redlock-v4-fleet-test-", 1, (dir, [port]) => {
        given.push(port)
        dirs.push(dir)
        return serverArgs(dir, given.length === 1 ? taken.port : port)
      })
      try {
        assert.strictEqual(given.length, 2, "started twice")
        assert.notStrictEqual(given[0], given[1])
        assert.strictEqual(started.port, given[1])
        assert.strictEqual(await started.admin.ping(), "PONG")
        assert.isFalse(Fs.existsSync(dirs[0]), "the first try's folder is removed")
      } finally {
        started.admin.disconnect()
        stop(started.child, started.dir)
        taken.close()
      }
    }))

  it.live("a server that never starts ends in its error after three tries", () =>
    Effect.promise(async () => {
      const taken = await takenPort()
      const dirs: Array<string> = []
      const error = await startProcess("effect-redlock-v4-fleet-test-", 1, (dir) => {
        dirs.push(dir)
        return serverArgs(dir, taken.port)
      }).then(() => undefined, (error: Error) => error)
      taken.close()
      assert.match(error?.message ?? "started", /exited \(1\) before it was ready/)
      assert.strictEqual(dirs.length, 3)
      assert.isTrue(dirs.every((dir) => !Fs.existsSync(dir)), "every try's folder is removed")
    }))
})
