/**
 * The library as its users install it, for `npm run bench -- --against <ref>`:
 * a git ref's own packed build and the working tree's, each packed by its
 * own scripts (`npm pack`, or `npm pack --workspaces` in a workspace) and
 * installed into a scratch folder of its own. The bench drives both through
 * the same code, so the comparison holds across layouts: it finds each
 * entry by what the packed packages export, never by a source path.
 *
 * The clients and Effect are the bench's own: each scratch folder links
 * `effect`, `ioredis`, `redis` and `iovalkey` to the repository's copies
 * (installed without peers), so both builds run on the same Effect and
 * over the same client code.
 */
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import type * as PromiseApi from "effect-redlock/Promise"
import * as Contenders from "./contenders.js"
import type * as Semaphores from "./semaphores.js"

/** The repository's root (the bench runs from .bench-build/bench). */
const root = fileURLToPath(new URL("../../", import.meta.url))
const scratch = join(root, ".bench-against")

/** What a build offers the bench; an entry it lacks is `undefined` (its rows are named and skipped). */
export interface Build {
  /** "working tree", or the ref as given with its commit. */
  readonly label: string
  readonly promise: typeof PromiseApi | undefined
  /** The Effect 3 line's modules. */
  readonly effect3: Semaphores.EffectLine | undefined
  /** Entries looked for and not found, for the run's log. */
  readonly missing: ReadonlyArray<string>
}

/** The peers the scratch folders take from the repository's node_modules (the same instances as the bench's). */
const shared = ["effect", "ioredis", "redis", "iovalkey"]

const run = (command: string, args: ReadonlyArray<string>, cwd: string, log: (line: string) => void) => {
  log(`  ${command} ${args.join(" ")}   (in ${cwd})`)
  execFileSync(command, args, {
    cwd,
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, npm_config_fund: "false", npm_config_audit: "false" }
  })
}

interface Manifest {
  readonly name: string
  readonly private?: boolean
  readonly workspaces?: ReadonlyArray<string>
  readonly exports?: Record<string, unknown>
  readonly peerDependencies?: Record<string, string>
  readonly bin?: unknown
}

const manifest = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))

/** Packs the project in `source` into `packs` with its own scripts (a workspace: every package of it). */
const pack = (source: string, packs: string, log: (line: string) => void) => {
  rmSync(packs, { recursive: true, force: true })
  mkdirSync(packs, { recursive: true })
  const workspaces = manifest(source).workspaces !== undefined
  run("npm", ["pack", "--silent", ...(workspaces ? ["--workspaces"] : []), "--pack-destination", packs], source, log)
  // A workspace's private packages (the test fleet) are no one's install.
  for (const file of readdirSync(packs).filter((file) => file.endsWith(".tgz"))) {
    const packed = JSON.parse(
      execFileSync("tar", ["-xzOf", join(packs, file), "package/package.json"], { encoding: "utf8" })
    ) as Manifest
    if (packed.private === true) rmSync(join(packs, file))
  }
}

/** Installs every tarball of `packs` into `install`, without peers; links the shared ones. */
const install = (packs: string, installDir: string, log: (line: string) => void) => {
  rmSync(installDir, { recursive: true, force: true })
  mkdirSync(installDir, { recursive: true })
  writeFileSync(join(installDir, "package.json"), JSON.stringify({ private: true, type: "module" }) + "\n")
  const tarballs = readdirSync(packs).filter((file) => file.endsWith(".tgz")).map((file) => join(packs, file))
  run("npm", ["install", "--silent", "--legacy-peer-deps", "--no-package-lock", ...tarballs], installDir, log)
  // Linked even where a tarball's own dependency installed a copy (the CLI's ioredis, at the newest major):
  // every build must run on the same client code.
  for (const name of shared) {
    const link = join(installDir, "node_modules", name)
    rmSync(link, { recursive: true, force: true })
    symlinkSync(join(root, "node_modules", name), link)
  }
}

/** The packages the tarballs installed, by name, with their manifests. */
const installed = (packs: string, installDir: string): ReadonlyArray<Manifest> =>
  readdirSync(packs).filter((file) => file.endsWith(".tgz")).flatMap((file) => {
    const name = execFileSync("tar", ["-xzOf", join(packs, file), "package/package.json"], { encoding: "utf8" })
    const { name: packageName } = JSON.parse(name) as Manifest
    const dir = join(installDir, "node_modules", packageName)
    return existsSync(dir) ? [manifest(dir)] : []
  })

/** Imports `specifier` as resolved from the scratch folder (through a module written there). */
const importFrom = async (installDir: string, specifier: string): Promise<Record<string, unknown> | undefined> => {
  const entry = join(installDir, `entry-${specifier.replace(/[^\w]/g, "_")}.mjs`)
  writeFileSync(entry, `export * from ${JSON.stringify(specifier)}\n`)
  try {
    return await import(pathToFileURL(entry).href)
  } catch {
    return undefined
  }
}

const exportsOf = (pkg: Manifest) => Object.keys(pkg.exports ?? {})

