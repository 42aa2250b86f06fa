/**
 * The lock libraries the benchmark compares, behind one promise-based shape,
 * each used the way its documentation shows. The peers are dev dependencies
 * of the benchmark only.
 */
import { Duration, Effect, Exit, Layer, ManagedRuntime, Redacted, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { Redis } from "ioredis"
import NodeRedlock from "redlock"
import { Redlock as SesameRedlock } from "@sesamecare-oss/redlock"
import { RedlockMutex } from "redis-semaphore"
import { createRedlock, GlideAdapter, IoredisAdapter, NodeRedisAdapter } from "redlock-universal"
import { createClient } from "redis"
import { GlideClient, Logger as GlideLogger } from "@valkey/valkey-glide"
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base"
import * as Redlock from "effect-redlock/Redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import * as NodeRedis from "effect-redlock/RedisNode/NodeRedis"
import * as Glide from "effect-redlock/RedisNode/Glide"
import * as PromiseApi from "effect-redlock/Promise"
import EntryRedlock from "effect-redlock/node-redlock"
import type { Lock } from "effect-redlock/Lock"
import * as Scripts from "@effect-redlock/core/nodes/scripts.js"

/** How a contender waits for a held lock: its defaults, or a 10 ms retry delay where it has the option. */
export type Waiting = "none" | "defaults" | "10ms"

export interface Client {
  /** The lock, or `undefined` when it was not acquired (after the library's own retries). */
  readonly lock: (key: string, ttlMillis: number) => Promise<unknown>
  readonly unlock: (handle: unknown) => Promise<void>
  readonly close: () => Promise<void>
  /**
   * Runs the throughput scenarios' loops in the library's own idiom instead
   * of the harness's async functions calling `lock` and `unlock`.
   */
  readonly runLoops?: (loops: Loops) => Promise<void>
}

/** What the throughput scenarios ask of each loop, and how a loop reports. */
export interface Loops {
  /** How many loops run at once. */
  readonly loops: number
  /** Whether a loop starts another lock (false once the scenario's time is up). */
  readonly running: () => boolean
  readonly ttlMillis: number
  /** A key no other lock of the run uses. */
  readonly nextKey: () => string
  /** One lock call took `millis`; `acquired` is false when the lock was not acquired. */
  readonly record: (millis: number, acquired: boolean) => void
}

/**
 * How a contender's Redis clients are made, as users make them:
 * - `library`: effect-redlock opens its own connections from `{ host, port }`;
 *   the peers, which always take clients, get clients connected as usual;
 * - `connected`: clients the user made and connected, passed as `{ client }`;
 * - `lazyConnect`: clients made with `lazyConnect: true` (frameworks,
 *   serverless handlers), connected before use, passed as `{ client }`;
 * - `aclNoPubsub`: connections as an ACL user without pub/sub rights
 *   (`aclUser`), which effect-redlock opens itself;
 * - `keyPrefix`: ioredis clients with a `keyPrefix` (an application's
 *   namespace on a shared Redis), connected, passed as `{ client }`
 *   (node-redis has no key prefix: its clients are `connected`'s).
 */
export type Setup = "library" | "connected" | "lazyConnect" | "aclNoPubsub" | "keyPrefix"

export const setups: ReadonlyArray<Setup> = ["library", "connected", "lazyConnect", "aclNoPubsub", "keyPrefix"]

/** The ACL user of the `aclNoPubsub` setup, and its rule (every command and key, no pub/sub command). */
export const aclUser = { username: "bench-no-pubsub", password: "bench-secret" } as const
export const aclRule = ["on", `>${aclUser.password}`, "~*", "&*", "+@all", "-@pubsub"] as const

export interface Contender {
  readonly name: string
  /** `slow`: the process runs many times slower (under valgrind): no per-node timeout may fire. */
  readonly start: (ports: ReadonlyArray<number>, waiting: Waiting, slow?: boolean, setup?: Setup) => Promise<Client>
  /** Runs only the throughput scenarios (a), (b) and (d). */
  readonly throughputOnly?: boolean
}

/** The clients a user makes for a setup (`library`: connected as usual). */
const connect = async (ports: ReadonlyArray<number>, setup: Setup = "connected") => {
  const clients = ports.map((port) =>
    new Redis({
      host: "127.0.0.1",
      port,
      maxRetriesPerRequest: 1,
      lazyConnect: setup === "lazyConnect",
      ...(setup === "aclNoPubsub" ? aclUser : {}),
      ...(setup === "keyPrefix" ? { keyPrefix: "app:" } : {})
    })
  )
  if (setup === "lazyConnect") await Promise.all(clients.map((client) => client.connect()))
  return clients
}

/** effect-redlock's nodes for a setup, and the user's clients to quit after the lock manager closed. */
export const ourNodes = async <P>(
  ports: ReadonlyArray<number>,
  setup: Setup,
  // The password as the line's Redacted (the Effect 4 rows pass Effect 4's).
  redact: (password: string) => P = Redacted.make as unknown as (password: string) => P
) => {
  if (setup === "library") return { nodes: ports.map((port) => ({ host: "127.0.0.1", port })), clients: [] }
  if (setup === "aclNoPubsub") {
    const { password, username } = aclUser
    return {
      nodes: ports.map((port) => ({ host: "127.0.0.1", port, username, password: redact(password) })),
      clients: []
    }
  }
  const clients = await connect(ports, setup)
  return { nodes: clients.map((client) => ({ client })), clients }
}

const closeAll = async (clients: ReadonlyArray<Redis>) => {
  await Promise.all(clients.map((client) => client.quit().catch(() => undefined)))
}

/** Which client library the nodes use: ioredis, node-redis (the `redis` package) or Valkey GLIDE. */
export type Driver = "ioredis" | "node-redis" | "glide"

const newNodeRedisClient = (port: number, setup: Setup) =>
  createClient({ socket: { host: "127.0.0.1", port }, ...(setup === "aclNoPubsub" ? aclUser : {}) })

type NodeRedisClient = ReturnType<typeof newNodeRedisClient>

/**
 * The node-redis clients a user makes for a setup. node-redis connects only
 * when told (there is no lazy mode to imitate): `connected` and `lazyConnect`
 * alike are clients made and connected; `aclNoPubsub` logs in as `aclUser`.
 */
const connectNodeRedis = async (
  ports: ReadonlyArray<number>,
  setup: Setup = "connected"
): Promise<Array<NodeRedisClient>> =>
  Promise.all(ports.map(async (port) => {
    const client = newNodeRedisClient(port, setup)
    client.on("error", () => {})
    await client.connect()
    return client
  }))

const closeAllNodeRedis = async (clients: ReadonlyArray<NodeRedisClient>) => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)))
}

