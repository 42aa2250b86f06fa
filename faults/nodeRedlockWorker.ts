/**
 * A contender of the fault suite written as a node-redlock user's program:
 * `effect-redlock/node-redlock` over ioredis clients of its own, taking the
 * lock again and again until its time is up. It reports the same events as
 * worker.ts, and shares its lock and fence keys (`keyPrefix: "redlock:"`,
 * the Effect line's default), so that both kinds of worker contend for one
 * resource (the suite's `frontEnds: "mixed"`).
 */
import { Effect, Random } from "effect"
import { Redis } from "ioredis"
import Redlock, { ExecutionError } from "effect-redlock/node-redlock"
import { hrMillis } from "./protocol.js"
import { config, emit, fencedWrite, startSignal } from "./workerProcess.js"

const random = Random.make(config.seed)
const between = (min: number, max: number) => Effect.runSync(random.nextRange(min, max))
const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, Math.round(millis)))

const main = async () => {
  if (config.limit !== undefined || config.maxReaders !== undefined) {
    throw new Error("node-redlock's API has locks only")
  }
  const clients = config.nodePorts.map((port) => new Redis({ host: "127.0.0.1", port }))
  for (const client of clients) client.on("error", () => {})
  // Retries like worker.ts's (50 ms jittered, about 1 s in all), as node-redlock settings.
  const redlock = new Redlock(clients, {
    retryCount: 20,
    retryDelay: 50,
    retryJitter: 25,
    keyPrefix: "redlock:",
    maxTtl: config.maxTtlMillis,
    restartQuarantine: config.restartQuarantine
  })
  const storage = new Redis({ host: "127.0.0.1", port: config.storagePort, maxRetriesPerRequest: 1 })
  const fenced = fencedWrite(storage)
  const write = (slot: string, value: string, token: bigint) => Effect.runPromise(fenced(slot, value, token))
  let acquisitions = 0
  let gaveUp = 0
  emit({ type: "ready", id: config.id })
  await startSignal
  const stopAt = hrMillis() + config.durationMillis
  while (hrMillis() < stopAt) {
    try {
      const lock = await redlock.acquire([config.resource], config.ttlMillis)
      try {
        const token = await lock.fencingToken()
        const at = hrMillis()
        const slot = lock.resources[0]!
        acquisitions++
        emit({
          type: "enter",
          id: config.id,
          token: token.toString(),
          at,
          validUntil: at + lock.remaining(),
          slot,
          write: false
        })
        await write(slot, `worker ${config.id} enters`, token)
        const [min, max] = config.holdMillis
        await sleep(between(min, max))
        const lateWrite = await write(slot, `worker ${config.id} leaves`, token)
        emit({ type: "leave", id: config.id, at: hrMillis(), lateWrite })
      } catch (error) {
        // No token (the lock was lost, or no quorum issued one): given up, as worker.ts counts it.
        if ((error as { readonly _tag?: string })._tag === undefined) throw error
        gaveUp++
      } finally {
        // A release that finds the lock expired or taken rejects, as node-redlock's does.
        await lock.release().catch(() => {})
      }
    } catch (error) {
      if (error instanceof ExecutionError) gaveUp++
      else emit({ type: "error", id: config.id, detail: `${String(error)} ${(error as Error).stack ?? ""}` })
    }
    await sleep(between(5, 25))
  }
  emit({ type: "done", id: config.id, acquisitions, gaveUp })
  await redlock.quit().catch((error) => emit({ type: "error", id: config.id, detail: `quit: ${String(error)}` }))
  storage.disconnect()
}

main().then(
  () => process.exit(0),
  (error) => {
    emit({ type: "error", id: config.id, detail: String(error) })
    process.exit(1)
  }
)
