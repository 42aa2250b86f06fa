/**
 * The documentation as users read it: every TypeScript block of README.md
 * and docs/*.md type-checks against the library's sources, and README's two
 * quick starts, pasted as written (only the port moved to the test's
 * server), run against one fresh local redis-server started as the README
 * says (AOF with appendfsync always), with the restart quarantine on.
 */
import { assert, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"

// The repository's README and docs, checked against the tooling's tsconfig (the packages by name).
const root = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..")

const documents = [
  "README.md",
  "packages/effect3/README.md",
  ...Fs.readdirSync(Path.join(root, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)
]

/** The ```ts blocks of a Markdown file, with the line each starts on. */
const tsBlocks = (file: string): Array<{ readonly line: number; readonly code: string }> => {
  const lines = Fs.readFileSync(Path.join(root, file), "utf8").split("\n")
  const blocks: Array<{ line: number; code: string }> = []
  let open: { line: number; code: Array<string> } | undefined
  lines.forEach((text, index) => {
    if (open === undefined && /^```(ts|typescript)\s*$/.test(text)) open = { line: index + 1, code: [] }
    else if (open !== undefined && text.startsWith("```")) {
      blocks.push({ line: open.line, code: open.code.join("\n") })
      open = undefined
    } else open?.code.push(text)
  })
  return blocks
}

/** The project's compiler options; snippets may leave a name unused. */
const compilerOptions = (): ts.CompilerOptions => {
  const configFile = ts.readConfigFile(Path.join(root, "tsconfig.json"), ts.sys.readFile)
  const parsed = ts.parseJsonConfigFileContent(configFile.config, ts.sys, root)
  return { ...parsed.options, noEmit: true, noUnusedLocals: false, noUnusedParameters: false }
}

it("every TypeScript block of README.md and docs/ type-checks", () => {
  // Each block is a module of its own, as if it were a file in the project.
  const virtual = new Map<string, string>()
  for (const file of documents) {
    for (const block of tsBlocks(file)) {
      const name = Path.join(root, ".docs-check", `${file.replace(/[/.]/g, "_")}_line${block.line}.ts`)
      virtual.set(name, `${block.code}\nexport {}\n`)
    }
  }
  assert.isAtLeast(virtual.size, 5, "the blocks were found")
  const options = compilerOptions()
  const host = ts.createCompilerHost(options)
  const readFile = host.readFile.bind(host)
  const getSourceFile = host.getSourceFile.bind(host)
  host.fileExists = (name) => virtual.has(name) || ts.sys.fileExists(name)
  host.readFile = (name) => virtual.get(name) ?? readFile(name)
  host.getSourceFile = (name, language, onError, shouldCreate) =>
    virtual.has(name)
      ? ts.createSourceFile(name, virtual.get(name)!, language, true)
      : getSourceFile(name, language, onError, shouldCreate)
  const program = ts.createProgram([...virtual.keys()], options, host)
  const problems = ts.getPreEmitDiagnostics(program)
    .filter((diagnostic) => diagnostic.file !== undefined && virtual.has(diagnostic.file.fileName))
    .map((diagnostic) => {
      const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start ?? 0)
      return `${Path.basename(diagnostic.file!.fileName)}:${line + 1}: ${
        ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")
      }`
    })
  assert.deepStrictEqual(problems, [])
})

/** README's block under a heading, as written. */
const quickStart = (heading: string): string => {
  const readme = Fs.readFileSync(Path.join(root, "README.md"), "utf8")
  const section = readme.slice(readme.indexOf(`## ${heading}`))
  const start = section.indexOf("```ts\n") + "```ts\n".length
  return section.slice(start, section.indexOf("\n```", start))
}

const runScript = (code: string) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const dir = Path.join(root, ".docs-check")
      Fs.mkdirSync(dir, { recursive: true })
      const file = Path.join(dir, `quick-start-${process.pid}-${Math.random().toString(36).slice(2)}.ts`)
      Fs.writeFileSync(file, code)
      return file
    }),
    (file) =>
      Effect.async<{ readonly code: number | null; readonly output: string }>((resume) => {
        const child = ChildProcess.spawn(process.execPath, ["--import", "tsx", file], {
          cwd: root,
          stdio: ["ignore", "pipe", "pipe"]
        })
        let output = ""
        child.stdout.on("data", (chunk: Buffer) => void (output += chunk.toString()))
        child.stderr.on("data", (chunk: Buffer) => void (output += chunk.toString()))
        child.once("close", (code) => resume(Effect.succeed({ code, output })))
        const limit = setTimeout(() => child.kill("SIGKILL"), 30_000)
        child.once("close", () => clearTimeout(limit))
        return Effect.sync(() => void child.kill("SIGKILL"))
      }),
    (file) => Effect.sync(() => Fs.rmSync(file, { force: true }))
  )

layer(RedisFleet.layerLocal(1, { persistence: true }), { timeout: 60_000, excludeTestServices: true })(
  "README's quick starts on a fresh durable redis-server",
  (it) => {
    for (const heading of ["Quick start: Effect", "Quick start: promises"]) {
      it.effect(`${heading}: runs as pasted, at once (the server votes from its first second)`, () =>
        Effect.gen(function*() {
          const fleet = yield* RedisFleet.RedisFleet
          const code = quickStart(heading)
          assert.include(code, "port: 6379")
          const started = performance.now()
          const run = yield* runScript(code.replaceAll("port: 6379", `port: ${fleet.servers[0].port}`))
          assert.strictEqual(run.code, 0, run.output)
          assert.include(run.output, "holding orders:42")
          assert.include(run.output, "done")
          assert.isBelow(performance.now() - started, 20_000, "no 30 s quarantine")
          assert.deepStrictEqual(yield* fleet.dbsizes, [0], "released")
        }))
    }
  }
)