/** effect-redlock's nodes over node-redis for a setup (see `ourNodes`), and how to close the user's clients after. */
const ourNodeRedisNodes = async (ports: ReadonlyArray<number>, setup: Setup) => {
  if (setup === "library" || setup === "aclNoPubsub") {
    const { nodes } = await ourNodes(ports, setup)
    return { layer: NodeRedis.layer(nodes as ReadonlyArray<NodeRedis.ConnectionOptions>), close: async () => {} }
  }
  const clients = await connectNodeRedis(ports, setup)
  return { layer: NodeRedis.layer(clients.map((client) => ({ client }))), close: () => closeAllNodeRedis(clients) }
}

// GLIDE's core logs every server error to the console by default: its users set their own level.
GlideLogger.setLoggerConfig("off")

/**
 * The GLIDE clients a user makes for a setup, with GLIDE's defaults (RESP3,
 * a 250 ms request timeout): `lazyConnect` made so and connected by a first
 * command; `aclNoPubsub` logs in as `aclUser`; `keyPrefix` has none (GLIDE
 * has no key prefix).
 */
const connectGlide = (ports: ReadonlyArray<number>, setup: Setup = "connected"): Promise<Array<GlideClient>> =>
  Promise.all(ports.map(async (port) => {
    const client = await GlideClient.createClient({
      addresses: [{ host: "127.0.0.1", port }],
      lazyConnect: setup === "lazyConnect",
      ...(setup === "aclNoPubsub" ? { credentials: aclUser } : {})
    })
    if (setup === "lazyConnect") await client.ping()
    return client
  }))

