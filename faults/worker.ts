/**
 * One contender of the fault suite, run as its own Node process with its own
 * lock manager and connections. It takes the lock (or a permit of a
 * semaphore, or a read or write hold of a read-write lock) again and again
 * until its time is up, and reports each critical section on stdout, one JSON line per
 * event, on the machine-wide monotonic clock (`process.hrtime`), so that the
 * parent can compare sections of different processes.
 *
 * In each section it writes twice to a fenced storage key: at entry, and at
 * the end of its hold (the "late" write of a holder that was paused).
 */
import { Duration, Effect, Layer, Logger, Random, Schedule } from "effect"
import { Redis } from "ioredis"
import * as Redlock from "effect-redlock/Redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import * as NodeRedis from "effect-redlock/RedisNode/NodeRedis"
import * as Glide from "effect-redlock/RedisNode/Glide"
import { hrMillis } from "./protocol.js"
import { config, emit, fencedWrite, startSignal } from "./workerProcess.js"

/** The same seed gives the same holds (the lock manager's own jitter stays unseeded). */
const random = Random.make(config.seed)

const program = Effect.gen(function*() {
  const redlock = yield* Redlock.Redlock
  const storage = yield* Effect.acquireRelease(
    Effect.sync(() => new Redis({ host: "127.0.0.1", port: config.storagePort, maxRetriesPerRequest: 1 })),
    (client) => Effect.sync(() => client.disconnect())
  )
  const retry = Schedule.spaced("50 millis").pipe(
    Schedule.jittered,
    Schedule.modifyDelay((_, delay) => Duration.millis(Math.round(Duration.toMillis(delay)))),
    Schedule.upTo("1 second")
  )
  const write = fencedWrite(storage)
  let acquisitions = 0
  let gaveUp = 0
  emit({ type: "ready", id: config.id })
  yield* Effect.promise(() => startSignal)
  const stopAt = hrMillis() + config.durationMillis
  while (hrMillis() < stopAt) {
    yield* Effect.scoped(Effect.gen(function*() {
      const options = { ttl: Duration.millis(config.ttlMillis), retry }
      const writing = config.maxReaders !== undefined && (yield* random.nextIntBetween(0, 3)) === 0
      const lock = yield* (config.maxReaders !== undefined
        ? (writing ? redlock.acquireWrite : redlock.acquireRead)(config.resource, {
          ...options,
          maxReaders: config.maxReaders
        })
        : config.limit !== undefined
        ? redlock.acquirePermit(config.resource, { ...options, limit: config.limit })
        : redlock.acquire(config.resource, options))
      const slot = lock.resources[0]
      const token = yield* lock.fencingToken
      const at = hrMillis()
      const validUntil = at + Duration.toMillis(yield* lock.remaining)
      acquisitions++
      emit({ type: "enter", id: config.id, token: token.toString(), at, validUntil, slot, write: writing })
      yield* write(slot, `worker ${config.id} enters`, token)
      const [min, max] = config.holdMillis
      yield* Effect.sleep(Duration.millis(Math.round(yield* random.nextRange(min, max))))
      const lateWrite = yield* write(slot, `worker ${config.id} leaves`, token)
      emit({ type: "leave", id: config.id, at: hrMillis(), lateWrite })
    })).pipe(
      Effect.catchTags({
        LockNotAcquired: () => Effect.sync(() => void gaveUp++),
        FencingTokenUnavailable: () => Effect.sync(() => void gaveUp++),
        LockLost: () => Effect.sync(() => void gaveUp++)
      }),
      Effect.catchAllCause((cause) => Effect.sync(() => emit({ type: "error", id: config.id, detail: String(cause) })))
    )
    // A short pause off the lock, so that the releaser does not always win it back.
    yield* Effect.sleep(Duration.millis(Math.round(yield* random.nextRange(5, 25))))
  }
  emit({ type: "done", id: config.id, acquisitions, gaveUp })
})

// GLIDE's core logs to stdout by default, where this worker's events go.
if (config.client === "glide") (await import("@valkey/valkey-glide")).Logger.setLoggerConfig("off")

const nodeOptions = config.nodePorts.map((port) => ({ host: "127.0.0.1", port }))
const NodesLive = config.client === "node-redis"
  ? NodeRedis.layer(nodeOptions)
  : config.client === "glide"
  ? Glide.layer(nodeOptions)
  : Ioredis.layer(nodeOptions)
const RedlockLive = Redlock.layer({
  maxTtl: Duration.millis(config.maxTtlMillis),
  restartQuarantine: config.restartQuarantine
}).pipe(Layer.provide(NodesLive))
// stdout carries the events; the library's log lines (release warnings under faults) go to stderr.
const LogsToStderr = Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedlockLive), Effect.provide(LogsToStderr))).then(
  () => process.exit(0),
  (error) => {
    emit({ type: "error", id: config.id, detail: String(error) })
    process.exit(1)
  }
)
