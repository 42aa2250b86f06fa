/**
 * The Effect 4 line as contenders: the package built in packages/effect4
 * (`npm run bench` builds it first), with the Effect 4 runtime installed
 * there, used as its users write it. Each row has its Effect 3 twin in
 * contenders.ts ("effect-redlock", "effect-redlock, loops as fibers"), so
 * that one run compares the lines on the same servers and Node.
 */
import type * as Lock from "../packages/effect4/src/Lock.js"
import { type Client, type Contender, type Loops, ourNodes, type Setup, type Waiting } from "./contenders.js"
import * as Semaphores from "./semaphores.js"

// The bench runs compiled (.bench-build/bench): the package and its Effect 4 are loaded from the
// repository's packages/effect4 at run time, the Effect 4 runtime as the package's users have it (the
// repository's root has Effect 3).
const root = new URL("../../", import.meta.url)
const load = () =>
  Promise.all([
    import(new URL("packages/effect4/dist/esm/index.js", root).href) as Promise<
      typeof import("../packages/effect4/src/index.js")
    >,
    import(new URL("packages/effect4/dist/esm/RedisNode/Ioredis.js", root).href) as Promise<
      typeof import("../packages/effect4/src/RedisNode/Ioredis.js")
    >,
    import(new URL("packages/effect4/node_modules/effect/dist/index.js", root).href) as Promise<
      typeof import("../packages/effect4/node_modules/effect/dist/index.js")
    >,
    import(new URL("packages/effect4/dist/esm/RedisNode/Persistence.js", root).href) as Promise<
      typeof import("../packages/effect4/src/RedisNode/Persistence.js")
    >,
    import(new URL("packages/effect4/node_modules/@effect/platform-node/dist/NodeRedis.js", root).href) as Promise<
      typeof import("../packages/effect4/node_modules/@effect/platform-node/dist/NodeRedis.js")
    >
  ])

type Loaded = Awaited<ReturnType<typeof load>>

const retryOf = ({ Redlock }: Loaded[0], waiting: Waiting) =>
  waiting === "none"
    ? Redlock.noRetry
    : waiting === "10ms"
    ? Redlock.retry({ delay: "10 millis", times: 1000 })
    : Redlock.defaultRetry

/** Which nodes a row's manager has: ioredis nodes made as the Effect 3 rows' are, or nodes over `NodeRedis.layer`'s `Redis` services. */
type Nodes = "ioredis" | "redis service"

const effect4Client = async (
  loaded: Loaded,
  ports: ReadonlyArray<number>,
  waiting: Waiting,
  slow: boolean,
  setup: Setup,
  over: Nodes = "ioredis"
) => {
  const [
    { Redlock },
    Ioredis,
    { Duration, Effect, Exit, Layer, ManagedRuntime, Redacted, Scope },
    Persistence,
    NodeRedis
  ] = loaded
  const { clients, nodes } = over === "ioredis"
    ? await ourNodes(ports, setup, (password) => Redacted.make(password))
    : { clients: [], nodes: [] }
  // A NodeRedis layer per master, as an Effect 4 program configures its Redis (the setup's clients are the layer's own).
  const nodesLayer = over === "ioredis"
    ? Ioredis.layer(nodes)
    : Persistence.layer(ports.map((port) => NodeRedis.layer({ socket: { host: "127.0.0.1", port } })))
  const runtime = ManagedRuntime.make(
    Redlock.layer({
      retry: retryOf(loaded[0], waiting),
      restartQuarantine: false,
      nodeTimeout: slow ? "2 seconds" : undefined
    }).pipe(
      Layer.provide(nodesLayer)
    )
  )
  const redlock = await runtime.runPromise(Redlock.Redlock)
  const client: Client = {
    lock: (key, ttlMillis) =>
      runtime.runPromise(Effect.gen(function*() {
        const scope = yield* Scope.make()
        const exit = yield* Effect.exit(Scope.provide(redlock.acquire(key, { ttl: Duration.millis(ttlMillis) }), scope))
        if (Exit.isSuccess(exit)) return { lock: exit.value, scope }
        yield* Scope.close(scope, Exit.void)
        return undefined
      })),
    unlock: (handle) =>
      runtime.runPromise(
        Scope.close(
          (handle as {
            lock: Lock.Lock
            scope: import("../packages/effect4/node_modules/effect/dist/Scope.js").Closeable
          }).scope,
          Exit.void
        )
      ),
    close: async () => {
      await runtime.dispose()
      await Promise.all(clients.map((client) => client.quit().catch(() => undefined)))
    }
  }
  return { client, redlock, runtime }
}

