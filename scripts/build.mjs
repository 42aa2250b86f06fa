// `npm run build` in a package (its folder is the working directory): the package as it is published,
// in its dist/ (see its package.json "exports").
// - dist/esm: ES modules with their .d.ts (the packages are "type": "module");
// - dist/cjs: CommonJS with its own .d.ts, marked by a package.json of its own,
//   so that `require` and TypeScript's CommonJS resolution both read it as CommonJS;
// - LICENSE: the repository's, which npm packs from the package's folder.
import { execFileSync } from "node:child_process"
import { copyFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"

const packageDir = process.cwd()
const typescript = Path.dirname(createRequire(Path.join(packageDir, "package.json")).resolve("typescript/package.json"))
const compile = (project) =>
  execFileSync(process.execPath, [Path.join(typescript, "bin", "tsc"), "-p", project], {
    cwd: packageDir,
    stdio: "inherit"
  })

rmSync(Path.join(packageDir, "dist"), { recursive: true, force: true })
compile("tsconfig.build.json")
compile("tsconfig.build.cjs.json")
writeFileSync(
  Path.join(packageDir, "dist", "cjs", "package.json"),
  JSON.stringify({ type: "commonjs" }, null, 2) + "\n"
)
copyFileSync(new URL("../LICENSE", import.meta.url), Path.join(packageDir, "LICENSE"))