const closeAllGlide = async (clients: ReadonlyArray<GlideClient>) => {
  for (const client of clients) client.close()
}

/** effect-redlock's nodes over GLIDE for a setup (see `ourNodes`), and how to close the user's clients after. */
const ourGlideNodes = async (ports: ReadonlyArray<number>, setup: Setup) => {
  if (setup === "library" || setup === "aclNoPubsub") {
    const { nodes } = await ourNodes(ports, setup)
    return { layer: Glide.layer(nodes as ReadonlyArray<Glide.ConnectionOptions>), close: async () => {} }
  }
  const clients = await connectGlide(ports, setup)
  return { layer: Glide.layer(clients.map((client) => ({ client }))), close: () => closeAllGlide(clients) }
}

/** effect-redlock's nodes over a driver for a setup, and how to close the user's clients after the lock manager closed. */
const ourNodesLayer = async (ports: ReadonlyArray<number>, setup: Setup, driver: Driver, ioredis = Ioredis) => {
  if (driver === "node-redis") return ourNodeRedisNodes(ports, setup)
  if (driver === "glide") return ourGlideNodes(ports, setup)
  const { clients, nodes } = await ourNodes(ports, setup)
  return { layer: ioredis.layer(nodes), close: () => closeAll(clients) }
}

const attempts = (waiting: Waiting, defaults: number) => waiting === "none" ? 0 : waiting === "10ms" ? 1000 : defaults

/**
 * The floor's algorithm, as any correct client must do it and no more: a
 * 128-bit value from a cryptographic source, SET NX PX to every node at
 * once, held as soon as a majority said OK within the validity (the rest
 * answer meanwhile); otherwise refused once every node answered, and
 * released on every node. `release` on every node at once. No retry policy of its own beyond a 10 ms jittered loop when waiting.
 */
/** What the floor's algorithm sends to one node: SET NX PX, and a compare-and-delete. */
interface FloorNode {
  readonly set: (key: string, value: string, ttlMillis: number) => Promise<unknown>
  readonly release: (key: string, value: string) => Promise<unknown>
}

const minimalRedlock = (clients: ReadonlyArray<FloorNode>, waiting: Waiting, close: () => Promise<void>): Client => {
  const quorum = Math.floor(clients.length / 2) + 1
  const releaseAll = (key: string, value: string) =>
    Promise.all(clients.map((client) => client.release(key, value).catch(() => 0)))
  const once = (key: string, ttlMillis: number) =>
    new Promise<{ key: string; value: string } | undefined>((resolve) => {
      const value = randomBytes(16).toString("base64url")
      const start = performance.now()
      let yes = 0
      let no = 0
      let held = false
      const answer = (reply: unknown) => {
        if (reply === "OK") yes++
        else no++
        if (!held && yes === quorum) {
          const validity = ttlMillis - (performance.now() - start) - (Math.ceil(ttlMillis * 0.01) + 2)
          held = validity > 0
          if (held) resolve({ key, value })
        }
        // Refused: undone once every node answered, so that none sets the key after its release.
        if (!held && yes + no === clients.length) resolve(releaseAll(key, value).then(() => undefined))
      }
      for (const client of clients) client.set(key, value, ttlMillis).then(answer, () => answer(null))
    })
  return {
    lock: async (key, ttlMillis) => {
      for (let attempt = 0; attempt <= attempts(waiting, 3); attempt++) {
        const held = await once(key, ttlMillis)
        if (held !== undefined) return held
        await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 10))
      }
      return undefined
    },
    unlock: async (handle) => {
      const { key, value } = handle as { key: string; value: string }
      await releaseAll(key, value)
    },
    close
  }
}

