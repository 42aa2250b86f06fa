/**
 * The packages as users get them: built, packed, installed from the tarballs
 * into a scratch folder with `effect@3`, `ioredis`, `iovalkey` and `redis` from the registry, then
 * imported (ES modules and CommonJS), type-checked by a strict consumer, and
 * the installed `redlock` run.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { stripVTControlCharacters } from "node:util"
import { fileURLToPath } from "node:url"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"

const root = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..")
const publicModules = [
  "Lock",
  "Redlock",
  "RedlockError",
  "RedisNode",
  "RedlockMetrics",
  "RedisNode/Ioredis",
  "RedisNode/Iovalkey",
  "RedisNode/NodeRedis",
  "RedisNode/Glide",
  "Fencing/Ioredis",
  "Promise",
  "node-redlock",
  "Semaphore",
  "ReadWriteLock"
]

/**
 * A command's stdout; it fails with the error (its stdout and stderr attached) when the command does.
 * Never synchronous: a worker that blocks for a minute (build, pack, install) cannot read vitest's
 * replies, and vitest reports a timeout of its own messages even though every test passed.
 */
const run = (command: string, args: ReadonlyArray<string>, cwd: string): Promise<string> =>
  new Promise((resolve, reject) => {
    ChildProcess.execFile(
      command,
      args,
      { cwd, encoding: "utf8", maxBuffer: 64 * 2 ** 20 },
      (error, stdout, stderr) => {
        if (error === null) resolve(stdout)
        else reject(Object.assign(error, { stdout, stderr }))
      }
    )
  })

/** A command that must fail: its stderr. */
const failing = async (command: string, args: ReadonlyArray<string>, cwd: string): Promise<string> => {
  try {
    await run(command, args, cwd)
  } catch (error) {
    return String((error as { stderr?: unknown }).stderr)
  }
  throw new Error(`${command} ${args.join(" ")} succeeded`)
}

/** Bytes of the files under `dir`. */
const sizeOf = (dir: string): number =>
  Fs.readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .reduce((total, entry) => total + Fs.statSync(Path.join(entry.parentPath, entry.name)).size, 0)

let scratch = ""
let core = ""
let library = ""
let cli = ""

