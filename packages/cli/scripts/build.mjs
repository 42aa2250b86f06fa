// `npm run build` of the CLI: src/main.ts and the parts of @effect-redlock/core it uses, bundled into
// ES modules: dist/redlock.js (the `redlock` bin) and the chunks it loads when needed. Core is bundled, not depended on: the CLI installs
// with ioredis alone, wherever it is installed. The client libraries stay outside (ioredis is a
// dependency; redis, iovalkey and GLIDE, which core loads only for their own nodes, are never used here).
import * as Esbuild from "esbuild"
import { copyFileSync, rmSync } from "node:fs"
import { fileURLToPath } from "node:url"

const cli = fileURLToPath(new URL("..", import.meta.url))
rmSync(new URL("../dist", import.meta.url), { recursive: true, force: true })
await Esbuild.build({
  absWorkingDir: cli,
  entryPoints: { redlock: "src/main.ts" },
  outdir: "dist",
  bundle: true,
  // The drivers core loads only when a node needs one stay chunks of their own: node-redis's imports
  // `redis`, which the CLI never installs.
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["ioredis", "redis", "iovalkey", "@valkey/valkey-glide"],
  // Core by its sources (as tsconfig.json's "paths"): no build of it is needed first.
  alias: { "@effect-redlock/core": fileURLToPath(new URL("../../core/src", import.meta.url)) },
  resolveExtensions: [".ts", ".js"],
  logLevel: "warning"
})
copyFileSync(new URL("../../../LICENSE", import.meta.url), new URL("../LICENSE", import.meta.url))