/** The floor's algorithm over ioredis clients, released by `release`. */
const overIoredis = (
  clients: ReadonlyArray<Redis>,
  release: (client: Redis, key: string, value: string) => Promise<unknown>
) =>
  clients.map((client): FloorNode => ({
    set: (key, value, ttlMillis) => client.set(key, value, "PX", ttlMillis, "NX"),
    release: (key, value) => release(client, key, value)
  }))

/** The floor: a minimal correct Redlock on plain ioredis, released by compare-and-delete (EVALSHA). */
const releaseScript =
  `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`

export const floor: Contender = {
  name: "floor (minimal ioredis)",
  start: async (ports, waiting, _slow, setup) => {
    const clients = await connect(ports, setup)
    const sha = await clients[0].script("LOAD", releaseScript) as string
    await Promise.all(clients.slice(1).map((client) => client.script("LOAD", releaseScript)))
    return minimalRedlock(
      overIoredis(clients, (client, key, value) => client.evalsha(sha, 1, key, value)),
      waiting,
      () => closeAll(clients)
    )
  }
}

/**
 * GLIDE's own floor: the floor's algorithm over the user's GLIDE clients
 * (SET NX PX, compare-and-delete by EVALSHA), what any lock over GLIDE costs.
 */
export const floorGlide: Contender = {
  name: "floor over GLIDE (minimal)",
  start: async (ports, waiting, _slow, setup) => {
    const clients = await connectGlide(ports, setup)
    const sha = String(await clients[0].customCommand(["SCRIPT", "LOAD", releaseScript]))
    await Promise.all(clients.slice(1).map((client) => client.customCommand(["SCRIPT", "LOAD", releaseScript])))
    const nodes = clients.map((client): FloorNode => ({
      set: (key, value, ttlMillis) => client.customCommand(["SET", key, value, "PX", String(ttlMillis), "NX"]),
      release: (key, value) => client.customCommand(["EVALSHA", sha, "1", key, value])
    }))
    return minimalRedlock(nodes, waiting, () => closeAllGlide(clients))
  }
}

/**
 * Not a contender of the tables: the floor's algorithm sending effect-redlock's
 * own commands (SET NX PX, and the release script, which takes the lock key
 * and the value as the floor's does), with no library around them. What it costs beyond the floor is the
 * wire's (ioredis encoding more arguments, the server running the longer
 * script); what the library costs beyond it is the library's.
 */
export const ourWire: Contender = {
  name: "effect-redlock's commands on bare ioredis",
  start: async (ports, waiting, _slow, setup) => {
    const clients = await connect(ports, setup)
    await Promise.all(clients.map((client) => client.script("LOAD", Scripts.releaseOwned.lua)))
    return minimalRedlock(
      overIoredis(clients, (client, key, value) => client.evalsha(Scripts.releaseOwned.sha, 1, key, value)),
      waiting,
      () => closeAll(clients)
    )
  }
}

/**
 * An in-memory span exporter that keeps a count, not the spans: the cost of
 * tracing as a user's OpenTelemetry set-up pays it (spans made, ended, batched
 * and handed to an exporter), without a collector's network traffic.
 */
export class CountingSpanExporter implements SpanExporter {
  exported = 0
  export(spans: Array<ReadableSpan>, done: (result: { code: 0 }) => void) {
    this.exported += spans.length
    done({ code: 0 })
  }
  shutdown() {
    return Promise.resolve()
  }
}

/** The traced rows' OpenTelemetry set-up, as a traced service runs: spans batched and handed to an exporter. */
const tracing = () =>
  NodeSdk.layer(() => ({
    resource: { serviceName: "effect-redlock-bench" },
    spanProcessor: new BatchSpanProcessor(new CountingSpanExporter())
  }))

/**
 * The Effect 3 line's modules a row drives: the working tree's sources
 * (compiled with the bench), or a build's packed package (builds.ts, for
 * `--against`).
 */
export interface EffectLine {
  readonly Redlock: typeof Redlock
  readonly Ioredis: typeof Ioredis
}

const sources: EffectLine = { Redlock, Ioredis }

