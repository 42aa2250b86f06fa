/**
 * Instructions per permit in the contended semaphore workload of
 * bench/semaphores.ts (8 workers, 3 permits, 1 ms hold), counted by
 * valgrind's callgrind: the client's user-space work per permit, which moves
 * by a few percent from run to run where permits/s and CPU time move by
 * 10–30% on this machine. Compare builds with it (a change to the
 * acquisition, waiting, grant or release path), not contenders' speed
 * (the kernel's work, socket writes, is not counted).
 *
 * `npm run bench:permit-instructions [-- contender [seconds]]` (default
 * `effect-redlock/Promise`, 20): the contender named by the start of its name and
 * its node count (`SINGLE=1`: N = 1, else N = 5), run under callgrind for
 * a warm-up of 40 s uncounted (the JIT settles), then `seconds` counted; with the workload's
 * hold and retry 30× longer (`BENCH_TIME_SCALE`), as the client is slower.
 */
import * as Effect from "effect/Effect"
import * as RedisFleet from "../fleet/RedisFleet.js"
import * as Callgrind from "./callgrind.js"
import * as Semaphores from "./semaphores.js"

const warmUpSeconds = 40
// The workload's hold and retry, 30× longer (bench/semaphores.ts): the client runs ~30× slower under valgrind.
const timeScale = 30

const contenderOf = (name: string) =>
  Semaphores.contenders.find((candidate) =>
    candidate.name.startsWith(name) && candidate.nodes === (process.env.SINGLE ? 1 : 5) &&
    !candidate.name.includes("fairHandoff: false")
  )

/** Inside valgrind: the workload, counted for `seconds` after the warm-up; prints how many permits were counted. */
const counted = (name: string, seconds: number) =>
  Effect.gen(function*() {
    const fleet = yield* RedisFleet.RedisFleet
    const contender = contenderOf(name)!
    const ports = fleet.servers.map((server) => server.port).slice(0, contender.nodes)
    yield* Effect.promise(async () => {
      await Semaphores.contention(contender, ports, warmUpSeconds, "bench:permit-instructions:warm-up")
      await Callgrind.counting("on")
      const result = await Semaphores.contention(contender, ports, seconds, "bench:permit-instructions")
      await Callgrind.counting("off")
      console.log(`permits=${result.granted} gaveUp=${result.gaveUp}`)
    })
  }).pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(5)))

/** Outside: this script under callgrind, its counts divided by the permits granted meanwhile. */
const instructionsPerPermit = (name: string, seconds: number) => {
  const counted = Callgrind.run(["--counted", name, String(seconds)], { BENCH_TIME_SCALE: String(timeScale) })
  const permits = /permits=(\d+)/.exec(counted.stdout)
  if (permits === null) throw new Error(`no permits counted for ${name}:\n${counted.stdout.slice(-1000)}`)
  const count = Number(permits[1])
  return { mainThread: counted.mainThread / count, all: counted.total / count, permits: count }
}

if (process.argv[2] === "--counted") {
  Effect.runPromise(counted(process.argv[3], Number(process.argv[4]))).then(() => process.exit(0))
} else {
  const name = process.argv[2] ?? "effect-redlock/Promise"
  const seconds = Number(process.argv[3] ?? 20)
  const contender = contenderOf(name)
  if (contender === undefined) throw new Error(`no contender named ${name}`)
  const { all, mainThread, permits } = instructionsPerPermit(name, seconds)
  console.log(
    `${contender.name}: ${Math.round(mainThread / 1000)}k instructions per permit on the main thread, ` +
      `${Math.round(all / 1000)}k on all threads (${permits} permits counted)`
  )
}
