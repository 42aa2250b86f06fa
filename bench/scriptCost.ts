/**
 * Diagnostic: the server time of each slot script in the steady state of a
 * contended semaphore (3 slots held, waiters in line, each release handing
 * its slot to the first waiter while a new waiter joins), from SLOWLOG with
 * every command logged. One redis-server of the fleet.
 * `npx tsc -p tsconfig.bench.json && node .bench-build/bench/scriptCost.js [rounds]`
 */
import * as Effect from "effect/Effect"
import { Redis } from "ioredis"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Scripts from "@effect-redlock/core/nodes/scripts.js"

const rounds = Number(process.argv[2] ?? "2000")
const limit = 3
const slots = Array.from({ length: limit }, (_, slot) => `jobs\u0000permit${slot}`)
const value = (n: number) => `v${String(n).padStart(27, "0")}.10000.${limit}`

const program = Effect.gen(function*() {
  const fleet = yield* RedisFleet.RedisFleet
  const port = fleet.servers[0].port
  yield* Effect.promise(async () => {
    const redis = new Redis({ host: "127.0.0.1", port })
    const sub = Array.from({ length: 8 }, () => new Redis({ host: "127.0.0.1", port }))
    await Promise.all(sub.map((s) => s.subscribe("redlock-released:jobs\u0000permit")))
    for (const script of Scripts.nodeScripts(false)) await redis.script("LOAD", script.lua)
    const acquire = (v: string) =>
      redis.evalsha(
        Scripts.acquireSlot.sha,
        limit,
        ...slots,
        v,
        10_000,
        Date.now(),
        2_000,
        0,
        String(limit)
      ) as Promise<Array<number>>
    const release = (v: string) => redis.evalsha(Scripts.releaseOwned.sha, 1, slots[0], v, "1")
    // 3 holders, 4 waiters
    let next = 0
    const holders: Array<string> = []
    for (let i = 0; i < limit; i++) {
      const v = value(next++)
      await acquire(v)
      holders.push(v)
    }
    const waiting: Array<string> = []
    for (let i = 0; i < 4; i++) {
      const v = value(next++)
      await acquire(v)
      waiting.push(v)
    }
    await redis.config("SET", "slowlog-log-slower-than", "0")
    await redis.config("SET", "slowlog-max-len", "100000")
    await redis.slowlog("RESET")
    await redis.config("RESETSTAT")
    for (let round = 0; round < rounds; round++) {
      const holder = holders.shift()!
      await release(holder) // hands its slot to waiting[0]
      holders.push(waiting.shift()!)
      const v = value(next++)
      await acquire(v)
      waiting.push(v)
    }
    const stats = await redis.info("commandstats")
    for (const match of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
      console.log(
        `  ${match[1]}: ${(Number(match[2]) / rounds).toFixed(2)} per round, ${
          (Number(match[3]) / Number(match[2])).toFixed(2)
        } µs each`
      )
    }
    const log = (await redis.slowlog("GET", 2 * rounds + 10)) as Array<[number, number, number, Array<string>]>
    const bySha = new Map<string, Array<number>>()
    for (const [, , micros, args] of log) {
      if (args[0] !== "evalsha") continue
      const name = args[1] === Scripts.acquireSlot.sha
        ? "acquireSlot (join)"
        : args[1] === Scripts.releaseOwned.sha
        ? "release (hand-over)"
        : args[1]
      bySha.set(name, [...(bySha.get(name) ?? []), micros])
    }
    for (const [name, micros] of bySha) {
      micros.sort((a, b) => a - b)
      console.log(
        `${name}: ${micros.length} calls, median ${micros[micros.length >> 1]} µs, mean ${
          (micros.reduce((a, b) => a + b, 0) / micros.length).toFixed(1)
        } µs`
      )
    }
    await redis.config("SET", "slowlog-log-slower-than", "10000")
    redis.disconnect()
    sub.forEach((s) => s.disconnect())
  })
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(1))))
