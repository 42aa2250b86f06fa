// `npm run build`: this package as it is published, in dist/ (see package.json "exports").
// - dist/esm: ES modules with their .d.ts (the package is "type": "module");
// - dist/cjs: CommonJS with its own .d.ts, marked by a package.json of its own.
// src/engine and src/nodes link the repository's shared folders: compiled as this package's own
// (tsconfig's preserveSymlinks), they land in dist/ beside the shell.
import { execFileSync } from "node:child_process"
import { copyFileSync, rmSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const tsc = (project) => execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", project], { cwd: root, stdio: "inherit" })

rmSync(new URL("../dist", import.meta.url), { recursive: true, force: true })
tsc("tsconfig.build.json")
tsc("tsconfig.build.cjs.json")
writeFileSync(new URL("../dist/cjs/package.json", import.meta.url), JSON.stringify({ type: "commonjs" }, null, 2) + "\n")
copyFileSync(new URL("../../../LICENSE", import.meta.url), new URL("../LICENSE", import.meta.url))
