// `npm test` in this package, on Node 22 (scripts/node22.mjs runs it): the type check, then vitest 5.
// Both are found where npm put them (the workspace hoists what the packages share).
import { spawnSync } from "node:child_process"
import { createRequire } from "node:module"
import * as Path from "node:path"

const inPackage = (name, file) =>
  Path.join(Path.dirname(createRequire(import.meta.url).resolve(`${name}/package.json`)), file)
const run = (script, args) => spawnSync(process.execPath, [script, ...args], { stdio: "inherit" }).status ?? 1

const typecheck = run(inPackage("typescript", "bin/tsc"), ["--noEmit", "-p", "tsconfig.json"])
process.exit(typecheck !== 0 ? typecheck : run(inPackage("vitest", "vitest.mjs"), ["run"]))
