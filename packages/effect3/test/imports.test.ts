/**
 * How the modules of src/ import each other at run time (type-only imports
 * are erased, so they do not count): no cycle; the internal modules, which
 * the public modules are built from, import the public ones as types only
 * (as in the Effect sources: the public module re-exports what the internal
 * one defines); core (the engine and the drivers) comes by its package name
 * (packages/core/test/imports.test.ts says what core may import).
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

it("internal modules import the public modules as types only", () => {
  const internal = (file: string) => file.includes(`${Path.sep}internal${Path.sep}`)
  const offenders = [...graph].flatMap(([file, targets]) =>
    internal(file)
      ? targets.filter((target) => !internal(target)).map((target) => `${name(file)} -> ${name(target)}`)
      : []
  )
  assert.deepStrictEqual(offenders, [])
})

it("the shell reaches core by its package name only, never by a path into it", () => {
  const intoCore = [...graph].flatMap(([file, targets]) =>
    targets.filter((target) => !target.startsWith(src + Path.sep)).map((target) => `${name(file)} -> ${name(target)}`)
  )
  assert.deepStrictEqual(intoCore, [])
})

it("the promise API imports core only, types included; effect only through the host it loads where effect is installed", () => {
  const file = Path.join(src, "Promise.ts")
  const source = ts.createSourceFile(file, Fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  const specifiers: Array<string> = []
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined) {
      specifiers.push((node.moduleSpecifier as ts.StringLiteral).text)
    }
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      specifiers.push(`import(${(node.arguments[0] as ts.StringLiteral).text})`)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  assert.deepStrictEqual(specifiers.filter((specifier) => !specifier.startsWith("@effect-redlock/core/")), [
    "import(./internal/promiseHost.js)"
  ])
})
