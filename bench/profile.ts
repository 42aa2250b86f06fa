/**
 * One contender, one scenario, for profiling:
 * `npx tsc -p tsconfig.bench.json && node --cpu-prof .bench-build/bench/profile.js [contender] [loops|contended] [seconds]`.
 */
import * as Effect from "effect/Effect"
import * as RedisFleet from "../fleet/RedisFleet.js"
import * as Contenders from "./contenders.js"
import * as Scenarios from "./scenarios.js"

const [name = "effect-redlock", loops = "1", seconds = "5"] = process.argv.slice(2)
// `contended` instead of a number of loops: 8 workers on one key, default waiting.
const contended = loops === "contended"
const contender = Contenders.all.find((c) => c.name.includes(name))!

const program = Effect.gen(function*() {
  const fleet = yield* RedisFleet.RedisFleet
  const ports = fleet.servers.map((server) => server.port)
  return yield* Effect.promise(async () => {
    if (contended) return Scenarios.contention(contender, ports, "defaults", 8, Number(seconds), "profile")
    const client = await contender.start(ports, "none")
    const result = await Scenarios.throughput(client, Number(loops), Number(seconds), "profile")
    await client.close()
    return result
  })
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(5)))).then((result) => {
  console.log(contender.name, JSON.stringify(result))
  process.exit(0)
})
