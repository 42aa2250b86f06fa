/**
 * The library's own cost per lock+unlock, without Redis: 5 nodes whose
 * operations answer at once (resolved promises). What is left is Effect's
 * runtime and our code. `npm run bench:overhead [-- cycles]`.
 */
import { Duration, Effect, Layer, ManagedRuntime } from "effect"
import { makeRedlock } from "effect-redlock/Promise"
import * as Redlock from "effect-redlock/Redlock"
import type { NodePromises, RedisNode } from "effect-redlock/RedisNode"
import { RedisNodes } from "effect-redlock/RedisNode"

const instant = (name: string): RedisNode => {
  const promises: NodePromises = {
    acquire: () => Promise.resolve(true),
    acquireInTurn: () => Promise.resolve({ _tag: "Granted" }),
    acquireSlot: () => Promise.resolve({ _tag: "Granted", slot: 0 }),
    release: (keys) => Promise.resolve(keys.length),
    extend: () => Promise.resolve(true),
    incrementFences: () => Promise.resolve(undefined),
    commitFences: () => Promise.resolve(true),
    inspect: () => Promise.resolve({ value: undefined, ttlMillis: undefined })
  }
  return { name, run: () => ({ _tag: "Known", id: name, startedAtMillis: 0 }), promises }
}

const cycles = Number(process.argv[2] ?? 50_000)
const nodes = Layer.succeed(RedisNodes, Array.from({ length: 5 }, (_, i) => instant(`n${i}`)))
const runtime = ManagedRuntime.make(
  Redlock.layer({ retry: Redlock.noRetry, restartQuarantine: false }).pipe(Layer.provide(nodes))
)

const measure = async (label: string, cycle: (i: number) => Promise<unknown>) => {
  for (let i = 0; i < 5000; i++) await cycle(i)
  const cpu = process.cpuUsage()
  const start = performance.now()
  for (let i = 0; i < cycles; i++) await cycle(i)
  const used = process.cpuUsage(cpu)
  console.log(
    `${label}: ${((used.user + used.system) / cycles).toFixed(1)} µs CPU, ${
      ((performance.now() - start) * 1000 / cycles).toFixed(1)
    } µs wall per lock+unlock`
  )
}

const main = async () => {
  const redlock = await runtime.runPromise(Redlock.Redlock)
  const ttl = Duration.seconds(10)
  await measure(
    "Effect.scoped(acquire), one runPromise each",
    (i) => runtime.runPromise(Effect.scoped(redlock.acquire(`k${i}`, { ttl })))
  )
  await measure("withLock(Effect.void)", (i) => runtime.runPromise(Redlock.withLock(Effect.void, `k${i}`, { ttl })))
  const loop = (n: number) =>
    Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) => Effect.scoped(redlock.acquire(`k${i}`, { ttl })), {
      discard: true
    })
  const cpu = process.cpuUsage()
  await runtime.runPromise(loop(cycles))
  const used = process.cpuUsage(cpu)
  console.log(`in one fiber: ${((used.user + used.system) / cycles).toFixed(1)} µs CPU per lock+unlock`)
  await runtime.dispose()
  const facade = await makeRedlock(nodes, { retry: Redlock.noRetry, restartQuarantine: false })
  await measure(
    "effect-redlock/Promise acquire + release",
    async (i) => facade.release(await facade.acquire(`k${i}`, { ttl }))
  )
  await facade.close()
}
main()
