/**
 * Diagnostic: the client's CPU per contended permit with no network: the
 * semaphore workload's shape (8 workers, 3 permits, waiting in line, promise
 * code) over in-memory nodes on the live clock, each body one `setImmediate`
 * long. No server, no socket, no idle CPU to wake: what is left is the
 * engine, the facade and the in-memory nodes, so a change of the engine shows
 * in the client's CPU per permit without the network's noise (this machine's
 * runs still drift: compare rounds side by side, and several of them).
 * `npx tsc -p tsconfig.bench.json && node .bench-build/bench/permitEngine.js [rounds] [seconds] [nodes]
 * [--uncontended] [--hold-ms H] [--effect]`:
 * `--uncontended`: 3 workers, as many as permits (nobody waits); `--effect`:
 * permits through the Effect API (`Semaphore.withPermit`, one `runPromise`
 * each) instead of promise code; `--hold-ms
 * H`: each body holds a timer of H ms (the network bench holds 1 ms: the
 * process idles between permits, as users' do). Each round then also runs
 * the nodes alone (their `acquireSlot` and `release` called directly, a
 * refused worker polling every 10 ms: no engine) and prints what the engine
 * adds per permit.
 */
import * as InMemoryPermits from "./inMemoryPermits.js"
import { percentile } from "./scenarios.js"
import { limit } from "./semaphores.js"

const flags = process.argv.slice(2)
const [rounds = "5", seconds = "3", nodes = "1"] = flags.filter((arg, index) =>
  !arg.startsWith("--") && !flags[index - 1]?.startsWith("--hold")
)
const uncontended = flags.includes("--uncontended")
const throughEffect = flags.includes("--effect")
const holdIndex = flags.indexOf("--hold-ms")
const holdMillis = holdIndex >= 0 ? Number(flags[holdIndex + 1]) : undefined
const workers = uncontended ? limit : 8
const warmUpSeconds = 2

const permits = await InMemoryPermits.make(Number(nodes))
const body = holdMillis === undefined
  ? () => new Promise<void>((resolve) => setImmediate(resolve))
  : () => new Promise<void>((resolve) => setTimeout(resolve, holdMillis))

const viaLibrary = throughEffect ? permits.viaEffect("engine") : permits.viaLibrary("engine")
const viaNodes = permits.viaNodes("alone")

/** Permits granted in `millis` of the workload. */
const run = (permit: InMemoryPermits.Permit, millis: number): Promise<number> => {
  const end = performance.now() + millis
  return InMemoryPermits.run(permit, workers, body, () => performance.now() < end)
}

/** CPU µs per permit of one round, printed. */
const measured = async (name: string, permit: InMemoryPermits.Permit, round: number) => {
  const cpu = process.cpuUsage()
  const start = performance.now()
  const granted = await run(permit, Number(seconds) * 1000)
  const elapsed = performance.now() - start
  const used = process.cpuUsage(cpu)
  console.log(
    `round ${round}, ${name}: ${Math.round(granted / (elapsed / 1000))} permits/s, ` +
      `${(used.user / granted).toFixed(1)} µs user + ${(used.system / granted).toFixed(1)} µs system per permit`
  )
  return (used.user + used.system) / granted
}

const shape =
  `${workers} workers, ${
    holdMillis === undefined ? "bodies one setImmediate long" : `bodies holding ${holdMillis} ms`
  }, ` +
  (throughEffect ? "Semaphore.withPermit" : "usingPermit")
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
console.log(
  `the nodes alone: ${median(alone).toFixed(1)} µs; the engine adds ${(median(library) - median(alone)).toFixed(1)} µs`
)
await permits.close()
