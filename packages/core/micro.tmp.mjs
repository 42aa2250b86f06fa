import Redlock from "./dist/esm/NodeRedlock.js"
import { makeRedlock, memoryNodes, noRetry } from "./dist/esm/Promise.js"
const n = 200000
const entry = new Redlock(memoryNodes(3), { retryCount: 0 })
const plain = await makeRedlock(memoryNodes(3), { retry: noRetry, restartQuarantine: false, keyPrefix: "" })
const runs = {
  entry: async (i) => { const l = await entry.acquire(["k" + (i % 64)], 10000); await l.release() },
  plain: async (i) => { const l = await plain.acquire("k" + (i % 64), { ttl: 10000 }); await plain.release(l) }
}
for (let round = 0; round < 3; round++) for (const [name, run] of Object.entries(runs)) {
  const t = process.cpuUsage(); const s = performance.now()
  for (let i = 0; i < n; i++) await run(i)
  const c = process.cpuUsage(t)
  console.log(name, ((c.user + c.system) / n).toFixed(2), "µs CPU/op", (n / ((performance.now() - s) / 1000)).toFixed(0), "ops/s")
}
process.exit(0)
