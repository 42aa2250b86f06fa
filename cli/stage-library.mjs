// Puts the built library and core (packages/effect3 and packages/core: their
// dist, package.json, README, LICENSE) in node_modules, where `npm pack`
// bundles them ("bundleDependencies"): the CLI's tarball then installs
// alone, without registry copies of them. Run after their build.
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const cli = Path.dirname(fileURLToPath(import.meta.url))
const packages = Path.join(cli, "..", "packages")
const stage = (folder, name) => {
  const source = Path.join(packages, folder)
  const target = Path.join(cli, "node_modules", name)
  Fs.rmSync(target, { recursive: true, force: true })
  Fs.mkdirSync(target, { recursive: true })
  const manifest = JSON.parse(Fs.readFileSync(Path.join(source, "package.json"), "utf8"))
  // What an installed copy needs: no scripts, no development dependencies.
  for (const key of ["scripts", "devDependencies", "overrides"]) delete manifest[key]
  Fs.writeFileSync(Path.join(target, "package.json"), JSON.stringify(manifest, null, 2) + "\n")
  Fs.cpSync(Path.join(source, "dist"), Path.join(target, "dist"), { recursive: true })
  for (const file of ["README.md", "LICENSE"]) Fs.copyFileSync(Path.join(source, file), Path.join(target, file))
}
stage("effect3", "effect-redlock")
stage("core", "@effect-redlock/core")
