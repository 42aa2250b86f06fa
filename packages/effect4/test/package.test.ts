/**
 * The Effect 4 package as users get it: built, packed, installed from the
 * tarball into a scratch folder with `effect@4.1`, `ioredis`, `iovalkey` and `redis`
 * from the registry, imported (ES modules and CommonJS), type-checked by a strict
 * TypeScript 5.9 consumer, and its quick start run on local redis-servers.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { layerLocal, RedisFleet } from "./fleet.js"

const root = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "..")
const publicModules = [
  "Lock",
  "Redlock",
  "RedlockError",
  "Promise",
  "RedisNode",
  "RedisNode/Ioredis",
  "RedisNode/Iovalkey",
  "RedisNode/NodeRedis",
  "RedisNode/Glide",
  "RedisNode/Persistence",
  "Fencing/Ioredis",
  "node-redlock",
  "Semaphore",
  "ReadWriteLock",
  "RedlockMetrics"
]

/** A command's stdout; it fails with the error (its stdout and stderr attached) when the command does. */
const run = (command: string, args: ReadonlyArray<string>, cwd: string): Promise<string> =>
  new Promise((resolve, reject) => {
    ChildProcess.execFile(
      command,
      args,
      { cwd, encoding: "utf8", maxBuffer: 64 * 2 ** 20 },
      (error, stdout, stderr) => {
        if (error === null) resolve(stdout)
        else reject(Object.assign(error, { stdout, stderr, message: `${error.message}\n${stdout}\n${stderr}` }))
      }
    )
  })

let scratch = ""
let core = ""
let tarball = ""
const project = () => Path.join(scratch, "project")

