/**
 * What core may import, types included: nothing from `effect` (the Effect 3
 * and Effect 4 packages both stand on it, each with its own major), nothing
 * outside its own src/ but Node's modules and the Redis clients its drivers
 * speak to, and the engine nothing of the drivers (docs/how-it-works.md,
 * "The packages").
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, it } from "vitest"

const src = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "..", "src")

const sourceFiles = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    return entry.isDirectory() ? sourceFiles(path) : entry.name.endsWith(".ts") ? [path] : []
  })

/** Every specifier a file imports or re-exports, types included (static and dynamic); not those of its doc comments' examples. */
const specifiers = (file: string): Array<string> =>
  [...Fs.readFileSync(file, "utf8").replace(/\/\*[\s\S]*?\*\//g, "").matchAll(/(?:from |import\()"([^"]+)"/g)].map((
    match
  ) => match[1]!)

const files = sourceFiles(src)
const name = (file: string) => Path.relative(src, file)
const resolved = (file: string, specifier: string) => Path.join(Path.dirname(file), specifier.replace(/\.js$/, ".ts"))
const clients = new Set(["ioredis", "iovalkey", "redis", "@valkey/valkey-glide"])

it("core imports nothing from effect, and no package but Node's modules and the Redis clients", () => {
  assert.isAtLeast(files.length, 30, "core's modules were found")
  const offenders = files.flatMap((file) =>
    specifiers(file)
      .filter((specifier) => !specifier.startsWith(".") && !specifier.startsWith("node:") && !clients.has(specifier))
      .map((specifier) => `${name(file)} -> ${specifier}`)
  )
  assert.deepStrictEqual(offenders, [])
})

it("core's relative imports stay in its src/, and the engine imports nothing of the drivers", () => {
  const inEngine = (path: string) => path.startsWith(Path.join(src, "engine") + Path.sep)
  const offenders = files.flatMap((file) =>
    specifiers(file).filter((specifier) => specifier.startsWith(".")).flatMap((specifier) => {
      const target = resolved(file, specifier)
      const escapes = !target.startsWith(src + Path.sep) || !Fs.existsSync(target)
      return escapes || (inEngine(file) && !inEngine(target)) ? [`${name(file)} -> ${specifier}`] : []
    })
  )
  assert.deepStrictEqual(offenders, [])
})
