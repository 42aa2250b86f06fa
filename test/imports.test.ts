/**
 * How the modules of src/ import each other at run time (type-only imports
 * are erased, so they do not count): no cycle; the internal modules and the
 * engine, which the public modules are built from, import the public ones as
 * types only (as in the Effect sources: the public module re-exports what
 * the internal one defines); and the engine imports nothing from `effect`
 * and nothing of the shells that run on it, not even types (docs/how-it-works.md, "One engine, two shells").
 */
import { assert, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const src = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "..", "src")

const sourceFiles = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    return entry.isDirectory() ? sourceFiles(path) : entry.name.endsWith(".ts") ? [path] : []
  })

/** The files of src/ that `file` imports or re-exports as values. */
const valueImports = (file: string): Array<string> => {
  const source = ts.createSourceFile(file, Fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  const targets: Array<string> = []
  for (const statement of source.statements) {
    let specifier: ts.Expression | undefined
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause
      if (clause?.isTypeOnly) continue
      const bindings = clause?.namedBindings
      const onlyTypes = clause !== undefined && clause.name === undefined && bindings !== undefined &&
        ts.isNamedImports(bindings) && bindings.elements.every((element) => element.isTypeOnly)
      if (onlyTypes) continue
      specifier = statement.moduleSpecifier
    } else if (ts.isExportDeclaration(statement) && !statement.isTypeOnly) {
      specifier = statement.moduleSpecifier
    }
    if (specifier === undefined || !ts.isStringLiteral(specifier) || !specifier.text.startsWith(".")) continue
    targets.push(Path.join(Path.dirname(file), specifier.text.replace(/\.js$/, ".ts")))
  }
  return targets
}

const graph = new Map(sourceFiles(src).map((file) => [file, valueImports(file)]))
const name = (file: string) => Path.relative(src, file)

it("src/ has no runtime import cycle", () => {
  const cycles: Array<string> = []
  const done = new Set<string>()
  const path: Array<string> = []
  const visit = (file: string): void => {
    const open = path.indexOf(file)
    if (open >= 0) return void cycles.push([...path.slice(open), file].map(name).join(" -> "))
    if (done.has(file)) return
    path.push(file)
    for (const target of graph.get(file) ?? []) visit(target)
    path.pop()
    done.add(file)
  }
  for (const file of graph.keys()) visit(file)
  assert.isAbove(graph.size, 20, "the modules were found")
  assert.deepStrictEqual(cycles, [])
})

const inEngine = (file: string) => file.includes(`${Path.sep}engine${Path.sep}`)
const inNodes = (file: string) => file.includes(`${Path.sep}nodes${Path.sep}`)
const shared = (file: string) => inEngine(file) || inNodes(file)

it("internal modules import the public modules as types only", () => {
  const internal = (file: string) => file.includes(`${Path.sep}internal${Path.sep}`) || shared(file)
  const offenders = [...graph].flatMap(([file, targets]) =>
    internal(file) ? targets.filter((target) => !internal(target)).map((target) => `${name(file)} -> ${name(target)}`) : []
  )
  assert.deepStrictEqual(offenders, [])
})

// Every relative import of a file, types included.
const everyImport = (file: string): Array<string> =>
  [...Fs.readFileSync(file, "utf8").matchAll(/from "(\.[^"]+)"/g)].map((match) =>
    Path.join(Path.dirname(file), match[1].replace(/\.js$/, ".ts"))
  )


it("the engine and the shared nodes import nothing from effect, and nothing of the rest of src/, not even types", () => {
  // The Effect 3 line and the Effect 4 package (packages/effect4 links these folders) compile them with
  // their own major of effect: they must need neither. The engine needs nothing of the nodes either.
  const files = [...graph.keys()].filter(shared)
  assert.isAtLeast(files.filter(inEngine).length, 5, "the engine's modules were found")
  assert.isAtLeast(files.filter(inNodes).length, 3, "the shared nodes were found")
  const offenders = files.flatMap((file) => [
    ...everyImport(file)
      .filter((target) => inEngine(file) ? !inEngine(target) : !shared(target))
      .map((target) => `${name(file)} -> ${name(target)}`),
    ...(/from "effect(\/|")/.test(Fs.readFileSync(file, "utf8")) ? [`${name(file)} -> effect`] : [])
  ])
  assert.deepStrictEqual(offenders, [])
})
