/**
 * What each client library costs on its own, for the "every client" rows of
 * `npm run bench` to be read against: `npm run bench:client-floors [--
 * seconds]`. Bare clients of ioredis and node-redis (RESP2 and RESP3) on one
 * local redis-server, no library code: `SET NX PX` then `DEL`, by one caller
 * in turn (each round trip waits for the one before, as a hand-over chain
 * does) and by 32 callers at once; then the same through a promise lock
 * manager (`effect-redlock/Promise`) over one node of each library. node-redis
 * writes a command at the event loop's next check phase (`setImmediate`),
 * ioredis at once: the first column shows what that costs before any lock.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Redis } from "ioredis"
import { createClient } from "redis"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import { makeRedlock, type PromiseNodeOptions } from "effect-redlock/Promise"

const seconds = Number(process.argv[2] ?? 3)

/** Operations per second of `operation` (its argument: the caller's resource) by `callers` callers for `seconds`. */
const rate = async (callers: number, operation: (resource: string) => Promise<unknown>): Promise<number> => {
  let done = 0
  const endAt = performance.now() + seconds * 1000
  await Promise.all(Array.from({ length: callers }, async (_, caller) => {
    for (let i = 0; performance.now() < endAt; i++) {
      await operation(`bench:floors:${caller}:${i % 100}`)
      done++
    }
  }))
  return done / seconds
}

interface Bare {
  readonly set: (key: string) => Promise<unknown>
  readonly del: (key: string) => Promise<unknown>
}

const bareNodeRedis = (client: { sendCommand(args: Array<string>): Promise<unknown> }): Bare => ({
  set: (key) => client.sendCommand(["SET", key, "v", "PX", "10000", "NX"]),
  del: (key) => client.sendCommand(["DEL", key])
})

const program = Effect.gen(function*() {
  const fleet = Context.get(yield* Layer.build(RedisFleet.layerLocal(1)), RedisFleet.RedisFleet)
  const port = fleet.servers[0].port
  yield* Effect.promise(async () => {
    const ioredis = new Redis({ host: "127.0.0.1", port })
    const resp2 = createClient({ socket: { host: "127.0.0.1", port }, RESP: 2 })
    const resp3 = createClient({ socket: { host: "127.0.0.1", port }, RESP: 3 })
    await Promise.all([resp2.connect(), resp3.connect()])
    const clients: ReadonlyArray<readonly [string, Bare, PromiseNodeOptions]> = [
      ["ioredis", { set: (key) => ioredis.set(key, "v", "PX", 10_000, "NX"), del: (key) => ioredis.del(key) }, {
        client: ioredis
      }],
      ["node-redis RESP2", bareNodeRedis(resp2), { client: resp2 }],
      ["node-redis RESP3", bareNodeRedis(resp3), { client: resp3 }]
    ]
    const baseline: Record<string, number> = {}
    for (const [name, bare, node] of clients) {
      const redlock = await makeRedlock([node], { restartQuarantine: false })
      const lockAndUnlock = async (resource: string) =>
        redlock.release(await redlock.acquire(resource, { ttl: 10_000 }))
      const setAndDel = async (key: string) => {
        await bare.set(key)
        await bare.del(key)
      }
      await rate(4, lockAndUnlock) // warm-up, not reported
      for (const callers of [1, 32]) {
        const floor = await rate(callers, setAndDel)
        const ours = await rate(callers, lockAndUnlock)
        const against = baseline[callers] ??= ours
        console.log(
          `${name.padEnd(17)} ${String(callers).padStart(2)} caller(s): SET NX+DEL ${
            floor.toFixed(0).padStart(6)
          }/s, ` +
            `lock+unlock ${ours.toFixed(0).padStart(6)}/s (${(ours / floor).toFixed(2)}x its floor, ${
              (ours / against).toFixed(2)
            }x ours over ioredis)`
        )
      }
      await redlock.close()
    }
    ioredis.disconnect()
    await Promise.all([resp2.close(), resp3.close()])
  })
})

Effect.runPromise(Effect.scoped(program)).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
