/**
 * `npm run simulate`: thousands of random schedules of contending clients and
 * node faults on in-memory nodes, on virtual time (see faults/contention.ts
 * for the invariants). A failure prints its seed and path, to be replayed with
 * `--seed S --path P`.
 *
 * Options: `--runs N` (default 5000), `--seed S`, `--path P`,
 * `--quarantine off` (to watch the checker find the restart hazard),
 * `--primitive lock|semaphore|readWrite|any` (default any: each schedule the
 * lock, a semaphore of 1 to 3 permits, or a read-write lock of 1 to 3
 * readers).
 */
import * as fc from "effect/FastCheck"
import * as Contention from "./contention.js"

const flag = (name: string): string | undefined => {
  const index = process.argv.indexOf(`--${name}`)
  return index >= 0 ? process.argv[index + 1] : undefined
}

const runs = Number(flag("runs") ?? 5000)
const seed = flag("seed") === undefined ? Date.now() % 2 ** 31 : Number(flag("seed"))
const path = flag("path")
const restartQuarantine = flag("quarantine") !== "off"
const primitive = (flag("primitive") ?? "any") as Contention.Primitive

const started = performance.now()
const result = fc.check(Contention.property({ restartQuarantine }, primitive), {
  numRuns: runs,
  seed,
  ...(path === undefined ? {} : { path, endOnFailure: true })
})
const seconds = ((performance.now() - started) / 1000).toFixed(1)
if (result.failed) {
  console.log(
    `FAILED after ${result.numRuns} schedules (${seconds} s): seed ${result.seed}, path ${result.counterexamplePath}`
  )
  console.log(
    `replay: npm run simulate -- --seed ${result.seed} --path ${result.counterexamplePath}` +
      (restartQuarantine ? "" : " --quarantine off") + ` --primitive ${primitive}`
  )
  console.log(JSON.stringify(result.counterexample, null, 1))
  console.log(String(result.errorInstance))
  process.exit(1)
}
console.log(
  `${result.numRuns} schedules passed in ${seconds} s (seed ${seed}, restart quarantine ${
    restartQuarantine ? "on" : "off"
  }, primitive ${primitive})`
)
