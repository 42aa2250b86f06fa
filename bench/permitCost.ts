/**
 * Diagnostic: the client CPU of one uncontended permit against one uncontended lock, through the
 * Effect API as the semaphore bench calls it (a `runPromise` per operation) and from promise code
 * (effect-redlock/Promise `using`, `usingPermit`), one after another, on 1 or 5 servers:
 * `npx tsc -p tsconfig.bench.json && node .bench-build/bench/permitCost.js [nodes] [count]`.
 */
import { Duration, Effect, Layer, ManagedRuntime } from "effect"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import { makeRedlock } from "effect-redlock/Promise"
import * as Redlock from "effect-redlock/Redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import * as Semaphore from "effect-redlock/Semaphore"

const [nodes = "1", count = "5000"] = process.argv.slice(2)

const program = Effect.gen(function*() {
  const fleet = yield* RedisFleet.RedisFleet
  const ports = fleet.servers.map((server) => server.port).slice(0, Number(nodes))
  return yield* Effect.promise(async () => {
    const runtime = ManagedRuntime.make(
      Redlock.layer({ restartQuarantine: false }).pipe(
        Layer.provide(Ioredis.layer(ports.map((port) => ({ host: "127.0.0.1", port }))))
      )
    )
    const ttl = Duration.seconds(10)
    const operations = {
      lock: (i: number) => Effect.void.pipe(Redlock.withLock(`cost:lock:${i % 64}`, { ttl })),
      permit: (i: number) => Effect.void.pipe(Semaphore.withPermit(`cost:permit:${i % 64}`, { limit: 3, ttl }))
    }
    const facade = await makeRedlock(ports.map((port) => ({ host: "127.0.0.1", port })), { restartQuarantine: false })
    const promiseOperations = {
      "lock from promise code": (i: number) => facade.using(`cost:plock:${i % 64}`, { ttl: 10_000 }, async () => {}),
      "permit from promise code": (i: number) =>
        facade.usingPermit(`cost:ppermit:${i % 64}`, { limit: 3, ttl: 10_000 }, async () => {})
    }
    const results: Record<string, string> = {}
    for (const round of [0, 1]) {
      const all: Record<string, (i: number) => Promise<unknown>> = {
        ...Object.fromEntries(
          Object.entries(operations).map(([name, operation]) => [name, (i: number) => runtime.runPromise(operation(i))])
        ),
        ...promiseOperations
      }
      for (const [name, operation] of Object.entries(all)) {
        const cpu = process.cpuUsage()
        const start = performance.now()
        for (let i = 0; i < Number(count); i++) await operation(i)
        const used = process.cpuUsage(cpu)
        if (round === 1) {
          results[name] = `${((used.user + used.system) / 1000 / Number(count)).toFixed(3)} ms CPU, ${
            (Number(count) / ((performance.now() - start) / 1000)).toFixed(0)
          } ops/s`
        }
      }
    }
    await runtime.dispose()
    await facade.close()
    return results
  })
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(5)))).then((result) => {
  console.log(`N = ${nodes}`, JSON.stringify(result))
  process.exit(0)
})
