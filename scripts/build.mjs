// `npm run build`: the library as it is published, in dist/ (see package.json "exports").
// - dist/esm: ES modules with their .d.ts (the package is "type": "module");
// - dist/cjs: CommonJS with its own .d.ts, marked by a package.json of its own,
//   so that `require` and TypeScript's CommonJS resolution both read it as CommonJS.
import { execFileSync } from "node:child_process"
import { rmSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const tsc = (project) => execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", project], { cwd: root, stdio: "inherit" })

rmSync(new URL("../dist", import.meta.url), { recursive: true, force: true })
tsc("tsconfig.build.json")
tsc("tsconfig.build.cjs.json")
writeFileSync(new URL("../dist/cjs/package.json", import.meta.url), JSON.stringify({ type: "commonjs" }, null, 2) + "\n")