/** The Effect 3 row each Effect 4 row is compared with (contenders.ts), by name. */
export const effect3TwinOf = (name: string): string | undefined =>
  name === "effect-redlock (Effect 4)"
    ? "effect-redlock"
    : name === "effect-redlock (Effect 4), loops as fibers"
    ? "effect-redlock, loops as fibers"
    : undefined

/** The row over Effect 4's `Redis` services, and the same row over ioredis nodes it is held against. */
export const overRedisService = {
  name: "effect-redlock (Effect 4) over NodeRedis.layer",
  overIoredis: "effect-redlock (Effect 4)"
} as const

/** The Effect 4 line's rows, their nodes made as the Effect 3 rows' are (contenders.ts `ourNodes`). */
export const contenders = async (): Promise<ReadonlyArray<Contender>> => {
  const loaded = await load()
  const { Duration, Effect } = loaded[2]
  /** Called from promise code: one `runPromise` per lock and one per unlock. */
  const calls: Contender = {
    name: "effect-redlock (Effect 4)",
    start: async (ports, waiting, slow = false, setup = "library") =>
      (await effect4Client(loaded, ports, waiting, slow, setup)).client
  }
  /** Each loop a fiber running `Effect.scoped(acquire)` over and over, all in one `runPromise`. */
  const fibers: Contender = {
    name: "effect-redlock (Effect 4), loops as fibers",
    throughputOnly: true,
    start: async (ports, waiting, slow = false, setup = "library") => {
      const { client, redlock, runtime } = await effect4Client(loaded, ports, waiting, slow, setup)
      const runLoops = ({ loops, nextKey, record, running, ttlMillis }: Loops) => {
        const ttl = Duration.millis(ttlMillis)
        const lockUnlock = Effect.suspend(() => {
          const before = performance.now()
          return Effect.scoped(Effect.matchCause(redlock.acquire(nextKey(), { ttl }), {
            onFailure: () => record(performance.now() - before, false),
            onSuccess: () => record(performance.now() - before, true)
          }))
        })
        const loop = Effect.whileLoop({ while: running, body: () => lockUnlock, step: () => {} })
        return runtime.runPromise(
          Effect.all(Array.from({ length: loops }, () => loop), { concurrency: "unbounded", discard: true })
        )
      }
      return { ...client, runLoops }
    }
  }
  /** As `calls`, over nodes made from `NodeRedis.layer`'s `Redis` services (`RedisNode/Persistence`). */
  const overService: Contender = {
    name: overRedisService.name,
    start: async (ports, waiting, slow = false, setup = "library") =>
      (await effect4Client(loaded, ports, waiting, slow, setup, "redis service")).client
  }
  return [calls, fibers, overService]
}

/**
 * The Effect 4 line's semaphore rows for bench/semaphores.ts (`npm run
 * bench:semaphore:effect4`, on Node 22): each worker's loop one fiber
 * holding each permit with `Semaphore.withPermit`, as an Effect 4 program
 * runs it, in line, on 5 servers and on one; the workload's retry and ttl.
 */
export const semaphoreContenders = async (): Promise<ReadonlyArray<Semaphores.SemaphoreContender>> => {
  const [{ Redlock, Semaphore }, Ioredis, { Duration, Effect, Layer, ManagedRuntime }] = await load()
  const retry = Redlock.retry({ delay: Duration.millis(10 * Semaphores.timeScale), times: 1000 })
  const row = (nodes: 1 | 5): Semaphores.SemaphoreContender => ({
    name: `effect-redlock Semaphore (Effect 4), loops as fibers, N = ${nodes}`,
    nodes,
    start: async (ports, key) => {
      const runtime = ManagedRuntime.make(
        Redlock.layer({ restartQuarantine: false }).pipe(
          Layer.provide(Ioredis.layer(ports.map((port) => ({ host: "127.0.0.1", port }))))
        )
      )
      const options = { limit: Semaphores.limit, ttl: Duration.millis(Semaphores.ttlMillis), retry }
      const withPermit = (hold: () => Promise<void>) =>
        Effect.promise(hold).pipe(
          Semaphore.withPermit(key, options),
          Effect.as(true),
          Effect.orElseSucceed(() => false)
        )
      return {
        withPermit: (hold) => runtime.runPromise(withPermit(hold)),
        loop: (hold, end, asking, gaveUp) =>
          runtime.runPromise(Effect.whileLoop({
            while: () => performance.now() < end,
            body: () =>
              Effect.suspend(() => {
                asking()
                return withPermit(hold)
              }),
            step: (held) => {
              if (!held) gaveUp()
            }
          })),
        close: () => runtime.dispose()
      }
    }
  })
  return [row(5), row(1)]
}
