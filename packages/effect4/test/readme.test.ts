/**
 * The Effect 4 documentation as users read it: every TypeScript block of
 * this package's README.md, and the blocks of the repository's README.md
 * fenced ```ts effect4, type-check against this package's sources.
 */
import { assert, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const root = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "..")

/** The blocks of a Markdown file whose fence line matches `fence`, with the line each starts on. */
const blocks = (file: string, fence: RegExp): Array<{ readonly line: number; readonly code: string }> => {
  const lines = Fs.readFileSync(file, "utf8").split("\n")
  const found: Array<{ line: number; code: string }> = []
  let open: { line: number; code: Array<string> } | undefined
  lines.forEach((text, index) => {
    if (open === undefined && fence.test(text)) open = { line: index + 1, code: [] }
    else if (open !== undefined && text.startsWith("```")) {
      found.push({ line: open.line, code: open.code.join("\n") })
      open = undefined
    } else open?.code.push(text)
  })
  return found
}

it("every Effect 4 TypeScript block of the READMEs type-checks against this package", () => {
  const virtual = new Map<string, string>()
  const documents = [
    { file: Path.join(root, "README.md"), fence: /^```ts\s*$/, name: "package_README" },
    { file: Path.join(root, "..", "..", "README.md"), fence: /^```ts effect4\s*$/, name: "repository_README" }
  ]
  for (const { fence, file, name } of documents) {
    for (const block of blocks(file, fence)) {
      virtual.set(Path.join(root, ".docs-check", `${name}_line${block.line}.ts`), `${block.code}\nexport {}\n`)
    }
  }
  assert.isAtLeast(virtual.size, 3, "the blocks were found")
  const configFile = ts.readConfigFile(Path.join(root, "tsconfig.json"), ts.sys.readFile)
  const options: ts.CompilerOptions = {
    ...ts.parseJsonConfigFileContent(configFile.config, ts.sys, root).options,
    noEmit: true,
    noUnusedLocals: false,
    noUnusedParameters: false
  }
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