/** Our retry for each waiting of the scenarios: none, the default, or a 10 ms delay. */
const ourRetry = (waiting: Waiting, { Redlock }: EffectLine = sources) =>
  waiting === "none"
    ? Redlock.noRetry
    : waiting === "10ms"
    ? Redlock.retry({ delay: "10 millis", times: 1000 })
    : Redlock.defaultRetry

const effectClient = async (
  ports: ReadonlyArray<number>,
  waiting: Waiting,
  slow: boolean,
  setup: Setup,
  traced = false,
  driver: Driver = "ioredis",
  line: EffectLine = sources
) => {
  const { Redlock } = line
  const retry = ourRetry(waiting, line)
  const nodes = await ourNodesLayer(ports, setup, driver, line.Ioredis)
  const runtime = ManagedRuntime.make(
    Redlock.layer({ retry, restartQuarantine: false, nodeTimeout: slow ? "2 seconds" : undefined }).pipe(
      Layer.provide(nodes.layer),
      Layer.merge(
        traced ? tracing() : Layer.empty
      )
    )
  )
  const redlock = await runtime.runPromise(Redlock.Redlock)
  const client: Client = {
    lock: (key, ttlMillis) =>
      runtime.runPromise(Effect.gen(function*() {
        const scope = yield* Scope.make()
        const exit = yield* Effect.exit(Scope.extend(redlock.acquire(key, { ttl: Duration.millis(ttlMillis) }), scope))
        if (Exit.isSuccess(exit)) return { lock: exit.value, scope }
        yield* Scope.close(scope, Exit.void)
        return undefined
      })),
    unlock: (handle) =>
      runtime.runPromise(Scope.close((handle as { lock: Lock; scope: Scope.CloseableScope }).scope, Exit.void)),
    close: async () => {
      await runtime.dispose()
      await nodes.close()
    }
  }
  return { client, redlock, runtime }
}

/** effect-redlock called from promise code: one `runPromise` per lock and one per unlock. */
export const runPromiseRow = (name: string, line: EffectLine = sources): Contender => ({
  name,
  start: async (ports, waiting, slow = false, setup = "library") =>
    (await effectClient(ports, waiting, slow, setup, false, "ioredis", line)).client
})

export const effectRedlock = runPromiseRow("effect-redlock")

/** effect-redlock over node-redis nodes (`RedisNode/NodeRedis`), called from promise code as the row above. */
export const effectRedlockNodeRedis: Contender = {
  name: "effect-redlock over node-redis",
  start: async (ports, waiting, slow = false, setup = "library") =>
    (await effectClient(ports, waiting, slow, setup, false, "node-redis")).client
}

/** The promise API's retry for each waiting (its defaults: none given). */
const promiseRetry = (api: typeof PromiseApi, waiting: Waiting) =>
  waiting === "none"
    ? api.noRetry ?? api.retry({ delay: 1, times: 0 })
    : waiting === "10ms"
    ? api.retry({ delay: 10, times: 1000 })
    : undefined

/**
 * effect-redlock's promise facade (effect-redlock/Promise), as promise code and node-redlock users meet it;
 * `fairHandoff: false`: greedy, as the peers wait (the releaser usually wins again). Over ioredis its nodes
 * are given as promise code gives them (a list of options or `{ client }`); over node-redis, as the driver's layer.
 */
export const promiseRow = (
  name: string,
  driver: Driver,
  fairHandoff = true,
  api: typeof PromiseApi = PromiseApi
): Contender => ({
  name,
  start: async (ports, waiting, slow = false, setup = "library") => {
    const retry = promiseRetry(api, waiting)
    const nodes = driver === "ioredis"
      ? await ourNodes(ports, setup).then(({ clients, nodes }) => ({ layer: nodes, close: () => closeAll(clients) }))
      : await ourNodesLayer(ports, setup, driver)
    const redlock = await api.makeRedlock(nodes.layer as never, {
      ...(retry === undefined ? {} : { retry }),
      restartQuarantine: false,
      nodeTimeout: slow ? 2000 : undefined,
      fairHandoff
    })
    return {
      lock: (key, ttlMillis) => redlock.acquire(key, { ttl: ttlMillis }).catch(() => undefined),
      unlock: async (handle) => {
        await redlock.release(handle as PromiseApi.PromiseLock)
      },
      close: async () => {
        await redlock.close()
        await nodes.close()
      }
    }
  }
})

