import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const fleet = fileURLToPath(new URL("../fleet/src/", import.meta.url))

export default defineConfig({
  // The test fleet by name, from its sources (as in the Effect packages): no build needed to test.
  resolve: { alias: [{ find: /^@effect-redlock\/fleet\/(.*)\.js$/, replacement: `${fleet}$1.ts` }] },
  test: {
    // The JSON file lets CI print "N passed, M failed" without reading the console summary.
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-results.json" },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      // Each project names its own files: an `include` beside `projects` would be added to every project's.
      { extends: true, test: { name: "core", include: ["test/**/*.test.ts"] } },
      {
        // The clients' other majors (dev dependencies under other names), for the drivers' tests and the node contract.
        extends: true,
        resolve: {
          alias: [{ find: /^ioredis$/, replacement: "ioredis6" }, { find: /^redis$/, replacement: "redis5" }]
        },
        test: {
          name: "ioredis 6, node-redis 5",
          include: [
            "test/drivers.test.ts",
            "test/driver-nodes.test.ts",
            "test/ioredis-node.test.ts",
            "test/node-redis-node.test.ts",
            "test/cluster.test.ts",
            "test/release-channel-redis.test.ts",
            "test/contract.test.ts"
          ]
        }
      }
    ]
  }
})