describe("the Effect 4 package as users install it", () => {
  beforeAll(async () => {
    scratch = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-redlock-v4-package-"))
    // As they are published: built and packed by the repository's pack script (this line renamed
    // effect-redlock in its tarball).
    const pack = [Path.join(root, "..", "..", "scripts", "pack.mjs"), "--into", scratch, "core", "effect4"]
    const tarballs = (await run(process.execPath, pack, root)).trim().split("\n")
    assert.lengthOf(tarballs, 2)
    core = tarballs[0]!
    tarball = tarballs[1]!
    Fs.mkdirSync(project())
    Fs.writeFileSync(
      Path.join(project(), "package.json"),
      JSON.stringify({ name: "consumer", private: true, type: "module" })
    )
    await run("npm", [
      "install",
      "--no-audit",
      "--no-fund",
      core,
      tarball,
      "effect@4.1",
      "ioredis@5",
      "iovalkey@0.4",
      "redis@6",
      "@valkey/valkey-glide@2",
      "typescript@5.9",
      "@types/node@22"
    ], project())
  }, 300_000)

  afterAll(() => {
    if (scratch !== "") Fs.rmSync(scratch, { recursive: true, force: true })
  })

  it("the tarball holds the built package, its README and LICENSE, and no sources, tests or tooling", async () => {
    const files = (await run("tar", ["tzf", tarball], scratch)).trim().split("\n").map((f) =>
      f.replace(/^package\//, "")
    )
    for (
      const wanted of [
        "package.json",
        "README.md",
        "LICENSE",
        "dist/esm/index.js",
        "dist/esm/index.d.ts",
        "dist/cjs/index.js",
        "dist/cjs/index.d.ts",
        "dist/cjs/package.json"
      ]
    ) {
      assert.include(files, wanted)
    }
    assert.deepStrictEqual(files.filter((file) => !/^(package\.json|README\.md|LICENSE|dist\/.*)$/.test(file)), [])
  })

  it("installs as effect-redlock, depending on core alone at its version; effect ^4.1, ioredis, iovalkey, redis and GLIDE are peers", () => {
    const manifest = JSON.parse(
      Fs.readFileSync(Path.join(project(), "node_modules", "effect-redlock", "package.json"), "utf8")
    )
    const coreManifest = JSON.parse(
      Fs.readFileSync(Path.join(project(), "node_modules", "@effect-redlock", "core", "package.json"), "utf8")
    )
    assert.strictEqual(manifest.name, "effect-redlock")
    assert.strictEqual(manifest.version, "0.2.0")
    assert.deepStrictEqual(manifest.dependencies, { "@effect-redlock/core": coreManifest.version })
    assert.deepStrictEqual(manifest.peerDependencies, {
      "@valkey/valkey-glide": "^2.1.0",
      effect: "^4.1.0",
      ioredis: "^5.9.0 || ^6.0.0",
      iovalkey: ">=0.3.0 <1",
      redis: "^5.8.0 || ^6.0.0"
    })
    const effect = JSON.parse(Fs.readFileSync(Path.join(project(), "node_modules", "effect", "package.json"), "utf8"))
    assert.match(effect.version, /^4\./)
  })

  it("every public module imports as an ES module and requires as CommonJS; internals are not exported", async () => {
    const specifiers = ["effect-redlock", ...publicModules.map((m) => `effect-redlock/${m}`)]
    Fs.writeFileSync(
      Path.join(project(), "check.mjs"),
      specifiers.map((s, i) => `import * as m${i} from ${JSON.stringify(s)}`).join("\n") +
        `\nconsole.log(JSON.stringify([${specifiers.map((_, i) => `Object.keys(m${i}).length`).join(",")}]))\n`
    )
    Fs.writeFileSync(
      Path.join(project(), "check.cjs"),
      `console.log(JSON.stringify(${JSON.stringify(specifiers)}.map((s) => Object.keys(require(s)).length)))\n`
    )
    const imported = JSON.parse(await run(process.execPath, ["check.mjs"], project())) as Array<number>
    const required = JSON.parse(await run(process.execPath, ["check.cjs"], project())) as Array<number>
    assert.isTrue(imported.every((count) => count > 0), JSON.stringify(imported))
    assert.isTrue(required.every((count) => count > 0), JSON.stringify(required))
    for (const internal of ["internal/manager/acquisition.js", "engine/attempt.js", "nodes/memory.js"]) {
      const refused = await run(process.execPath, [
        "--input-type=module",
        "-e",
        `import("effect-redlock/${internal}").then(() => console.log("imported"), (e) => console.log(e.code))`
      ], project())
      assert.strictEqual(refused.trim(), "ERR_PACKAGE_PATH_NOT_EXPORTED", internal)
    }
  })

  it("a strict TypeScript 5.9 consumer type-checks with nodenext resolution", async () => {
    Fs.writeFileSync(
      Path.join(project(), "main.ts"),
      `import { Duration, Effect, Layer } from "effect"
import { Redlock } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import * as NodeRedis from "effect-redlock/RedisNode/NodeRedis"
import type { LockNotAcquired } from "effect-redlock/RedlockError"
import { createClient } from "redis"

const program = Effect.gen(function*() {
  const lock = yield* Redlock.acquire(["orders:42"], { ttl: "10 seconds" })
  const remaining: number = Duration.toMillis(yield* lock.remaining)
  return [lock.resources[0], remaining] as const
}).pipe(Effect.scoped)

export const main = program.pipe(
  Effect.provide(Redlock.layer().pipe(Layer.provide(Ioredis.layer([{ host: "127.0.0.1" }]))))
)
// A node-redis user's own client fits the node options as it is.
export const withNodeRedis = program.pipe(
  Effect.provide(Redlock.layer().pipe(Layer.provide(NodeRedis.layer([{ client: createClient() }, { port: 6380 }]))))
)
// Everything required is provided; the failures are typed.
export const checked: Effect.Effect<readonly [string | undefined, number], LockNotAcquired | { readonly _tag: string }, never> = main
`
    )
    Fs.writeFileSync(
      Path.join(project(), "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true,
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2022",
          types: ["node"],
          noEmit: true
        },
        files: ["main.ts"]
      })
    )
    await run(process.execPath, [
      Path.join(project(), "node_modules", "typescript", "bin", "tsc"),
      "-p",
      "tsconfig.json"
    ], project())
  })

  it.live(
    "the quick start acquires and releases a lock on local redis-servers, from ESM and from CommonJS",
    () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        const nodes = JSON.stringify(fleet.nodes)
        const body = `
const program = Effect.gen(function*() {
  const lock = yield* Redlock.acquire("orders:42", { ttl: "10 seconds" })
  const held = yield* Redlock.inspect("orders:42")
  return [lock.resources[0], held.holder._tag === "Some" && held.holder.value === lock.value]
}).pipe(Effect.scoped)
const live = Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(Nodes.layer(${nodes})))
Effect.runPromise(Effect.provide(program, live)).then((result) => console.log(JSON.stringify(result)))
`
        Fs.writeFileSync(
          Path.join(project(), "quick.mjs"),
          `import { Effect, Layer } from "effect"
import { Redlock } from "effect-redlock"
import * as Nodes from "effect-redlock/RedisNode/Ioredis"
${body}`
        )
        Fs.writeFileSync(
          Path.join(project(), "quick.cjs"),
          `const { Effect, Layer } = require("effect")
const { Redlock } = require("effect-redlock")
const Nodes = require("effect-redlock/RedisNode/Ioredis")
${body}`
        )
        // The same over node-redis nodes, as a user of the redis package would write it.
        Fs.writeFileSync(
          Path.join(project(), "quick-node-redis.mjs"),
          `import { Effect, Layer } from "effect"
import { Redlock } from "effect-redlock"
import * as Nodes from "effect-redlock/RedisNode/NodeRedis"
${body}`
        )
        for (const file of ["quick.mjs", "quick.cjs", "quick-node-redis.mjs"]) {
          const result = yield* Effect.promise(() => run(process.execPath, [file], project()))
          assert.deepStrictEqual(JSON.parse(result), ["orders:42", true], file)
        }
        for (const server of fleet.servers) {
          assert.deepStrictEqual(yield* Effect.promise(() => server.admin.keys("*")), [], "released on every node")
        }
      }).pipe(Effect.provide(layerLocal(3))),
    60_000
  )

  it.live(
    "a Valkey GLIDE user's project: a lock over their own GlideClients from the Effect 4 API and from promise code, and over GLIDE nodes of ours",
    () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        const ports = fleet.servers.map((server) => String(server.port))
        Fs.copyFileSync(
          Path.join(root, "..", "fleet", "fixtures", "glideUser.mjs"),
          Path.join(project(), "glide-user.mjs")
        )
        const printed = yield* Effect.promise(() => run(process.execPath, ["glide-user.mjs", ...ports], project()))
        assert.deepStrictEqual(JSON.parse(printed), ["glide:42", "glide:42", "Held", "Released"])
      }).pipe(Effect.provide(layerLocal(3))),
    120_000
  )

  it.live(
    "a plain Node 22 project: core, this package and ioredis install without effect, and effect-redlock/Promise locks (ES module and CommonJS)",
    () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet
        const plain = Path.join(scratch, "plain")
        Fs.mkdirSync(plain)
        Fs.writeFileSync(Path.join(plain, "package.json"), JSON.stringify({ name: "plain-consumer", private: true }))
        yield* Effect.promise(() =>
          run("npm", ["install", "--no-audit", "--no-fund", core, tarball, "ioredis@5"], plain)
        )
        assert.isFalse(Fs.existsSync(Path.join(plain, "node_modules", "effect")), "no effect installed")
        const body = `
const main = async () => {
  const redlock = await makeRedlock(${JSON.stringify(fleet.nodes)}, { restartQuarantine: false })
  const lock = await redlock.acquire("plain:42", { ttl: 10_000 })
  const refused = await redlock.acquire("plain:42", { ttl: 10_000, retry: noRetry }).catch((error) => error)
  const released = await redlock.release(lock)
  await redlock.close()
  console.log(JSON.stringify([lock.resources[0], refused instanceof LockNotAcquired && refused.reason, released.status]))
}
main()
`
        Fs.writeFileSync(
          Path.join(plain, "plain.mjs"),
          `import { LockNotAcquired, makeRedlock, noRetry } from "effect-redlock/Promise"\n${body}`
        )
        Fs.writeFileSync(
          Path.join(plain, "plain.cjs"),
          `const { LockNotAcquired, makeRedlock, noRetry } = require("effect-redlock/Promise")\n${body}`
        )
        for (const file of ["plain.mjs", "plain.cjs"]) {
          const result = yield* Effect.promise(() => run(process.execPath, [file], plain))
          assert.deepStrictEqual(JSON.parse(result), ["plain:42", "Held", "Released"], file)
        }
      }).pipe(Effect.provide(layerLocal(3))),
    300_000
  )
})