export const effectRedlockPromise = promiseRow("effect-redlock/Promise", "ioredis")

/** The promise facade over node-redis nodes: promise code that uses the `redis` package. */
export const effectRedlockPromiseNodeRedis = promiseRow("effect-redlock/Promise over node-redis", "node-redis")

/** The promise facade over GLIDE nodes: promise code that uses Valkey GLIDE. */
export const effectRedlockPromiseGlide = promiseRow("effect-redlock/Promise over GLIDE", "glide")

/**
 * The facade without lines (`fairHandoff: false`): greedy, as the peers wait, to tell what FIFO hand-over
 * costs in the contended scenarios from what the engine costs.
 */
export const effectRedlockPromiseGreedy = promiseRow("effect-redlock/Promise, fairHandoff: false", "ioredis", false)

/** The row above over node-redis. */
export const effectRedlockPromiseNodeRedisGreedy = promiseRow(
  "effect-redlock/Promise over node-redis, fairHandoff: false",
  "node-redis",
  false
)

/**
 * effect-redlock in an Effect program, as its users write one: each loop is
 * a fiber running `Effect.scoped(acquire)` over and over, all in one
 * `runPromise`. Throughput scenarios only (the contention scenarios' workers
 * are the harness's promise loops, the same as the row above).
 */
