/**
 * Diagnostic: the client's CPU per contended permit with no network: the
 * semaphore workload's shape (8 workers, 3 permits, waiting in line, promise
 * code) over in-memory nodes on the live clock, each body one `setImmediate`
 * long. No server, no socket, no idle CPU to wake: what is left is the
 * engine, the facade and the in-memory nodes, so a change of the engine shows
 * in the client's CPU per permit without the network's noise (this machine's
 * runs still drift: compare rounds side by side, and several of them).
 * `npx tsc -p tsconfig.bench.json && node .bench-build/bench/permitEngine.js [rounds] [seconds] [nodes]
 * [--uncontended] [--hold-ms H]`:
 * `--uncontended`: 3 workers, as many as permits (nobody waits); `--hold-ms
 * H`: each body holds a timer of H ms (the network bench holds 1 ms: the
 * process idles between permits, as users' do). Each round then also runs
 * the nodes alone (their `acquireSlot` and `release` called directly, a
 * refused worker polling every 10 ms: no engine) and prints what the engine
 * adds per permit.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { makeRedlock, retry } from "../src/Promise.js"
import * as RedisNode from "../src/RedisNode.js"
import { percentile } from "./scenarios.js"
import { limit, permitFromNodesAlone, ttlMillis } from "./semaphores.js"

const flags = process.argv.slice(2)
const [rounds = "5", seconds = "3", nodes = "1"] = flags.filter((arg, index) => !arg.startsWith("--") && !flags[index - 1]?.startsWith("--hold"))
const uncontended = flags.includes("--uncontended")
const holdIndex = flags.indexOf("--hold-ms")
const holdMillis = holdIndex >= 0 ? Number(flags[holdIndex + 1]) : undefined
const workers = uncontended ? limit : 8
const warmUpSeconds = 2

// One set of in-memory nodes for both: built once, shared by the manager and the nodes alone.
const nodesScope = Effect.runSync(Scope.make())
const nodeList = await Effect.runPromise(
  Effect.map(Layer.buildWithScope(RedisNode.layerMemory(Number(nodes)), nodesScope), Context.get(RedisNode.RedisNodes))
)
const redlock = await makeRedlock(Layer.succeed(RedisNode.RedisNodes, nodeList), { restartQuarantine: false })
const options = { limit, ttl: ttlMillis, retry: retry({ delay: Duration.millis(10), times: 1000 }) }
const body = holdMillis === undefined
  ? () => new Promise<void>((resolve) => setImmediate(resolve))
  : () => new Promise<void>((resolve) => setTimeout(resolve, holdMillis))

/** A permit through the library: `usingPermit`. */
const viaLibrary = (hold: () => Promise<void>) => redlock.usingPermit("engine", options, hold)

/** A permit from the nodes alone (no engine; a refused worker polls). */
const viaNodes = permitFromNodesAlone(nodeList, "alone")

/** Permits granted in `millis` of the workload. */
const run = async (permit: (hold: () => Promise<void>) => Promise<unknown>, millis: number): Promise<number> => {
  let permits = 0
  const end = performance.now() + millis
  const hold = () => {
    permits++
    return body()
  }
  await Promise.all(Array.from({ length: workers }, async () => {
    while (performance.now() < end) await permit(hold)
  }))
  return permits
}

/** CPU µs per permit of one round, printed. */
const measured = async (name: string, permit: (hold: () => Promise<void>) => Promise<unknown>, round: number) => {
  const cpu = process.cpuUsage()
  const start = performance.now()
  const permits = await run(permit, Number(seconds) * 1000)
  const elapsed = performance.now() - start
  const used = process.cpuUsage(cpu)
  console.log(
    `round ${round}, ${name}: ${Math.round(permits / (elapsed / 1000))} permits/s, ` +
      `${(used.user / permits).toFixed(1)} µs user + ${(used.system / permits).toFixed(1)} µs system per permit`
  )
  return (used.user + used.system) / permits
}

const shape = `${workers} workers, ${holdMillis === undefined ? "bodies one setImmediate long" : `bodies holding ${holdMillis} ms`}`
await run(viaLibrary, warmUpSeconds * 1000)
await run(viaNodes, warmUpSeconds * 1000)
const library: Array<number> = []
const alone: Array<number> = []
for (let round = 1; round <= Number(rounds); round++) {
  // Alternated, so that neither always runs first in a round.
  if (round % 2 === 1) {
    library.push(await measured("the library", viaLibrary, round))
    alone.push(await measured("the nodes alone", viaNodes, round))
  } else {
    alone.push(await measured("the nodes alone", viaNodes, round))
    library.push(await measured("the library", viaLibrary, round))
  }
}
const median = (list: ReadonlyArray<number>) => percentile([...list], 50)
console.log(`median: ${median(library).toFixed(1)} µs of CPU per permit (N = ${nodes}, in-memory nodes, ${shape})`)
console.log(`the nodes alone: ${median(alone).toFixed(1)} µs; the engine adds ${(median(library) - median(alone)).toFixed(1)} µs`)
await redlock.close()
await Effect.runPromise(Scope.close(nodesScope, Exit.void))
