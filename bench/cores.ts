/**
 * `--pin` of the benches that take it: the redis-servers on the machine's
 * last core and this process (every thread of it) on the others, by
 * `taskset`, on the servers the fleet started, by PID. On a machine of two
 * cores the client's socket writes otherwise wake a server on the client's
 * own core, and the client's and the server's CPU slow each other's replies
 * (bench/README.md, "Where an N = 1 hand-over waits, end to end").
 */
import { execFileSync } from "node:child_process"
import { availableParallelism } from "node:os"

/** Pins as above and says how, for the bench's output. */
export const pinApart = (serverPids: ReadonlyArray<number | undefined>): string => {
  const cores = availableParallelism()
  if (cores < 2) throw new Error("--pin needs two cores or more")
  const serverCore = String(cores - 1)
  const clientCores = cores === 2 ? "0" : `0-${cores - 2}`
  for (const pid of serverPids) {
    if (pid !== undefined) execFileSync("taskset", ["-p", "-c", serverCore, String(pid)], { stdio: "ignore" })
  }
  execFileSync("taskset", ["-a", "-p", "-c", clientCores, String(process.pid)], { stdio: "ignore" })
  return `pinned: the redis-servers on core ${serverCore}, this process on core ${clientCores}`
}
