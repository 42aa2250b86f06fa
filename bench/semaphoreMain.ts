/**
 * `npm run bench:semaphore [-- --seconds S --rounds R --pin --effect4]`: the semaphore
 * table (e) of `npm run bench` alone (bench/semaphores.ts), on 5 local
 * redis-servers, and the read-write workload (f). `--pin`: the servers on a
 * core of their own, the clients on the others (cores.ts). `--effect4`: the
 * Effect 4 line's rows too (`npm run bench:semaphore:effect4` builds its
 * package and runs on Node 22).
 */
import * as Effect from "effect/Effect"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import { pinApart } from "./cores.js"
import * as Effect4 from "./effect4.js"
import * as Semaphores from "./semaphores.js"

const flag = (name: string): string | undefined => {
  const index = process.argv.indexOf(`--${name}`)
  return index >= 0 ? process.argv[index + 1] : undefined
}
const seconds = Number(flag("seconds") ?? 3)
const rounds = Number(flag("rounds") ?? 2)
const pin = process.argv.includes("--pin")
// The Effect 4 line's rows too (its package built, Node 22: `npm run bench:semaphore:effect4`).
const effect4 = process.argv.includes("--effect4")

const program = Effect.gen(function*() {
  const fleet = yield* RedisFleet.RedisFleet
  const cores = pin ? pinApart(fleet.servers.map((server) => server.pid())) : "unpinned"
  const list = effect4
    ? [...Semaphores.contenders, ...yield* Effect.promise(Effect4.semaphoreContenders)]
    : Semaphores.contenders
  const results = yield* Semaphores.rounds(
    fleet,
    seconds,
    rounds,
    (line) => Effect.sync(() => console.error(line)),
    list
  )
  const readWrite = yield* Semaphores.readWriteRounds(fleet, seconds, rounds)
  return [cores, list, results, readWrite] as const
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(5)))).then(
  ([cores, list, results, readWrite]) => {
    console.log(`(${cores})`)
    console.log("")
    console.log(Semaphores.table(results, list))
    console.log("")
    console.log(readWrite)
    process.exit(0)
  },
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
