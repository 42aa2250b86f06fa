/**
 * The two Effect lines are one library: both built packages, as published,
 * have the same public modules, exported names (values and types), members
 * of their interfaces, error tags, error fields and messages. A difference
 * is allowed only where the Effect majors differ, each listed below with why
 * (a module of one line alone, where the other major has nothing to build on).
 */
import { assert, beforeAll, describe, it } from "@effect/vitest"
import * as ChildProcess from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const packages = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "..", "..")
const surfaceScript = Path.join(packages, "effect4", "test", "fixtures", "surface.mjs")

interface Surface {
  readonly modules: Record<string, Record<string, string>>
  readonly errors: Record<
    string,
    { readonly tag: string; readonly fields: ReadonlyArray<string>; readonly message: string }
  >
}

/** Where the lines may differ: module, exported name, and why. Nothing else may. */
const allowed: ReadonlyArray<{ readonly module: string; readonly name: string; readonly why: string }> = [
  {
    module: "Redlock",
    name: "RetrySchedule",
    why:
      "it is Effect's Schedule, whose interface differs between the majors (Effect 3's has `initial` and `step` members)"
  }
]

/** Public modules of one line alone, and why. */
const effect4Only: ReadonlyArray<{ readonly module: string; readonly why: string }> = [
  {
    module: "RedisNode/Persistence",
    why: "nodes over the Redis service of `effect/persistence`, which Effect 3 does not have"
  }
]

const build = (dir: string) =>
  ChildProcess.execFileSync(process.execPath, [Path.join(packages, "..", "scripts", "build.mjs")], {
    cwd: Path.join(packages, dir),
    stdio: ["ignore", "ignore", "inherit"]
  })

const surfaceOf = (dir: string): Surface =>
  JSON.parse(
    ChildProcess.execFileSync(process.execPath, [surfaceScript, Path.join(packages, dir)], {
      encoding: "utf8",
      maxBuffer: 16 * 2 ** 20
    })
  )

let effect3: Surface
let effect4: Surface

describe("the Effect 3 and Effect 4 packages, built", () => {
  beforeAll(() => {
    // As published: core first (both lines import its build), then each line.
    for (const dir of ["core", "effect3", "effect4"]) build(dir)
    effect3 = surfaceOf("effect3")
    effect4 = surfaceOf("effect4")
  }, 300_000)

  it("have the same public modules", () => {
    const shared = Object.keys(effect4.modules).filter((module) => !effect4Only.some((only) => only.module === module))
    assert.deepStrictEqual(shared.sort(), Object.keys(effect3.modules).sort())
    for (const { module } of effect4Only) assert.property(effect4.modules, module)
    assert.isAtLeast(Object.keys(effect3.modules).length, 12)
  })

  it("export the same names, of the same kinds, with the same members, but for the listed differences", () => {
    const differences: Array<string> = []
    for (const [module, names] of Object.entries(effect3.modules)) {
      const other = effect4.modules[module] ?? {}
      for (const name of new Set([...Object.keys(names), ...Object.keys(other)])) {
        if (names[name] === other[name]) continue
        if (allowed.some((entry) => entry.module === module && entry.name === name)) continue
        differences.push(`${module}.${name}: Effect 3 ${names[name] ?? "(none)"}, Effect 4 ${other[name] ?? "(none)"}`)
      }
    }
    assert.deepStrictEqual(differences, [])
  })

  it("every allowed difference is still one (the list stays short and true)", () => {
    for (const { module, name } of allowed) {
      assert.notStrictEqual(effect3.modules[module]?.[name], effect4.modules[module]?.[name], `${module}.${name}`)
    }
  })

  it("have the same errors: the same tags, fields and messages", () => {
    assert.deepStrictEqual(effect4.errors, effect3.errors)
    assert.isAtLeast(Object.keys(effect3.errors).length, 12)
    for (const [name, error] of Object.entries(effect3.errors)) {
      assert.strictEqual(error.tag, name, "an error's _tag is its name")
      assert.notInclude(error.message, "(no sample)", name)
    }
  })
})
