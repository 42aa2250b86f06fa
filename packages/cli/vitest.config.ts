import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const effect3 = fileURLToPath(new URL("../effect3/src/", import.meta.url))
const core = fileURLToPath(new URL("../core/src/", import.meta.url))
const fleet = fileURLToPath(new URL("../fleet/src/", import.meta.url))

export default defineConfig({
  // The Effect 3 package (the tests' own holders), core and the test fleet by name, from their sources
  // (as tsconfig.json's "paths"); the CLI itself runs from its sources in a process of its own (tsx).
  resolve: {
    alias: [
      { find: /^effect-redlock$/, replacement: `${effect3}index.ts` },
      { find: /^effect-redlock\/(?!internal\/)(.*)$/, replacement: `${effect3}$1.ts` },
      { find: /^@effect-redlock\/core\/(.*)\.js$/, replacement: `${core}$1.ts` },
      { find: /^@effect-redlock\/fleet\/(.*)\.js$/, replacement: `${fleet}$1.ts` }
    ]
  },
  test: {
    include: ["test/**/*.test.ts"],
    // One file at a time, as the other suites: the CLI's processes and the servers share the two cores.
    pool: "forks",
    poolOptions: { forks: { maxForks: 1, minForks: 1 } },
    // The JSON file lets CI print "N passed, M failed" without reading the console summary.
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-results.json" },
    testTimeout: 60_000,
    hookTimeout: 60_000
  }
})
