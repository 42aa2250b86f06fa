/**
 * A read-write lock: three readers of a report table run together, and a
 * migration of the table runs alone, between them, whichever process each
 * runs in (here all in one).
 *
 *   REDLOCK_NODES=redis://127.0.0.1:6379,... npx tsx examples/read-write.ts
 */
import { Effect, Layer, Schedule } from "effect"
import { ReadWriteLock, Redlock } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"

const options: ReadWriteLock.ReadWriteOptions = {
  ttl: "10 seconds",
  retry: Schedule.spaced("30 millis").pipe(Schedule.jittered, Schedule.upTo("10 seconds"))
}
let readers = 0
let writing = false

const report = (n: number) =>
  Effect.gen(function*() {
    readers++
    yield* Effect.log(`report ${n} reads (${readers} reading${writing ? ", WHILE WRITING" : ""})`)
    yield* Effect.sleep("300 millis")
    readers--
  }).pipe(ReadWriteLock.withRead("report-table", options))

const migrate = Effect.gen(function*() {
  writing = true
  yield* Effect.log(`the migration writes (${readers} reading)`)
  yield* Effect.sleep("300 millis")
  writing = false
}).pipe(ReadWriteLock.withWrite("report-table", options))

const program = Effect.all([report(1), report(2), migrate, report(3)], { concurrency: "unbounded" }).pipe(
  Effect.zipRight(Effect.log("done"))
)

const MainLive = Redlock.layerConfig().pipe(Layer.provide(Ioredis.layerConfig()))

Effect.runPromise(program.pipe(Effect.provide(MainLive)))