export const fibers = (name: string, traced: boolean, line: EffectLine = sources): Contender => ({
  name,
  throughputOnly: true,
  start: async (ports, waiting, slow = false, setup = "library") => {
    const { client, redlock, runtime } = await effectClient(ports, waiting, slow, setup, traced, "ioredis", line)
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
})

export const effectRedlockFibers = fibers("effect-redlock, loops as fibers", false)

/**
 * The same with tracing on: `@effect/opentelemetry`'s NodeSdk with a batch
 * span processor and an in-memory exporter, as a traced service runs.
 */
export const effectRedlockFibersTraced = fibers("effect-redlock, loops as fibers, traced", true)

const nodeRedlockLike = (
  name: string,
  make: (clients: Array<Redis>, settings: object) => {
    acquire: (resources: Array<string>, duration: number) => Promise<{ release: () => Promise<unknown> }>
  }
): Contender => ({
  name,
  start: async (ports, waiting, _slow, setup) => {
    const clients = await connect(ports, setup)
    const settings = waiting === "none"
      ? { retryCount: 0 }
      : waiting === "10ms"
      ? { retryCount: 1000, retryDelay: 10, retryJitter: 5 }
      : {}
    const redlock = make(clients, settings)
    return {
      lock: (key, ttlMillis) => redlock.acquire([key], ttlMillis).catch(() => undefined),
      unlock: async (handle) => {
        await (handle as { release: () => Promise<unknown> }).release().catch(() => undefined)
      },
      close: () => closeAll(clients)
    }
  }
})

export const nodeRedlock = nodeRedlockLike(
  "node-redlock 5.0.0-beta.2",
  (clients, settings) => new NodeRedlock(clients, settings) as never
)

/** node-redlock's API on this library's engine (effect-redlock/node-redlock), as a node-redlock user moves to it. */
export const effectRedlockNodeRedlock = nodeRedlockLike(
  "effect-redlock/node-redlock",
  (clients, settings) => new EntryRedlock(clients, settings) as never
)

export const sesameRedlock = nodeRedlockLike(
  "@sesamecare-oss/redlock 1.4",
  (clients, settings) => new SesameRedlock(clients, settings) as never
)

export const redisSemaphore: Contender = {
  name: "redis-semaphore 5.8 (RedlockMutex)",
  start: async (ports, waiting, _slow, setup) => {
    const clients = await connect(ports, setup)
    return {
      lock: async (key, ttlMillis) => {
        const mutex = new RedlockMutex(clients, key, {
          lockTimeout: ttlMillis,
          refreshInterval: 0,
          ...(waiting === "none" ? { acquireAttemptsLimit: 1 } : waiting === "10ms" ? { retryInterval: 10 } : {})
        })
        return (await mutex.tryAcquire().catch(() => false)) ? mutex : undefined
      },
      unlock: async (handle) => {
        await (handle as InstanceType<typeof RedlockMutex>).release().catch(() => undefined)
      },
      close: () => closeAll(clients)
    }
  }
}

const redlockUniversalOver = (name: string, driver: Driver): Contender => ({
  name,
  start: async (ports, waiting, _slow, setup) => {
    let adapters: Array<IoredisAdapter | NodeRedisAdapter | GlideAdapter>
    let close: () => Promise<void>
    if (driver === "glide") {
      const clients = await connectGlide(ports, setup)
      adapters = clients.map((client) => new GlideAdapter(client as never))
      close = () => closeAllGlide(clients)
    } else if (driver === "node-redis") {
      const clients = await connectNodeRedis(ports, setup)
      adapters = clients.map((client) => new NodeRedisAdapter(client as never))
      close = () => closeAllNodeRedis(clients)
    } else {
      const clients = await connect(ports, setup)
      adapters = clients.map((client) => new IoredisAdapter(client))
      close = () => closeAll(clients)
    }
    return {
      lock: async (key, ttlMillis) => {
        const lock = createRedlock({
          adapters,
          key,
          ttl: ttlMillis,
          ...(waiting === "none"
            ? { retryAttempts: 0 }
            : waiting === "10ms"
            ? { retryAttempts: 1000, retryDelay: 10 }
            : {})
        })
        const handle = await lock.acquire().catch(() => undefined)
        return handle === undefined ? undefined : { lock, handle }
      },
      unlock: async (held) => {
        const { handle, lock } = held as {
          lock: ReturnType<typeof createRedlock>
          handle: Parameters<ReturnType<typeof createRedlock>["release"]>[0]
        }
        await lock.release(handle).catch(() => undefined)
      },
      close
    }
  }
})

export const redlockUniversal = redlockUniversalOver("redlock-universal 0.8", "ioredis")

export const redlockUniversalNodeRedis = redlockUniversalOver("redlock-universal 0.8 over node-redis", "node-redis")

export const redlockUniversalGlide = redlockUniversalOver("redlock-universal 0.8 over GLIDE", "glide")

/**
 * The floor held as Effect code holds a lock: each loop a fiber running
 * `Effect.scoped` over the floor's lock, its unlock added to the scope in
 * the same uninterruptible step. Not a peer: it is what any lock costs an
 * Effect program before the lock does anything of its own (a fiber step per
 * operation, the scope, its finalizer), the floor of the row "loops as
 * fibers". Traced, it makes the spans a traced lock+unlock of ours makes
 * (`Redlock.acquire` with an attempt's child span, `Redlock.release`, with
 * their attributes) under the traced row's OpenTelemetry set-up: what tracing
 * costs any lock of an Effect program.
 */
const floorAsEffectRow = (name: string, traced: boolean): Contender => ({
  name,
  throughputOnly: true,
  start: async (ports, waiting, slow, setup) => {
    const client = await floor.start(ports, waiting, slow, setup)
    const runtime = traced ? ManagedRuntime.make(tracing()) : undefined
    const span = <A, E, R>(effect: Effect.Effect<A, E, R>, spanName: string, attributes: Record<string, unknown>) =>
      Effect.withSpan(Effect.tap(effect, () => Effect.annotateCurrentSpan(attributes)), spanName, {
        captureStackTrace: false
      })
    const locked = (key: string, ttlMillis: number) => {
      const lock = Effect.promise(() => client.lock(key, ttlMillis))
      if (!traced) return lock
      const attempt = Effect.withSpan(Effect.annotateCurrentSpan("redlock.attempt", 1), "Redlock.attempt", {
        captureStackTrace: false
      })
      return span(Effect.tap(lock, () => attempt), "Redlock.acquire", {
        "redlock.resources": [key],
        "redlock.attempts": 1
      })
    }
    const unlocked = (handle: unknown) => {
      const unlock = Effect.promise(() => client.unlock(handle))
      return traced ? span(unlock, "Redlock.release", { "redlock.status": "Released" }) : unlock
    }
    const runLoops = ({ loops, nextKey, record, running, ttlMillis }: Loops) => {
      // Not `Effect.acquireRelease`: its finalizer diffs the fiber's
      // FiberRefs, which costs more than the rest of the scope (~7 µs).
      const held = (key: string) =>
        Effect.flatMap(
          Effect.scope,
          (scope) =>
            Effect.uninterruptible(Effect.flatMap(locked(key, ttlMillis), (handle) =>
              handle === undefined
                ? Effect.fail("not acquired" as const)
                : Effect.as(Scope.addFinalizer(scope, unlocked(handle)), handle)))
        )
      const lockUnlock = Effect.suspend(() => {
        const before = performance.now()
        return Effect.scoped(Effect.matchCause(held(nextKey()), {
          onFailure: () => record(performance.now() - before, false),
          onSuccess: () => record(performance.now() - before, true)
        }))
      })
      const loop = Effect.whileLoop({ while: running, body: () => lockUnlock, step: () => {} })
      const all = Effect.all(Array.from({ length: loops }, () => loop), { concurrency: "unbounded", discard: true })
      return runtime === undefined ? Effect.runPromise(all) : runtime.runPromise(all)
    }
    return {
      ...client,
      runLoops,
      close: async () => {
        await runtime?.dispose()
        await client.close()
      }
    }
  }
})

export const floorAsEffect = floorAsEffectRow("floor as an Effect resource, loops as fibers", false)
export const floorAsEffectTraced = floorAsEffectRow("floor as an Effect resource, loops as fibers, traced", true)

/** The other libraries, over ioredis. */
export const peers: ReadonlyArray<Contender> = [nodeRedlock, sesameRedlock, redisSemaphore, redlockUniversal]

export const all: ReadonlyArray<Contender> = [
  floor,
  floorAsEffect,
  floorAsEffectTraced,
  effectRedlock,
  effectRedlockPromise,
  effectRedlockPromiseGreedy,
  effectRedlockNodeRedlock,
  effectRedlockFibers,
  effectRedlockFibersTraced,
  nodeRedlock,
  sesameRedlock,
  redisSemaphore,
  redlockUniversal,
  effectRedlockNodeRedis,
  effectRedlockPromiseNodeRedis,
  effectRedlockPromiseNodeRedisGreedy,
  redlockUniversalNodeRedis,
  floorGlide,
  effectRedlockPromiseGlide,
  redlockUniversalGlide
]

/**
 * A row over another client library, and what it is held against: the same
 * library's row over ioredis, and the best peer over the same client library.
 */
export const driverTwins: ReadonlyMap<
  string,
  { readonly overIoredis: string; readonly peer: string; readonly floor?: string }
> = new Map([
  [effectRedlockNodeRedis.name, { overIoredis: effectRedlock.name, peer: redlockUniversalNodeRedis.name }],
  [effectRedlockPromiseNodeRedis.name, {
    overIoredis: effectRedlockPromise.name,
    peer: redlockUniversalNodeRedis.name
  }],
  [effectRedlockPromiseGlide.name, {
    overIoredis: effectRedlockPromise.name,
    peer: redlockUniversalGlide.name,
    floor: floorGlide.name
  }]
])

/** Contenders measured only by name (`bench:instructions`, `bench/profile.ts`), never in the tables. */
export const diagnostic: ReadonlyArray<Contender> = [ourWire]

export const byName = (name: string): Contender | undefined =>
  [...all, ...diagnostic].find((contender) => contender.name === name) ??
    [...all, ...diagnostic].find((contender) => contender.name.includes(name))
