/**
 * `npm run bench:semaphore [-- --seconds S --rounds R]`: the semaphore table
 * (e) of `npm run bench` alone (bench/semaphores.ts), on 5 local redis-servers,
 * and the read-write workload (f).
 */
import * as Effect from "effect/Effect"
import * as RedisFleet from "../fleet/RedisFleet.js"
import * as Semaphores from "./semaphores.js"

const flag = (name: string): string | undefined => {
  const index = process.argv.indexOf(`--${name}`)
  return index >= 0 ? process.argv[index + 1] : undefined
}
const seconds = Number(flag("seconds") ?? 3)
const rounds = Number(flag("rounds") ?? 2)

const program = Effect.flatMap(
  RedisFleet.RedisFleet,
  (fleet) =>
    Effect.zip(
      Semaphores.rounds(fleet, seconds, rounds, (line) => Effect.sync(() => console.error(line))),
      Semaphores.readWriteRounds(fleet, seconds, rounds)
    )
)

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(5)))).then(([results, readWrite]) => {
  console.log(Semaphores.table(results))
  console.log("")
  console.log(readWrite)
  process.exit(0)
}, (error) => {
  console.error(error)
  process.exit(1)
})
