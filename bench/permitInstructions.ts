/**
 * Instructions per permit in the contended semaphore workload of
 * bench/semaphores.ts (8 workers, 3 permits, 1 ms hold), counted by
 * valgrind's callgrind: the client's user-space work per permit, which moves
 * by a few percent from run to run where permits/s and CPU time move by
 * 10–30% on this machine. Compare builds with it (a change to the
 * acquisition, waiting, grant or release path), not contenders' speed
 * (the kernel's work, socket writes, is not counted).
 *
 * `npm run bench:permit-instructions [-- contender [seconds [warm-up seconds]]]`
 * (default `effect-redlock/Promise`, 20, 40): the contender named by the
 * start of its name and its node count (`SINGLE=1`: N = 1, else N = 5), run
 * under callgrind for the warm-up uncounted (the JIT settles), then
 * `seconds` counted; with the workload's hold and retry 30× longer
 * (`BENCH_TIME_SCALE`), as the client is slower. Prints the main thread's
 * count, also without V8's optimizing compiler and the collector's part.
 *
 * `npm run bench:permit-instructions -- --memory [permits] [workers]`
 * (default 5,000 and 8; 3: nobody waits): the same workload's shape over
 * one in-memory node (promise code, bodies one `setImmediate` long, N = 1),
 * counted by permits: 30,000 uncounted, then `permits` counted between the
 * same two permits, the workers running on throughout, with V8's optimizing
 * compiler on the main thread (`--no-concurrent-recompilation`) and its
 * instructions left out (code still tiering up), and the garbage
 * collector's printed apart. No network, no timing under valgrind: the
 * count without the collector moves by ~5% from run to run (with it, by up
 * to 30%: scavenges copy what survives them, which comes in lumps), where
 * the network's moves by ~15% (its JIT is still warming up under
 * valgrind). The in-memory node's own work is in the count; a second run
 * counts the node alone (its `acquireSlot` and `release` called directly,
 * as in `bench:permit-engine`), and the difference is the engine's: what an
 * A/B of an engine change compares.
 */
import * as Effect from "effect/Effect"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Callgrind from "./callgrind.js"
import * as InMemoryPermits from "./inMemoryPermits.js"
import * as Semaphores from "./semaphores.js"

const defaultWarmUpSeconds = 40
// Uncounted permits of the in-memory count (`--memory`), after which its code no longer tiers up.
const warmUpPermits = 30_000
// The workload's hold and retry, 30× longer (bench/semaphores.ts): the client runs ~30× slower under valgrind.
const timeScale = 30

const contenderOf = (name: string) =>
  Semaphores.contenders.find((candidate) =>
    candidate.name.startsWith(name) && candidate.nodes === (process.env.SINGLE ? 1 : 5) &&
    !candidate.name.includes("fairHandoff: false")
  )

const thousands = (instructions: number) => `${Math.round(instructions / 1000)}k`

/** Inside valgrind: the workload, counted for `seconds` after the warm-up; prints how many permits were counted. */
const counted = (name: string, seconds: number, warmUpSeconds: number) =>
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
const instructionsPerPermit = (name: string, seconds: number, warmUpSeconds: number) => {
  const counted = Callgrind.run(["--counted", name, String(seconds), String(warmUpSeconds)], {
    BENCH_TIME_SCALE: String(timeScale)
  })
  const permits = /permits=(\d+)/.exec(counted.stdout)
  if (permits === null) throw new Error(`no permits counted for ${name}:\n${counted.stdout.slice(-1000)}`)
  const count = Number(permits[1])
  return {
    mainThread: counted.mainThread / count,
    withoutCompiler: counted.mainThreadWithoutCompiler / count,
    collector: counted.garbageCollector / count,
    all: counted.total / count,
    permits: count
  }
}

/**
 * Inside, `--memory`: the in-memory workload through the library (`library`)
 * or the node alone, counted from the body of the warm-up's last permit to
 * the body `permits` later, the workers running on throughout (workers that
 * stopped and started again would run code paths of a quiet resource, not
 * yet optimized, in the count); prints how many were counted.
 */
const countedInMemory = async (permits: number, workers: number, through: "library" | "alone") => {
  const inMemory = await InMemoryPermits.make(1)
  const permit = through === "library" ? inMemory.viaLibrary("memory") : inMemory.viaNodes("memory")
  let held = 0
  const body = () => {
    held++
    if (held === warmUpPermits) Callgrind.countingNow("on")
    if (held === warmUpPermits + permits) Callgrind.countingNow("off")
    return new Promise<void>((resolve) => setImmediate(resolve))
  }
  await InMemoryPermits.run(permit, workers, body, (granted) => granted < warmUpPermits + permits + workers)
  console.log(`permits=${permits}`)
}

/**
 * Outside, `--memory`: main-thread instructions per permit without the
 * optimizing compiler, through the library or alone, and those of it spent
 * collecting garbage.
 */
const inMemoryPerPermit = (permits: number, workers: number, through: "library" | "alone") => {
  const counted = Callgrind.run(["--counted-memory", String(permits), String(workers), through], {}, [
    "--no-concurrent-recompilation"
  ])
  const granted = /permits=(\d+)/.exec(counted.stdout)
  if (granted === null) throw new Error(`no permits counted in memory:\n${counted.stdout.slice(-1000)}`)
  return {
    withoutCollector: (counted.mainThreadWithoutCompiler - counted.garbageCollector) / Number(granted[1]),
    collector: counted.garbageCollector / Number(granted[1])
  }
}

if (process.argv[2] === "--counted-memory") {
  countedInMemory(Number(process.argv[3]), Number(process.argv[4]), process.argv[5] as "library" | "alone").then(() =>
    process.exit(0)
  )
} else if (process.argv[2] === "--memory") {
  const permits = Number(process.argv[3] ?? 5_000)
  const workers = Number(process.argv[4] ?? Semaphores.workers)
  const library = inMemoryPerPermit(permits, workers, "library")
  const alone = inMemoryPerPermit(permits, workers, "alone")
  console.log(
    `in memory, N = 1, ${workers} workers: ${
      thousands(library.withoutCollector)
    } instructions per permit through the library, ` +
      `${thousands(alone.withoutCollector)} from the node alone: the engine adds ${
        thousands(library.withoutCollector - alone.withoutCollector)
      } ` +
      `(main thread, without V8's optimizing compiler and garbage collection); collecting garbage: ` +
      `${thousands(library.collector)} through the library, ${
        thousands(alone.collector)
      } alone (moves by tens of percent between runs)`
  )
} else if (process.argv[2] === "--counted") {
  Effect.runPromise(counted(process.argv[3], Number(process.argv[4]), Number(process.argv[5]))).then(() =>
    process.exit(0)
  )
} else {
  const name = process.argv[2] ?? "effect-redlock/Promise"
  const seconds = Number(process.argv[3] ?? 20)
  const warmUpSeconds = Number(process.argv[4] ?? defaultWarmUpSeconds)
  const contender = contenderOf(name)
  if (contender === undefined) throw new Error(`no contender named ${name}`)
  const { all, collector, mainThread, permits, withoutCompiler } = instructionsPerPermit(name, seconds, warmUpSeconds)
  console.log(
    `${contender.name}: ${thousands(mainThread)} instructions per permit on the main thread ` +
      `(${thousands(withoutCompiler)} without V8's optimizing compiler, of which collecting garbage ${
        thousands(collector)
      }), ` +
      `${thousands(all)} on all threads (${permits} permits counted after ${warmUpSeconds} s of warm-up)`
  )
}
