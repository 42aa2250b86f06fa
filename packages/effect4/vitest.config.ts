import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const src = fileURLToPath(new URL("./src/", import.meta.url))
// The shared nodes (src/nodes links ../../src/nodes) resolve ioredis from where they really are, the
// repository's root: one copy for both, this package's.
const ioredis = createRequire(import.meta.url).resolve("ioredis")

export default defineConfig({
  // The library by name, from its sources (as tsconfig.json's "paths"): no build needed to test.
  resolve: {
    alias: [
      { find: /^effect-redlock$/, replacement: `${src}index.ts` },
      { find: /^effect-redlock\/(?!internal\/)(.*)$/, replacement: `${src}$1.ts` },
      { find: /^ioredis$/, replacement: ioredis }
    ]
  },
  test: {
    // Real redis-server fleets are started per file: one file at a time, so that no file's per-node
    // timeouts are missed because another file loads both cores.
    pool: "forks",
    maxWorkers: 1,
    include: ["test/**/*.test.ts"],
    // The JSON file lets CI print "N passed, M failed" without reading the console summary.
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-results.json" },
    testTimeout: 60_000,
    hookTimeout: 60_000
  }
})
