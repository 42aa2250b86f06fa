import { defineConfig } from "vitest/config"

export default defineConfig({
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
