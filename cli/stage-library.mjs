// Puts the built library (../dist, its package.json, README, LICENSE) in
// node_modules/effect-redlock, where `npm pack` bundles it
// ("bundleDependencies"): the CLI's tarball then installs alone, without a
// registry copy of the library. Run after the library's build.
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const cli = Path.dirname(fileURLToPath(import.meta.url))
const root = Path.join(cli, "..")
const target = Path.join(cli, "node_modules", "effect-redlock")
Fs.rmSync(target, { recursive: true, force: true })
Fs.mkdirSync(target, { recursive: true })
const manifest = JSON.parse(Fs.readFileSync(Path.join(root, "package.json"), "utf8"))
// What an installed copy needs: no scripts, no development dependencies.
for (const key of ["scripts", "devDependencies", "overrides"]) delete manifest[key]
Fs.writeFileSync(Path.join(target, "package.json"), JSON.stringify(manifest, null, 2) + "\n")
Fs.cpSync(Path.join(root, "dist"), Path.join(target, "dist"), { recursive: true })
for (const file of ["README.md", "LICENSE"]) Fs.copyFileSync(Path.join(root, file), Path.join(target, file))
