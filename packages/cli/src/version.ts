/**
 * The CLI's version, read from its own package.json: beside the sources, or
 * one folder up from the compiled dist/.
 */
import * as Fs from "node:fs"

export const version = (): string => {
  for (const path of ["./package.json", "../package.json"]) {
    try {
      const manifest = JSON.parse(Fs.readFileSync(new URL(path, import.meta.url), "utf8")) as {
        readonly name?: unknown
        readonly version?: unknown
      }
      if (manifest.name === "effect-redlock-cli" && typeof manifest.version === "string") return manifest.version
    } catch {
      // not there: the next place
    }
  }
  return "unknown"
}
