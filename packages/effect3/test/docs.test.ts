/**
 * Every export of the public modules carries JSDoc with `@since` and
 * `@category`, as in the Effect sources (internal modules, the engine and the shared nodes are exempt).
 */
import { assert, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const src = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "..", "src")

const publicModules = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    if (entry.isDirectory()) {
      return entry.name === "internal" || entry.name === "engine" || entry.name === "nodes"
        ? []
        : publicModules(path)
    }
    return entry.name.endsWith(".ts") ? [path] : []
  })

/** Names of exported declarations whose JSDoc lacks one of the tags. */
const undocumented = (file: string): Array<string> => {
  const source = ts.createSourceFile(file, Fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  const missing: Array<string> = []
  const check = (node: ts.Node, name: string) => {
    const tags = ts.getJSDocTags(node).map((tag) => tag.tagName.text)
    for (const wanted of ["since", "category"]) {
      if (!tags.includes(wanted)) missing.push(`${Path.relative(src, file)}: ${name} has no @${wanted}`)
    }
  }
  for (const statement of source.statements) {
    const exported = ts.canHaveModifiers(statement) &&
      ts.getModifiers(statement)?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)
    if (ts.isVariableStatement(statement) && exported) {
      for (const declaration of statement.declarationList.declarations) check(statement, declaration.name.getText())
    } else if (
      exported &&
      (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement))
    ) {
      check(statement, statement.name?.getText() ?? "default")
    } else if (ts.isExportDeclaration(statement) && statement.exportClause !== undefined) {
      // `export * as Name from` and `export { a, b } from`: each name documented where it is listed.
      if (ts.isNamespaceExport(statement.exportClause)) check(statement, statement.exportClause.name.text)
      else for (const element of statement.exportClause.elements) check(element, element.name.text)
    }
  }
  return missing
}

it("every public export has @since and @category", () => {
  const files = publicModules(src)
  assert.isAtLeast(files.length, 8, "the public modules were found")
  assert.deepStrictEqual(files.flatMap(undocumented), [])
})
