/**
 * Instructions per lock+unlock, counted by valgrind's callgrind: a figure
 * that moves by ~3% from run to run whatever else the machine does, where
 * ops/s and CPU time move by 10–30% here. Compare builds with it; it does not
 * count the kernel's work (socket writes) nor cache misses.
 *
 * `npm run bench:instructions [-- contender,... [cycles]]` (default
 * `floor,effect`, 2000): for each contender, two runs under callgrind, of
 * `cycles` and of 2 × `cycles` sequential lock+unlock after 6000 uncounted
 * ones (the JIT settles); the difference divided by `cycles` leaves out
 * start-up. Each run takes a minute or two. `SINGLE=1` in the environment:
 * one node instead of five. A row of a ref's packed build is named as under
 * `npm run bench -- --against` ("effect-redlock/Promise @ ab62407": builds.ts).
 */
import * as Effect from "effect/Effect"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Builds from "./builds.js"
import * as Callgrind from "./callgrind.js"
import * as Contenders from "./contenders.js"

const warmUp = 6000

/** Inside valgrind: run `cycles` counted lock+unlock. */
const counted = (name: string, cycles: number) =>
  Effect.gen(function*() {
    const fleet = yield* RedisFleet.RedisFleet
    const ports = fleet.servers.map((server) => server.port)
    yield* Effect.promise(async () => {
      const contender = Contenders.byName(name) ?? (await Builds.rowNamed(name, (line) => console.error(line)))!
      const client = await contender.start(process.env.SINGLE ? ports.slice(0, 1) : ports, "none", true)
      // `count` sequential lock+unlock, in the contender's own idiom where it has one (loops as fibers).
      const run = async (count: number, tag: string) => {
        let done = 0
        const nextKey = () => `${tag}:${done++}`
        if (client.runLoops !== undefined) {
          return client.runLoops({
            loops: 1,
            running: () => done < count,
            ttlMillis: 10_000,
            nextKey,
            record: (_, acquired) => {
              if (!acquired) throw new Error(`${contender.name}: not acquired`)
            }
          })
        }
        while (done < count) {
          const handle = await client.lock(nextKey(), 10_000)
          if (handle === undefined) throw new Error(`${contender.name}: not acquired`)
          await client.unlock(handle)
        }
      }
      await run(warmUp, "warm")
      await Callgrind.counting("on")
      await run(cycles, "counted")
      await Callgrind.counting("off")
      await client.close()
    })
  }).pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(5)))

/** Outside: this script's count of `cycles` lock+unlock under callgrind, all threads. */
const instructions = (name: string, cycles: number): number => Callgrind.run(["--counted", name, String(cycles)]).total

if (process.argv[2] === "--counted") {
  Effect.runPromise(counted(process.argv[3], Number(process.argv[4]))).then(() => process.exit(0))
} else {
  const names = (process.argv[2] ?? "floor,effect").split(",")
  const cycles = Number(process.argv[3] ?? 2000)
  for (const name of names) {
    const perCycle = (instructions(name, 2 * cycles) - instructions(name, cycles)) / cycles
    console.log(
      `${Contenders.byName(name)?.name ?? name}${process.env.SINGLE ? " (one node)" : ""}: ${
        Math.round(perCycle / 1000)
      }k instructions per lock+unlock`
    )
  }
}
