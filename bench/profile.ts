/**
 * One contender, one scenario, for profiling:
 * `npx tsc -p tsconfig.bench.json && node --cpu-prof .bench-build/bench/profile.js [contender] [loops] [seconds]`.
 */
import * as Effect from "effect/Effect"
import * as RedisFleet from "../fleet/RedisFleet.js"
import * as Contenders from "./contenders.js"
import * as Scenarios from "./scenarios.js"

const [name = "effect-redlock", loops = "1", seconds = "5"] = process.argv.slice(2)
const contender = Contenders.all.find((c) => c.name.includes(name))!

const program = Effect.gen(function*() {
  const fleet = yield* RedisFleet.RedisFleet
  const ports = fleet.servers.map((server) => server.port)
  return yield* Effect.promise(async () => {
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
