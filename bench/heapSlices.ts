/**
 * Diagnostic: whether a contender's heap grows with use, or settles. The heap
 * scenario of `npm run bench` (16 loops of lock+unlock on distinct keys, heap
 * after full GCs) in `slices` slices of `cycles` one after another in one
 * process of its own, after a 5,000-cycle warm-up: a leak grows every slice
 * alike; warm-up and caches grow the first ones only.
 * `npm --prefix packages/effect4 run build && npx tsc -p tsconfig.bench.json &&
 * node --expose-gc .bench-build/bench/heapSlices.js [name] [slices] [cycles]`
 * (name: a contender's, e.g. "effect-redlock (Effect 4)"; default "effect-redlock").
 */
import * as Effect from "effect/Effect"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Contenders from "./contenders.js"
import * as Effect4 from "./effect4.js"
import * as Scenarios from "./scenarios.js"

const [name = "effect-redlock", slices = "3", cycles = "100000"] = process.argv.slice(2)

const program = Effect.gen(function*() {
  const fleet = yield* RedisFleet.RedisFleet
  const ports = fleet.servers.map((server) => server.port)
  return yield* Effect.promise(async () => {
    const all = [...Contenders.all, ...(await Effect4.contenders())]
    const contender = all.find((candidate) => candidate.name === name)
    if (contender === undefined) throw new Error(`no contender named ${name}: ${all.map((c) => c.name).join(", ")}`)
    const client = await contender.start(ports, "none")
    const growth: Array<number> = []
    // heapGrowth warms up (5,000 cycles) before each slice it measures: the first slice's warm-up is the process's.
    for (let slice = 0; slice < Number(slices); slice++) {
      growth.push(await Scenarios.heapGrowth(client, Number(cycles), `heap-slices:${slice}`))
    }
    await client.close()
    return growth
  })
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(5)))).then((growth) => {
  console.log(
    `${name}: heap growth per slice of ${cycles} cycles (MB): ${growth.map((mb) => mb.toFixed(3)).join(", ")}`
  )
  process.exit(0)
}, (error) => {
  console.error(error)
  process.exit(1)
})
