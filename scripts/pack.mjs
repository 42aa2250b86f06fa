// `npm run pack [-- --into <folder>] [core] [effect3] [effect4] [cli]`: the tarballs users install
// (all four when none is named), in packs/ or the folder given; prints their paths, one per line.
// - core     effect-redlock-core-<v>.tgz  @effect-redlock/core: the engine and drivers, no Effect;
// - effect3  effect-redlock-0.1.x.tgz     the Effect 3 line (workspace effect-redlock);
// - effect4  effect-redlock-0.2.x.tgz     the Effect 4 line: a workspace's names must differ, so it is
//                                         @effect-redlock/effect4 here, renamed in its tarball;
// - cli      effect-redlock-cli-<v>.tgz   the `redlock` command: one file with core bundled (esbuild), ioredis its
//                                         only dependency.
// Every package is built once (npm run build), then packed as built (its pack scripts would only
// build again).
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const args = process.argv.slice(2)
const into = args.indexOf("--into")
const destination = Path.resolve(into >= 0 ? args[into + 1] : Path.join(root, "packs"))
const named = args.filter((arg, index) => index !== into && index !== into + 1)
const wanted = named.length > 0 ? named : ["core", "effect3", "effect4", "cli"]
const unknown = wanted.filter((name) => !["core", "effect3", "effect4", "cli"].includes(name))
if (unknown.length > 0) {
  console.error(`unknown package ${unknown.join(", ")}: core, effect3, effect4 or cli`)
  process.exit(2)
}
mkdirSync(destination, { recursive: true })

const quiet = { cwd: root, stdio: ["ignore", "ignore", "inherit"] }
const pack = (dir) =>
  Path.join(
    destination,
    execFileSync("npm", ["pack", "--silent", "--ignore-scripts", "--pack-destination", destination], {
      cwd: Path.join(root, dir),
      encoding: "utf8"
    }).trim()
  )

/** The tarball with its manifest's name replaced, as `<name>-<version>.tgz`. */
const renamed = (tarball, name) => {
  const scratch = mkdtempSync(Path.join(Os.tmpdir(), "effect-redlock-pack-"))
  try {
    execFileSync("tar", ["-xzf", tarball, "-C", scratch])
    const manifestFile = Path.join(scratch, "package", "package.json")
    const manifest = JSON.parse(readFileSync(manifestFile, "utf8"))
    writeFileSync(manifestFile, JSON.stringify({ ...manifest, name }, null, 2) + "\n")
    const target = Path.join(destination, `${name}-${manifest.version}.tgz`)
    rmSync(tarball)
    // Files only, as npm packs them (no entries for folders).
    const files = readdirSync(Path.join(scratch, "package"), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => Path.relative(scratch, Path.join(entry.parentPath, entry.name)))
    execFileSync("tar", ["-czf", target, "-C", scratch, ...files.sort()])
    return target
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

execFileSync("npm", ["run", "build"], quiet)
const tarballs = []
if (wanted.includes("core")) tarballs.push(pack("packages/core"))
if (wanted.includes("effect3")) tarballs.push(pack("packages/effect3"))
if (wanted.includes("effect4")) tarballs.push(renamed(pack("packages/effect4"), "effect-redlock"))
if (wanted.includes("cli")) tarballs.push(pack("packages/cli"))
console.log(tarballs.join("\n"))
