/**
 * Diagnostic: the client's CPU per contended permit with no network: the
 * semaphore workload's shape (8 workers, 3 permits, waiting in line, promise
 * code) over in-memory nodes on the live clock, each body one `setImmediate`
 * long. No server, no socket, no idle CPU to wake: what is left is the
 * engine, the facade and the in-memory nodes, so a change of the engine shows
 * in the client's CPU per permit without the network's noise (this machine's
 * runs still drift: compare rounds side by side, and several of them).
 * `npx tsc -p tsconfig.bench.json && node .bench-build/bench/permitEngine.js [rounds] [seconds] [nodes]`
 */
import * as Duration from "effect/Duration"
import { makeRedlock, retry } from "../src/Promise.js"
import * as RedisNode from "../src/RedisNode.js"
import { percentile } from "./scenarios.js"

const [rounds = "5", seconds = "3", nodes = "1"] = process.argv.slice(2)
const workers = 8
const warmUpSeconds = 2

const redlock = await makeRedlock(RedisNode.layerMemory(Number(nodes)), { restartQuarantine: false })
const options = { limit: 3, ttl: 10_000, retry: retry({ delay: Duration.millis(10), times: 1000 }) }
const body = () => new Promise<void>((resolve) => setImmediate(resolve))

/** Permits granted in `millis` of the workload. */
const run = async (millis: number): Promise<number> => {
  let permits = 0
  const end = performance.now() + millis
  await Promise.all(Array.from({ length: workers }, async () => {
    while (performance.now() < end) {
      await redlock.usingPermit("engine", options, () => {
        permits++
        return body()
      })
    }
  }))
  return permits
}

await run(warmUpSeconds * 1000)
const perPermit: Array<number> = []
for (let round = 1; round <= Number(rounds); round++) {
  const cpu = process.cpuUsage()
  const start = performance.now()
  const permits = await run(Number(seconds) * 1000)
  const elapsed = performance.now() - start
  const used = process.cpuUsage(cpu)
  perPermit.push((used.user + used.system) / permits)
  console.log(
    `round ${round}: ${Math.round(permits / (elapsed / 1000))} permits/s, ` +
      `${(used.user / permits).toFixed(1)} µs user + ${(used.system / permits).toFixed(1)} µs system per permit`
  )
}
console.log(`median: ${percentile(perPermit, 50).toFixed(1)} µs of CPU per permit (N = ${nodes}, in-memory nodes)`)
await redlock.close()
