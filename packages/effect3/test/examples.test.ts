/**
 * The runnable examples in examples/, each run as its own process against 3
 * real redis-servers (plus one as the fenced storage), configured through the
 * environment as a user would. `examples/testing.test.ts` runs with the tests.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"

const examples = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "..", "examples")

const runExample = (name: string, fleet: RedisFleet.Fleet) =>
  Effect.async<{ readonly code: number | null; readonly output: string }>((resume) => {
    const child = ChildProcess.spawn(process.execPath, ["--import", "tsx", Path.join(examples, name)], {
      env: {
        ...process.env,
        REDLOCK_NODES: fleet.servers.slice(0, 3).map((server) => `redis://127.0.0.1:${server.port}`).join(","),
        // The fleet's servers were just started: see docs/quarantine.md.
        REDLOCK_RESTART_QUARANTINE: "false",
        STORAGE_URL: `redis://127.0.0.1:${fleet.servers[3].port}`
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => void (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => void (output += chunk.toString()))
    child.once("close", (code) => resume(Effect.succeed({ code, output })))
    return Effect.sync(() => void child.kill("SIGKILL"))
  })

layer(RedisFleet.layerLocal(4), { timeout: 60_000, excludeTestServices: true })("examples", (it) => {
  it.effect("scoped-lock.ts holds the lock for its scope", () =>
    Effect.gen(function*() {
      const { code, output } = yield* runExample("scoped-lock.ts", yield* RedisFleet.RedisFleet)
      assert.strictEqual(code, 0, output)
      assert.match(output, /holding orders:42 for 9s \d+ms/)
    }))

  it.effect("with-lock.ts runs longer than one ttl under an auto-extended lock", () =>
    Effect.gen(function*() {
      const { code, output } = yield* runExample("with-lock.ts", yield* RedisFleet.RedisFleet)
      assert.strictEqual(code, 0, output)
      assert.include(output, "step 3 of 3")
      assert.include(output, "message=rebuilt")
    }))

  it.effect("fencing-token.ts writes with increasing tokens", () =>
    Effect.gen(function*() {
      const { code, output } = yield* runExample("fencing-token.ts", yield* RedisFleet.RedisFleet)
      assert.strictEqual(code, 0, output)
      const tokens = [...output.matchAll(/saved with fencing token (\d+)/g)].map((match) => Number(match[1]))
      assert.strictEqual(tokens.length, 2, output)
      assert.isAbove(tokens[1], tokens[0])
    }))

  it.effect("semaphore.ts builds five reports, at most two at once", () =>
    Effect.gen(function*() {
      const { code, output } = yield* runExample("semaphore.ts", yield* RedisFleet.RedisFleet)
      assert.strictEqual(code, 0, output)
      assert.strictEqual([...output.matchAll(/building report \d/g)].length, 5, output)
      assert.include(output, "5 reports built, at most 2 at once")
    }))

  it.effect("read-write.ts runs the readers together and the migration alone", () =>
    Effect.gen(function*() {
      const { code, output } = yield* runExample("read-write.ts", yield* RedisFleet.RedisFleet)
      assert.strictEqual(code, 0, output)
      assert.strictEqual([...output.matchAll(/report \d reads/g)].length, 3, output)
      assert.match(output, /the migration writes \(0 reading\)/)
      assert.notInclude(output, "WHILE WRITING")
      assert.include(output, "message=done")
    }))

  it.effect("opentelemetry.ts exports the lock manager's spans", () =>
    Effect.gen(function*() {
      const { code, output } = yield* runExample("opentelemetry.ts", yield* RedisFleet.RedisFleet)
      assert.strictEqual(code, 0, output)
      for (const span of ["Redlock.attempt", "Redlock.acquire", "Redlock.release", "example"]) {
        assert.include(output, `name: '${span}'`)
      }
      assert.include(output, "acquisitions so far: 1")
    }))
})