describe("the packages as users install them", () => {
  beforeAll(async () => {
    scratch = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-redlock-package-"))
    // As they are published: built and packed by the repository's pack script.
    const pack = [Path.join(root, "scripts", "pack.mjs"), "--into", scratch, "core", "effect3", "cli"]
    const tarballs = (await run(process.execPath, pack, root)).trim().split("\n")
    assert.lengthOf(tarballs, 3)
    core = tarballs[0]!
    library = tarballs[1]!
    cli = tarballs[2]!
    const project = Path.join(scratch, "project")
    Fs.mkdirSync(project)
    Fs.writeFileSync(Path.join(project, "package.json"), JSON.stringify({ name: "consumer", private: true }))
    await run("npm", [
      "install",
      "--no-audit",
      "--no-fund",
      core,
      library,
      cli,
      "effect@3",
      "ioredis",
      "iovalkey@0.4",
      "redis",
      "@valkey/valkey-glide@2",
      "typescript@5.9",
      "@types/node@20"
    ], project)
  }, 300_000)

  afterAll(() => {
    if (scratch !== "") Fs.rmSync(scratch, { recursive: true, force: true })
  })

  const project = () => Path.join(scratch, "project")

  it("the tarballs hold the built package and its docs, no tests or tooling", async () => {
    const files = async (tarball: string) =>
      (await run("tar", ["tzf", tarball], scratch)).trim().split("\n").map((f) => f.replace(/^package\//, ""))
    const libraryFiles = await files(library)
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
      assert.include(libraryFiles, wanted)
    }
    const tooling = /^(test|bench|faults|fleet|cli|demo|examples|scripts|\.ci)\/|^tsconfig|^vitest/
    assert.deepStrictEqual(libraryFiles.filter((file) => tooling.test(file)), [])
    const coreFiles = await files(core)
    assert.includeMembers(coreFiles, [
      "package.json",
      "README.md",
      "LICENSE",
      "dist/esm/engine/attempt.js",
      "dist/cjs/engine/attempt.d.ts",
      "dist/cjs/package.json"
    ])
    assert.deepStrictEqual(coreFiles.filter((file) => tooling.test(file)), [])
    const cliFiles = await files(cli)
    assert.includeMembers(cliFiles, ["package.json", "README.md", "LICENSE", "dist/redlock.js"])
    // Its own files only: core is bundled into them (the CLI depends on ioredis alone).
    assert.deepStrictEqual(
      cliFiles.filter((file) => !/^(package\.json|README\.md|LICENSE|dist\/(chunks\/)?[\w-]+\.js)$/.test(file)),
      []
    )
    const cliManifest = JSON.parse(await run("tar", ["xzOf", cli, "package/package.json"], scratch))
    assert.deepStrictEqual(Object.keys(cliManifest.dependencies), ["ioredis"])
    assert.isUndefined(cliManifest.bundleDependencies)
  })

  it("the library depends on core alone, at its own version; effect, ioredis, iovalkey, redis and GLIDE are peers", async () => {
    const manifest = (name: string) =>
      JSON.parse(Fs.readFileSync(Path.join(project(), "node_modules", name, "package.json"), "utf8"))
    const library = manifest("effect-redlock")
    const core = manifest("@effect-redlock/core")
    assert.deepStrictEqual(library.dependencies, { "@effect-redlock/core": core.version })
    assert.deepStrictEqual(Object.keys(library.peerDependencies).sort(), [
      "@valkey/valkey-glide",
      "effect",
      "ioredis",
      "iovalkey",
      "redis"
    ])
    // Core needs no Effect: its peers are the clients, all optional.
    assert.isUndefined(core.dependencies)
    assert.deepStrictEqual(Object.keys(core.peerDependencies).sort(), [
      "@valkey/valkey-glide",
      "ioredis",
      "iovalkey",
      "redis"
    ])
  })

  it("every public module imports as an ES module and requires as CommonJS", async () => {
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
    const { Redlock } = JSON.parse(
      await run(process.execPath, [
        "-e",
        "const m = require('effect-redlock'); console.log(JSON.stringify({ Redlock: typeof m.Redlock.acquire }))"
      ], project())
    )
    assert.strictEqual(Redlock, "function")
  })

  it("the promise facade runs from the installed package, as an ES module and as CommonJS", async () => {
    const body = (imports: string) =>
      `${imports}
const main = async () => {
  const redlock = await makeRedlock(RedisNode.layerMemory(3))
  const lock = await redlock.acquire("orders:42", { ttl: 1000 })
  const refused = await redlock.acquire("orders:42", { ttl: 1000, retry: Schedule.stop }).catch((error) => error._tag)
  const released = await redlock.release(lock)
  await redlock.close()
  console.log(JSON.stringify([lock.resources[0], refused, released.status]))
}
main()
`
    Fs.writeFileSync(
      Path.join(project(), "promise.mjs"),
      body(`import { makeRedlock } from "effect-redlock/Promise"
import { RedisNode } from "effect-redlock"
import { Schedule } from "effect"`)
    )
    Fs.writeFileSync(
      Path.join(project(), "promise.cjs"),
      body(`const { makeRedlock } = require("effect-redlock/Promise")
const { RedisNode } = require("effect-redlock")
const { Schedule } = require("effect")`)
    )
    for (const file of ["promise.mjs", "promise.cjs"]) {
      assert.deepStrictEqual(JSON.parse(await run(process.execPath, [file], project())), [
        "orders:42",
        "LockNotAcquired",
        "Released"
      ], file)
    }
  })

  it("internal modules cannot be imported", async () => {
    const stderr = await failing(process.execPath, [
      "--input-type=module",
      "-e",
      "import('effect-redlock/internal/scripts.js')"
    ], project())
    assert.include(stderr, "ERR_PACKAGE_PATH_NOT_EXPORTED")
  })

  /**
   * The compiler's output without the diagnostics of ioredis 6.1's own declaration
   * files, which import the untyped `redis-errors` (TS7016 for any strict consumer
   * of ioredis, with or without this library); every other diagnostic stays.
   */
  const withoutUpstreamErrors = (output: string) =>
    output.split(/\n(?=\S)/).filter((diagnostic) =>
      !/^(\.\.\/)*node_modules\/ioredis\/built\/.*error TS7016: Could not find a declaration file for module 'redis-errors'/
        .test(diagnostic)
    ).join("\n")

  it("a strict TypeScript consumer type-checks with nodenext and with bundler resolution", async () => {
    const source = `import { Duration, Effect, Layer } from "effect"
import { ReadWriteLock, Redlock, Semaphore } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import * as NodeRedis from "effect-redlock/RedisNode/NodeRedis"
import { createClient } from "redis"
import type { LockNotAcquired } from "effect-redlock/RedlockError"
import { makeRedlock } from "effect-redlock/Promise"

const program = Effect.gen(function*() {
  const lock = yield* Redlock.acquire(["orders:42"], { ttl: "10 seconds" })
  const remaining: number = Duration.toMillis(yield* lock.remaining)
  return [lock.resources[0], remaining] as const
}).pipe(Effect.scoped)

export const main = program.pipe(
  Effect.provide(Redlock.layer().pipe(Layer.provide(Ioredis.layer([{ host: "127.0.0.1" }]))))
)
// A node-redis user's own client (RESP3, redis 6's default) fits the node options as it is.
export const withNodeRedis = program.pipe(
  Effect.provide(Redlock.layer().pipe(Layer.provide(NodeRedis.layer([{ client: createClient({ url: "redis://127.0.0.1:6379" }) }, { port: 6380 }]))))
)
// Everything required is provided; the failures are typed.
export const checked: Effect.Effect<readonly [string, number], LockNotAcquired | { readonly _tag: string }, never> = main

// A permit of a semaphore, from the root module and from its own entry point.
export const permitted: Effect.Effect<void, { readonly _tag: string }, Redlock.Redlock> = Effect.log("one of 3").pipe(
  Semaphore.withPermit("reports", { limit: 3, ttl: "10 seconds" })
)
export const rebuilt: Effect.Effect<void, { readonly _tag: string }, Redlock.Redlock> = Effect.log("rebuilt").pipe(
  ReadWriteLock.withWrite("cache", { ttl: "10 seconds", maxReaders: 8 })
)

// The promise facade, as a node-redlock user would move to it.
export const fromPromises = async (): Promise<string> => {
  const redlock = await makeRedlock([{ host: "127.0.0.1", port: 6379 }], { retry: Redlock.noRetry })
  const owner: string = await redlock.using("orders:42", { ttl: 10_000 }, async (lock, signal) => signal.aborted ? "" : lock.value)
  await redlock.close()
  return owner
}
`
    const strict = {
      target: "es2022",
      lib: ["es2022"],
      strict: true,
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      noEmit: true,
      skipLibCheck: false,
      types: ["node"]
    }
    for (
      const [name, options] of [
        ["nodenext", { module: "nodenext", moduleResolution: "nodenext" }],
        ["bundler", { module: "esnext", moduleResolution: "bundler" }]
      ] as const
    ) {
      const dir = Path.join(project(), `ts-${name}`)
      Fs.mkdirSync(dir, { recursive: true })
      Fs.writeFileSync(Path.join(dir, "package.json"), JSON.stringify({ type: "module" }))
      Fs.writeFileSync(Path.join(dir, "main.ts"), source)
      Fs.writeFileSync(
        Path.join(dir, "tsconfig.json"),
        JSON.stringify({ compilerOptions: { ...strict, ...options }, files: ["main.ts"] })
      )
      const checked = await (async () => {
        try {
          return await run(process.execPath, [
            Path.join(project(), "node_modules", "typescript", "bin", "tsc"),
            "-p",
            "tsconfig.json"
          ], dir)
        } catch (error) {
          return String((error as { stdout?: unknown }).stdout)
        }
      })()
      assert.strictEqual(withoutUpstreamErrors(checked).trim(), "", `${name}: ${checked}`)
    }
  })

  it.effect(
    "a plain Node project: core, the library and ioredis install without effect, the README's promise quick start runs (ES module and CommonJS), a strict TypeScript consumer compiles",
    () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const port = fleet.servers[0].port
        yield* Effect.promise(async () => {
          const plain = Path.join(scratch, "plain")
          Fs.mkdirSync(plain)
          Fs.writeFileSync(Path.join(plain, "package.json"), JSON.stringify({ name: "plain-consumer", private: true }))
          await run("npm", [
            "install",
            "--no-audit",
            "--no-fund",
            core,
            library,
            "ioredis",
            "typescript@5.9",
            "@types/node@20"
          ], plain)
          assert.isFalse(Fs.existsSync(Path.join(plain, "node_modules", "effect")), "no effect installed")
          const installed = [
            Path.join(plain, "node_modules", "effect-redlock"),
            Path.join(plain, "node_modules", "@effect-redlock", "core")
          ].reduce((total, dir) => total + sizeOf(dir), 0)
          assert.isAtMost(installed, 3_200_000, `the library's own installed size (at most 3.2 MB): ${installed} bytes`)
          // The README's quick start, on the fleet's server (durable: it votes at once, as a production server does).
          const readme = Fs.readFileSync(Path.join(root, "README.md"), "utf8")
          const section = readme.slice(readme.indexOf("## Quick start: promises"))
          const quickStart = /```ts\n([\s\S]*?)```/.exec(section)![1]!.replace("port: 6379", `port: ${port}`)
          Fs.writeFileSync(Path.join(plain, "quick-start.mjs"), quickStart)
          assert.deepStrictEqual((await run(process.execPath, ["quick-start.mjs"], plain)).trim().split("\n"), [
            "holding orders:42",
            "done"
          ])
          Fs.writeFileSync(
            Path.join(plain, "plain.cjs"),
            `const { makeRedlock, noRetry, LockNotAcquired } = require("effect-redlock/Promise")
const main = async () => {
  const redlock = await makeRedlock([{ port: ${port} }], { restartQuarantine: false })
  const lock = await redlock.acquire("plain:cjs", { ttl: 1000 })
  const refused = await redlock.acquire("plain:cjs", { ttl: 1000, retry: noRetry }).catch((error) => error)
  console.log(JSON.stringify({ lock: Object.keys(JSON.parse(JSON.stringify(lock))), refused: refused instanceof LockNotAcquired && refused.reason }))
  await redlock.close()
}
main()
`
          )
          assert.deepStrictEqual(JSON.parse(await run(process.execPath, ["plain.cjs"], plain)), {
            lock: ["resources", "value", "ttlMillis", "validityMillis", "remainingMillis", "attempts", "outcomes"],
            refused: "Held"
          })
          const dir = Path.join(plain, "ts")
          Fs.mkdirSync(dir)
          Fs.writeFileSync(Path.join(dir, "package.json"), JSON.stringify({ type: "module" }))
          Fs.writeFileSync(
            Path.join(dir, "main.ts"),
            `import { LockNotAcquired, makeRedlock, retry, type PromiseLock } from "effect-redlock/Promise"

export const main = async (): Promise<number> => {
  const redlock = await makeRedlock([{ host: "127.0.0.1", port: 6379, password: "secret" }], { retry: retry({ delay: 10, times: 5 }) })
  const lock: PromiseLock = await redlock.acquire(["a", "b"], { ttl: "10 seconds", autoExtend: { maxHold: 60_000 } })
  const left: number = lock.remaining()
  await redlock.usingPermit("pool", { limit: 2, ttl: 1_000 }, async (_permit, signal) => signal.aborted)
  await redlock.release(lock).catch((error: unknown) => error instanceof LockNotAcquired ? error.reason : undefined)
  await redlock.close()
  return left
}
`
          )
          Fs.writeFileSync(
            Path.join(dir, "tsconfig.json"),
            JSON.stringify({
              compilerOptions: {
                target: "es2022",
                lib: ["es2022"],
                module: "nodenext",
                moduleResolution: "nodenext",
                strict: true,
                exactOptionalPropertyTypes: true,
                noEmit: true,
                skipLibCheck: false,
                types: ["node"]
              },
              files: ["main.ts"]
            })
          )
          const checked = await run(process.execPath, [
            Path.join(plain, "node_modules", "typescript", "bin", "tsc"),
            "-p",
            "tsconfig.json"
          ], dir)
            .catch((error: { readonly stdout?: unknown }) => String(error.stdout))
          assert.strictEqual(checked.trim(), "")
        })
      }).pipe(Effect.provide(RedisFleet.layerLocal(1, { persistence: true }))),
    300_000
  )

  it.effect(
    "a Valkey GLIDE user's project: a lock over their own GlideClients from the Effect 3 API and from promise code, and over GLIDE nodes of ours",
    () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const ports = fleet.servers.map((server) => String(server.port))
        yield* Effect.promise(async () => {
          Fs.copyFileSync(
            Path.join(root, "packages", "fleet", "fixtures", "glideUser.mjs"),
            Path.join(project(), "glide-user.mjs")
          )
          const printed = await run(process.execPath, ["glide-user.mjs", ...ports], project())
          assert.deepStrictEqual(JSON.parse(printed), ["glide:42", "glide:42", "Held", "Released"])
        })
      }).pipe(Effect.provide(RedisFleet.layerLocal(3))),
    120_000
  )

  it.effect(
    "a node-redlock user's project: a 5.0 program and a 4.2 program run and type-check with only their import changed, and no effect is installed",
    () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const port = fleet.servers[0].port
        yield* Effect.promise(async () => {
          const dir = Path.join(scratch, "node-redlock-user")
          Fs.mkdirSync(dir)
          Fs.writeFileSync(
            Path.join(dir, "package.json"),
            JSON.stringify({ name: "node-redlock-user", private: true, type: "module" })
          )
          await run("npm", [
            "install",
            "--no-audit",
            "--no-fund",
            core,
            library,
            "ioredis",
            "typescript@5.9",
            "@types/node@20"
          ], dir)
          assert.isFalse(Fs.existsSync(Path.join(dir, "node_modules", "effect")), "no effect installed")
          // node-redlock 5.0's README, its import changed: a 1 s lock kept through 1.5 s of work by using's extension.
          const version5 = `import Redlock, { ExecutionError, ResourceLockedError } from "effect-redlock/node-redlock"
import Client from "ioredis"

const redis = new Client({ host: "127.0.0.1", port: ${port} })
const redlock = new Redlock([redis], { driftFactor: 0.01, retryCount: 10, retryDelay: 200, retryJitter: 200, automaticExtensionThreshold: 500 })
redlock.on("error", (error) => {
  if (error instanceof ResourceLockedError) return
  console.error(error)
})
let lock = await redlock.acquire(["a"], 5000)
try {
  lock = await lock.extend(5000)
} finally {
  await lock.release()
}
const kept = await redlock.using(["b"], 1000, async (signal) => {
  await new Promise((resolve) => setTimeout(resolve, 1500))
  if (signal.aborted) throw signal.error
  return "kept"
})
const held = await redlock.acquire(["a"], 5000)
const attempts = await redlock.acquire(["a"], 5000, { retryCount: 1, retryDelay: 10 }).then(
  () => -1,
  (error) => error instanceof ExecutionError ? error.attempts.length : -2
)
await held.release()
console.log(JSON.stringify([kept, attempts]))
await redlock.quit()
`
          // node-redlock 4.2's README, its require changed.
          const version4 = `const { Redlock } = require("effect-redlock/node-redlock")
const Client = require("ioredis")

const redlock = new Redlock([new Client(${port}, "127.0.0.1")], { driftFactor: 0.01, retryCount: 2, retryDelay: 10, retryJitter: 5 })
redlock.on("clientError", (err) => console.error("A redis error has occurred:", err))
redlock.lock("locks:account:322456", 1000).then(function(lock) {
  return lock.extend(1000).then(function(lock) {
    return redlock.lock("locks:account:322456", 1000)
      .then(() => "granted twice", (err) => err instanceof Redlock.LockError ? "LockError" : String(err))
      .then((refused) => lock.unlock().then(() => refused))
  })
}).then((refused) => {
  console.log(refused)
  return redlock.quit()
})
`
          Fs.writeFileSync(Path.join(dir, "version5.mjs"), version5)
          Fs.writeFileSync(Path.join(dir, "version4.cjs"), version4)
          assert.deepStrictEqual(JSON.parse(await run(process.execPath, ["version5.mjs"], dir)), ["kept", 2])
          assert.strictEqual((await run(process.execPath, ["version4.cjs"], dir)).trim(), "LockError")
          const typed = Path.join(dir, "typed")
          Fs.mkdirSync(typed)
          Fs.writeFileSync(Path.join(typed, "package.json"), JSON.stringify({ type: "module" }))
          // nodenext reads ioredis's default export as its module object: its named export instead.
          Fs.writeFileSync(
            Path.join(typed, "version5.ts"),
            version5.replace(`import Client from "ioredis"`, `import { Redis as Client } from "ioredis"`)
          )
          Fs.writeFileSync(
            Path.join(typed, "version4.ts"),
            `import Redlock from "effect-redlock/node-redlock"
import { Redis as Client } from "ioredis"

const options: Redlock.Options = { retryCount: 2 }
const redlock = new Redlock([new Client(${port})], options)
export const locked = (): Promise<string> =>
  redlock.lock("locks:account:322456", 1000).then((lock: Redlock.Lock) =>
    lock.unlock().then(() => typeof lock.resource === "string" ? lock.resource : lock.resource.join())
  ).catch((err: unknown) => err instanceof Redlock.LockError ? "LockError" : "other")
`
          )
          Fs.writeFileSync(
            Path.join(typed, "tsconfig.json"),
            JSON.stringify({
              compilerOptions: {
                target: "es2022",
                lib: ["es2022"],
                module: "nodenext",
                moduleResolution: "nodenext",
                strict: true,
                noEmit: true,
                types: ["node"]
              },
              files: ["version5.ts", "version4.ts"]
            })
          )
          const checked = await run(process.execPath, [
            Path.join(dir, "node_modules", "typescript", "bin", "tsc"),
            "-p",
            "tsconfig.json"
          ], typed)
            .catch((error: { readonly stdout?: unknown }) => String(error.stdout))
          assert.strictEqual(withoutUpstreamErrors(checked).trim(), "")
        })
      }).pipe(Effect.provide(RedisFleet.layerLocal(1, { persistence: true }))),
    300_000
  )

  it.effect(
    "the CLI's tarball installs alone, globally and in an Effect 4 project: small, no warnings, --help, run and inspect work",
    () =>
      Effect.gen(function*() {
        const fleet = yield* RedisFleet.RedisFleet
        const nodes = `redis://127.0.0.1:${fleet.servers[0].port}`
        yield* Effect.promise(async () => {
          const folder = (name: string, manifest: object) => {
            const dir = Path.join(scratch, name)
            Fs.mkdirSync(dir)
            Fs.writeFileSync(Path.join(dir, "package.json"), JSON.stringify({ name, private: true, ...manifest }))
            return dir
          }
          const npmInstall = async (dir: string, args: ReadonlyArray<string>) => {
            const output = await new Promise<string>((resolve, reject) =>
              ChildProcess.execFile("npm", ["install", "--no-audit", "--no-fund", ...args], {
                cwd: dir,
                encoding: "utf8"
              }, (error, stdout, stderr) =>
                error === null ? resolve(stdout + stderr) : reject(Object.assign(error, { stdout, stderr })))
            )
            assert.notMatch(output, /npm warn/i, `no warnings installing into ${dir}`)
          }
          const alone = folder("cli-alone", {})
          await npmInstall(alone, [cli])
          const global = folder("cli-global", {})
          await npmInstall(global, ["--global", "--prefix", global, cli])
          const withEffect4 = folder("cli-effect4", { type: "module" })
          await npmInstall(withEffect4, ["effect@4.1", cli])
          const installs = [
            {
              bin: Path.join(alone, "node_modules", ".bin", "redlock"),
              size: sizeOf(Path.join(alone, "node_modules"))
            },
            { bin: Path.join(global, "bin", "redlock"), size: sizeOf(Path.join(global, "lib", "node_modules")) },
            { bin: Path.join(withEffect4, "node_modules", ".bin", "redlock"), size: undefined }
          ]
          for (const { bin, size } of installs) {
            if (size !== undefined) {
              assert.isAtMost(size, 15 * 2 ** 20, `${bin}: ${size} bytes installed`)
            }
            assert.strictEqual((await run(bin, ["--version"], scratch)).trim(), "0.1.0")
            assert.match(await run(bin, ["--help"], scratch), /redlock run --resource NAME/)
            const unknown = await failing(bin, ["run", "--resource", "r", "--tll", "1s", "--", "true"], scratch)
            assert.include(unknown, "unknown flag --tll")
            assert.strictEqual(
              await run(bin, ["run", "--resource", "installed", "--nodes", nodes, "--", "echo", "ran"], scratch),
              "ran\n"
            )
            assert.match(await run(bin, ["inspect", "installed", "--nodes", nodes], scratch), /installed: not locked/)
          }
        })
      }).pipe(Effect.provide(RedisFleet.layerLocal(1, { persistence: true }))),
    300_000
  )

  it("the installed redlock command answers --version and --help", async () => {
    const bin = Path.join(project(), "node_modules", ".bin", "redlock")
    assert.strictEqual((await run(bin, ["--version"], project())).trim(), "0.1.0")
    const help = stripVTControlCharacters(await run(bin, ["--help"], project()))
    assert.match(help, /redlock run --resource NAME/)
    assert.match(help, /redlock inspect NAME/)
    assert.match(help, /^ {2}76 /m, "the exit codes")
  })
})