/** The entries the bench drives, found in what the packages export. */
const load = async (label: string, packs: string, installDir: string): Promise<Build> => {
  const packages = installed(packs, installDir)
  const missing: Array<string> = []
  // The promise API: `makeRedlock`, from a `./Promise` entry or a package's main entry (not a command's:
  // a CLI's main entry may run it).
  let promise: typeof PromiseApi | undefined
  for (const pkg of packages) {
    const main = pkg.bin === undefined ? ["."] : []
    for (const subpath of [...exportsOf(pkg).filter((path) => path === "./Promise"), ...main]) {
      const module = await importFrom(installDir, subpath === "." ? pkg.name : `${pkg.name}/Promise`)
      if (promise === undefined && typeof module?.makeRedlock === "function") {
        promise = module as unknown as typeof PromiseApi
      }
    }
  }
  if (promise === undefined) missing.push("the promise API (makeRedlock)")
  // The Effect 3 line: the package that peers on Effect 3 and exports Redlock, its ioredis nodes and Semaphore.
  let effect3: Build["effect3"]
  const line = packages.find((pkg) =>
    /^\^?3\./.test(pkg.peerDependencies?.effect ?? "") && exportsOf(pkg).includes("./Redlock")
  )
  if (line !== undefined) {
    const [redlock, ioredis, semaphore] = await Promise.all(
      ["Redlock", "RedisNode/Ioredis", "Semaphore"].map((path) => importFrom(installDir, `${line.name}/${path}`))
    )
    if (redlock !== undefined && ioredis !== undefined && semaphore !== undefined) {
      effect3 = { Redlock: redlock as never, Ioredis: ioredis as never, Semaphore: semaphore as never }
    }
  }
  if (effect3 === undefined) missing.push("the Effect 3 line (Redlock, RedisNode/Ioredis, Semaphore)")
  return { label, promise, effect3, missing }
}

/** The short commit of a ref, or an error naming the ref. */
const commitOf = (ref: string): string => {
  try {
    return execFileSync("git", ["rev-parse", "--verify", "--short=9", `${ref}^{commit}`], {
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"]
    }).trim()
  } catch {
    throw new Error(`--against: ${ref} is no commit of this repository`)
  }
}

/**
 * A ref's packed build: cloned, installed (`npm ci`) and packed once per
 * commit into .bench-against/<commit>, reused by later runs.
 */
export const ofRef = async (ref: string, log: (line: string) => void): Promise<Build> => {
  const commit = commitOf(ref)
  const dir = join(scratch, commit)
  const packs = join(dir, "packs")
  const installDir = join(dir, "install")
  const ready = join(dir, "ready")
  if (!existsSync(ready)) {
    log(`against ${ref}: packing ${commit} (once; kept in .bench-against/${commit})`)
    rmSync(dir, { recursive: true, force: true })
    const source = join(dir, "source")
    run("git", ["clone", "--quiet", "--no-checkout", "--shared", root, source], root, log)
    run("git", ["checkout", "--quiet", commit], source, log)
    run("npm", ["ci", "--silent"], source, log)
    pack(source, packs, log)
    install(packs, installDir, log)
    rmSync(source, { recursive: true, force: true })
    writeFileSync(ready, `${commit}\n`)
  }
  return load(commit.startsWith(ref) ? ref : `${ref} (${commit})`, packs, installDir)
}

/** The working tree's packed build, packed anew each run (its own `npm pack`, which builds it). */
export const ofWorkingTree = async (log: (line: string) => void): Promise<Build> => {
  const dir = join(scratch, "working-tree")
  const packs = join(dir, "packs")
  const installDir = join(dir, "install")
  log("against: packing the working tree")
  pack(root, packs, log)
  install(packs, installDir, log)
  return load("working tree", packs, installDir)
}

/**
 * A row of a ref's build by its name under `--against` ("<row> @ <ref>"), for
 * the tools that take one contender by name (`bench:instructions`); the ref
 * is packed first if it was not yet. `undefined` for a name of no such row.
 */
export const rowNamed = async (
  name: string,
  log: (line: string) => void
): Promise<Contenders.Contender | undefined> => {
  const at = name.lastIndexOf(" @ ")
  if (at < 0) return undefined
  const build = await ofRef(name.slice(at + 3), log)
  return rowsOf(build).find((row) => row.name.startsWith(name.slice(0, at) + " @ "))
}

/** A build's rows of the lock tables, named "<row> @ <build>". */
export const rowsOf = (build: Build): ReadonlyArray<Contenders.Contender> => [
  ...(build.promise === undefined
    ? []
    : [Contenders.promiseRow(`effect-redlock/Promise @ ${build.label}`, "ioredis", true, build.promise)]),
  ...(build.effect3 === undefined ? [] : [
    Contenders.runPromiseRow(`effect-redlock @ ${build.label}`, build.effect3),
    Contenders.fibers(`effect-redlock, loops as fibers @ ${build.label}`, false, build.effect3)
  ])
]
