import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const src = fileURLToPath(new URL("./src/", import.meta.url))
const core = fileURLToPath(new URL("../core/src/", import.meta.url))
const fleet = fileURLToPath(new URL("../fleet/src/", import.meta.url))
const effectSuites = fileURLToPath(new URL("../fleet/effectSuites/", import.meta.url))
const line = fileURLToPath(new URL("./test/line.ts", import.meta.url))

export default defineConfig({
  // This package, core and the test fleet by name, from their sources (as tsconfig.json's "paths"): no build needed to test.
  resolve: {
    alias: [
      { find: /^effect-redlock$/, replacement: `${src}index.ts` },
      { find: /^effect-redlock\/(?!internal\/)(.*)$/, replacement: `${src}$1.ts` },
      { find: /^@effect-redlock\/core\/(.*)\.js$/, replacement: `${core}$1.ts` },
      { find: /^@effect-redlock\/fleet\/(.*)\.js$/, replacement: `${fleet}$1.ts` },
      // The shared Effect suites, and this line's names for them.
      { find: /^@effect-redlock\/effect-suites\/(.*)\.js$/, replacement: `${effectSuites}$1.ts` },
      { find: /^@effect-redlock\/line$/, replacement: line }
    ]
  },
  test: {
    // Real redis-server fleets are started per file, and the fault suite's file runs worker processes and
    // pauses servers: one file at a time, so that no file's per-node timeouts (10 ms for a 1 s ttl) are
    // missed because another file loads the two cores.
    pool: "forks",
    poolOptions: { forks: { maxForks: 1, minForks: 1 } },
    // The JSON file lets CI print "N passed, M failed" without reading the console summary.
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-results.json" },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The drivers' tests, on every client major, are core's (packages/core/vitest.config.ts).
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"]
  }
})
