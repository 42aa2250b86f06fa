import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const src = fileURLToPath(new URL("./src/", import.meta.url))

export default defineConfig({
  // The library by name, from its sources (as tsconfig.json's "paths"): no build needed to test.
  resolve: {
    alias: [
      { find: /^effect-redlock$/, replacement: `${src}index.ts` },
      { find: /^effect-redlock\/(?!internal\/)(.*)$/, replacement: `${src}$1.ts` }
    ]
  },
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    // Real redis-server fleets are started per file; keep files in one worker pool of small size
    // so that two cores are not oversubscribed by servers and clients at once.
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    // The JSON file lets CI print "N passed, M failed" without reading the console summary.
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-results.json" },
    testTimeout: 60_000,
    hookTimeout: 60_000
  }
})
