/**
 * Redis nodes over ioredis: one connection per node.
 *
 * Connections fail fast: no offline queue, no resending of unanswered
 * commands after a reconnect, so a down node answers at once with an
 * `Unavailable` error instead of holding acquire up. Reconnection goes on in
 * the background.
 *
 * `ioredis` is an optional peer dependency, needed only by this module.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { Redis } from "ioredis"
import type * as Tls from "node:tls"
import * as IoredisCommands from "../internal/ioredis/commands.js"
import * as LoadedScripts from "../internal/ioredis/loadedScripts.js"
import * as Scripts from "../nodes/scripts.js"
import * as ReleaseSubscriber from "../internal/ioredis/releaseSubscriber.js"
import type { ReleaseChannels } from "../internal/releaseChannels.js"
import * as ServerRun from "../internal/ioredis/serverRun.js"
import * as Validate from "../internal/validate.js"
import {
  fromPromises,
  type NodePromises,
  type NodeRun,
  type RedisNode,
  RedisNodeError,
  RedisNodes,
  type TurnAnswer
} from "../RedisNode.js"
import { InvalidOptions } from "../RedlockError.js"

/**
 * Where a node is and how to log in. The password is `Redacted` so that it
 * never shows in logs or errors.
 *
 * @since 0.1.0
 * @category models
 */
export interface ConnectionOptions {
  /** `redis://[user:password@]host[:port][/db]` or `rediss://...`; the other fields override its parts. */
  readonly url?: string | undefined
  readonly host?: string | undefined
  readonly port?: number | undefined
  readonly username?: string | undefined
  readonly password?: Redacted.Redacted<string> | undefined
  readonly db?: number | undefined
  /** `true` for TLS with Node's defaults, or Node's TLS options. */
  readonly tls?: boolean | Tls.ConnectionOptions | undefined
  /**
   * How long the layer waits for the first connection (and the server's
   * `INFO server`, for the restart quarantine) before going on without it.
   * Default 1 second.
   */
  readonly connectTimeout?: Duration.DurationInput | undefined
  /** Name in outcomes and errors. Default `host:port`. */
  readonly name?: string | undefined
  /** See {@link defaultMaxPendingCommands}. */
  readonly maxPendingCommands?: number | undefined
  /**
   * Declare the server durable (an append-only file with `appendfsync
   * always`: it keeps every key it acknowledged across a restart), for a
   * server that does not let this client read its configuration (ACLs that
   * refuse `CONFIG GET`). Otherwise not needed: the client reads it from the
   * server on each connection. A server that reports weaker persistence is
   * not believed durable, declared or not. A durable server votes at once
   * after a restart (see `restartQuarantine` in `Redlock.Options`). Default `false`.
   */
  readonly durable?: boolean | undefined
}

/**
 * How many commands of a node may wait for their answer at once, by default.
 * A server that stops answering (paused, overloaded, cut off without a reset)
 * keeps its connection open, and every command sent to it would wait, with
 * its promise and the fan-out that waits for it, for as long as the server is
 * away. Past this many, a new command fails at once as `Unavailable` without
 * being sent: a hung node costs bounded memory, and no time. The other nodes
 * serve quorums meanwhile. Far above what a node has in flight when it
 * answers (one command per lock operation in progress).
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultMaxPendingCommands = 1000

/**
 * A client the user owns: we use it as it is and never close it. Prefer
 * {@link ConnectionOptions}: a client with an offline queue makes a down node
 * cost the full per-node timeout instead of failing fast.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClientOptions {
  readonly client: Redis
  readonly name?: string | undefined
  /** See {@link defaultMaxPendingCommands}. */
  readonly maxPendingCommands?: number | undefined
  /** See {@link ConnectionOptions.durable}. */
  readonly durable?: boolean | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export type NodeOptions = ConnectionOptions | ClientOptions

/**
 * Connection options from a `redis://` or `rediss://` URL
 * (`redis://user:password@host:port/db`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromUrl = (url: string): Option.Option<ConnectionOptions> => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return Option.none()
  }
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") return Option.none()
  const db = parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : undefined
  if (db !== undefined && !Number.isInteger(db)) return Option.none()
  return Option.some({
    host: parsed.hostname || "127.0.0.1",
    port: parsed.port ? Number(parsed.port) : 6379,
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? Redacted.make(decodeURIComponent(parsed.password)) : undefined,
    db,
    tls: parsed.protocol === "rediss:"
  })
}

/** A URL as it may be shown: any user and password replaced. */
const hidePassword = (url: string) => url.replace(/\/\/[^@/]*@/, "//***@")

const withoutUndefined = <A extends object>(a: A): Partial<A> =>
  Object.fromEntries(Object.entries(a).filter(([, value]) => value !== undefined)) as Partial<A>

const granted: TurnAnswer = { _tag: "Granted" }
const notYourTurn: TurnAnswer = { _tag: "NotYourTurn" }

/** The reply of the acquireInTurn script (see scripts.ts). */
const turnAnswer = (reply: unknown): TurnAnswer => {
  const [code, pttl] = reply as [number, number | undefined]
  if (code === 1) return granted
  if (code === 3) return notYourTurn
  return { _tag: "Held", ttlMillis: pttl === undefined || pttl < 0 ? undefined : pttl }
}

/** Commands of one node sent and not answered yet. */
interface InFlight {
  count: number
}

/**
 * Until no command of the node waits for its answer, twice in a row a turn
 * apart (an answer may send another command: a late grant's undo), at most
 * `withinMillis`. The node's connection closes after: a key set by an
 * attempt that was refused without waiting for this node is deleted before
 * the process exits (a command line run would otherwise leave it for its ttl).
 */
const settled = (inFlight: InFlight, withinMillis: number) =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      const giveUpAt = performance.now() + withinMillis
      let idleBefore = false
      const check = () => {
        const idle = inFlight.count === 0
        if ((idle && idleBefore) || performance.now() >= giveUpAt) return resolve()
        idleBefore = idle
        setTimeout(check, idle ? 0 : 2)
      }
      check()
    })
  )

/** The node operations over one client: promises, and the Effects over them. */
const makeNode = (
  name: string,
  client: Redis,
  lastConnectionError: () => Error | undefined,
  serverRun: () => NodeRun,
  scripts: LoadedScripts.LoadedScripts,
  maxPendingCommands: number,
  releases: ReleaseChannels,
  inFlight: InFlight
): RedisNode => {
  const batch = IoredisCommands.writeBatcher(client)
  const answered = <A>(reply: A): A => {
    inFlight.count--
    return reply
  }
  const failed = (cause: unknown) => {
    // The command did not run; it is not sent again (see loadedScripts.ts).
    if (IoredisCommands.isNoScript(cause)) scripts.reload()
    return Promise.reject(IoredisCommands.toNodeError(name, cause, lastConnectionError()))
  }
  const unanswered = (cause: unknown) => {
    inFlight.count--
    return failed(cause)
  }
  // One command and its reply, in one promise step: every failure becomes a
  // RedisNodeError (also a synchronous throw of the driver). Not sent while
  // too many commands wait for an answer (see defaultMaxPendingCommands).
  const call = <R, A>(send: () => Promise<R>, parse: (reply: R) => A): Promise<A> => {
    if (inFlight.count >= maxPendingCommands) {
      return Promise.reject(
        new RedisNodeError({
          node: name,
          reason: "Unavailable",
          detail: `${inFlight.count} commands wait for an answer: the server does not answer (paused, overloaded or cut off)`
        }, true)
      )
    }
    try {
      batch()
      const sent = send()
      inFlight.count++
      return sent.then((reply) => parse(answered(reply)), unanswered)
    } catch (cause) {
      return failed(cause)
    }
  }
  const encoded = IoredisCommands.encodedEvalsha.usable(client)
  const evalScript = <A>(
    script: Scripts.Script,
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string | number>,
    parse: (reply: unknown) => A
  ): Promise<A> =>
    call(
      !scripts.bySha()
        ? () => client.eval(script.lua, keys.length, ...keys, ...args)
        : encoded
        ? () => client.sendCommand(IoredisCommands.encodedEvalsha.command(script, keys, args)) as Promise<unknown>
        : () => client.evalsha(script.sha, keys.length, ...keys, ...args),
      parse
    )

  const acquireAll = (keys: ReadonlyArray<string>, value: string, ttlMillis: number) =>
    evalScript(Scripts.acquireAll, keys, [value, ttlMillis], (reply) => reply === 1)
  const promises: NodePromises = {
    // One key: a native SET NX PX (about half a script's server time), and
    // the script only when the key exists: it may hold our own value (a late
    // answer of an earlier attempt, which is ours) or another type (WRONGTYPE
    // named by the script). Whole milliseconds, as the scripts round.
    acquire: (keys, value, ttlMillis) =>
      keys.length !== 1
        ? acquireAll(keys, value, ttlMillis)
        : call(() => client.set(keys[0], value, "PX", Math.ceil(ttlMillis), "NX"), (reply) => reply === "OK").then(
          (set) => set || acquireAll(keys, value, ttlMillis)
        ),
    acquireInTurn: (keys, value, ttlMillis, turn) =>
      evalScript(Scripts.acquireInTurn, keys, [value, ttlMillis, turn.ticket, turn.leaseMillis], turnAnswer),
    // A lock's release (announced, its place left) sends the value alone: the script's defaults.
    release: (keys, value, announce, keepPlace) =>
      evalScript(
        Scripts.releaseOwned,
        keys,
        announce && !keepPlace ? [value] : [value, announce ? 1 : 0, keepPlace ? 1 : 0],
        Number
      ),
    extend: (keys, value, ttlMillis) =>
      evalScript(Scripts.extendOwned, keys, [value, ttlMillis], (reply) => reply === 1),
    incrementFences: (keys, value, fenceKeys) =>
      evalScript(Scripts.incrementFences, [...keys, ...fenceKeys], [value], (reply) =>
        Array.isArray(reply) ? reply.map((count) => BigInt(String(count))) : undefined
      ),
    commitFences: (keys, value, fenceKeys, tokens) =>
      evalScript(Scripts.commitFences, [...keys, ...fenceKeys], [value, ...tokens.map(String)], (reply) => reply === 1),
    inspect: (key) =>
      evalScript(Scripts.inspectKey, [key], [], (reply) => {
        const [pttl, value] = reply as [number, string | undefined]
        return { value: value ?? undefined, ttlMillis: pttl >= 0 ? pttl : undefined }
      })
  }
  return fromPromises({
    name,
    run: serverRun,
    promises,
    watchReleasesNow: releases.watch,
    hearsReleases: releases.hears
  })
}

/** Keeps the last connection error, so "not connected" can say why (refused, WRONGPASS ...). */
const watchErrors = (client: Redis) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      let last: Error | undefined
      const onError = (error: Error) => void (last = error)
      const onReady = () => void (last = undefined)
      client.on("error", onError)
      client.on("ready", onReady)
      return { last: () => last, stop: () => void client.off("error", onError).off("ready", onReady) }
    }),
    (watcher) => Effect.sync(watcher.stop)
  )

interface NodeSettings {
  readonly maxPending: number
  readonly durable: boolean
}

const nodeSettings = (options: NodeOptions): Effect.Effect<NodeSettings, InvalidOptions> =>
  Effect.gen(function*() {
    const maxPending = yield* Validate.positiveCount(
      "maxPendingCommands",
      options.maxPendingCommands ?? defaultMaxPendingCommands
    )
    const durable = yield* Validate.flag("durable", options.durable ?? false)
    return { maxPending, durable }
  })

/**
 * Follow the client's connection errors and server run, and wait until the
 * client is ready and its server identified, at most `timeout`: a node that is
 * down now is not an error.
 */
const watch = (name: string, client: Redis, timeout: Duration.Duration, settings: NodeSettings) =>
  Effect.gen(function*() {
    const { durable, maxPending } = settings
    const errors = yield* watchErrors(client)
    // First: on each new connection the scripts are loaded before anything else is sent.
    const scripts = yield* LoadedScripts.watch(client, Scripts.nodeScripts)
    const run = yield* ServerRun.watch(client, durable)
    const releases = yield* ReleaseSubscriber.make(client)
    // A server that refuses the connection (down, a wrong port or password)
    // is not waited for either: the node joins when the server answers.
    const refused = Effect.async<void>((resume) => {
      const onError = () => resume(Effect.void)
      client.once("error", onError)
      return Effect.sync(() => void client.off("error", onError))
    })
    yield* Effect.raceFirst(Effect.zipRight(run.identified, Effect.promise(scripts.settled)), refused).pipe(
      Effect.timeoutTo({ duration: timeout, onTimeout: () => void 0, onSuccess: () => void 0 })
    )
    const inFlight: InFlight = { count: 0 }
    // Runs before the connection closes (finalizers run last in, first out).
    yield* Effect.addFinalizer(() => settled(inFlight, 250))
    return makeNode(name, client, errors.last, run.current, scripts, maxPending, releases, inFlight)
  })

/**
 * Close a client we own: QUIT politely, bounded in time, then drop the socket.
 * Finalizers run uninterruptibly, and a timeout can only give up on what is
 * interruptible: without it, a hung server would hold the shutdown up.
 */
const close = (client: Redis) =>
  Effect.suspend(() => {
    // The node's own error listener is gone by now: a reconnection still under
    // way may fail as it is dropped, and ioredis prints an error nobody listens to.
    client.on("error", () => {})
    return client.status === "ready"
      ? Effect.interruptible(Effect.tryPromise(() => client.quit())).pipe(Effect.timeout("1 second"), Effect.ignore)
      : Effect.void
  }).pipe(Effect.ensuring(Effect.sync(() => client.disconnect())))

/**
 * One node. The connection is opened now and closed when the scope closes
 * (unless it is a client the user owns).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (nodeOptions: NodeOptions): Effect.Effect<RedisNode, InvalidOptions, Scope.Scope> =>
  Effect.gen(function*() {
    // Checked before the connection is opened.
    const settings = yield* nodeSettings(nodeOptions)
    if ("client" in nodeOptions) {
      const client = nodeOptions.client
      // A client made with `lazyConnect` and not connected yet would connect
      // on its first command, after the node waited for it in vain: it
      // connects now, as it would for any user's first command.
      if (client.status === "wait") client.connect().catch(() => {})
      const name = nodeOptions.name ?? `${client.options.host ?? "127.0.0.1"}:${client.options.port ?? 6379}`
      return yield* watch(name, client, Duration.seconds(1), settings)
    }
    let options: ConnectionOptions = nodeOptions
    if (nodeOptions.url !== undefined) {
      const parsed = fromUrl(nodeOptions.url)
      if (Option.isNone(parsed)) {
        return yield* new InvalidOptions({ option: "url", detail: `not a redis:// URL: "${hidePassword(nodeOptions.url)}"` }, true)
      }
      options = { ...parsed.value, ...withoutUndefined(nodeOptions) }
    }
    const host = options.host ?? "127.0.0.1"
    const port = options.port ?? 6379
    const connectTimeout = Duration.decode(options.connectTimeout ?? "1 second")
    const client = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new Redis({
          host,
          port,
          username: options.username,
          password: options.password === undefined ? undefined : Redacted.value(options.password),
          db: options.db ?? 0,
          tls: options.tls === true ? {} : options.tls === false ? undefined : options.tls,
          connectTimeout: Duration.toMillis(connectTimeout),
          // Fail fast when not connected: a queued command would cost the full per-node timeout.
          enableOfflineQueue: false,
          // A command resent after a reconnect could set a key after we gave up on it.
          autoResendUnfulfilledCommands: false,
          maxRetriesPerRequest: 0,
          retryStrategy: (times) => Math.min(50 * times, 1000)
        })
      ),
      close
    )
    return yield* watch(options.name ?? `${host}:${port}`, client, connectTimeout, settings)
  })

/**
 * The nodes, connected concurrently.
 *
 * @example
 * ```ts
 * import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
 *
 * const NodesLive = Ioredis.layer([{ host: "10.0.0.1" }, { host: "10.0.0.2" }, { host: "10.0.0.3" }])
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (nodes: ReadonlyArray<NodeOptions>): Layer.Layer<RedisNodes, InvalidOptions> =>
  Layer.scoped(RedisNodes, Effect.forEach(nodes, make, { concurrency: "unbounded" }))

/**
 * The node list from configuration: `REDLOCK_NODES` holds comma-separated
 * `redis://` URLs; `REDLOCK_PASSWORD`, when set, is the password of nodes
 * whose URL has none.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config<{
    readonly urls: ReadonlyArray<string>
    readonly password: Option.Option<Redacted.Redacted<string>>
  }> = Config.all({
    urls: Config.map(Config.string("REDLOCK_NODES"), (list) => list.split(",").map((url) => url.trim())),
    password: Config.option(Config.redacted("REDLOCK_PASSWORD"))
  })
): Layer.Layer<RedisNodes, ConfigError.ConfigError | InvalidOptions> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const { password, urls } = yield* config
    const nodes: Array<ConnectionOptions> = []
    for (const url of urls) {
      const parsed = fromUrl(url)
      if (Option.isNone(parsed)) {
        return yield* Effect.fail(ConfigError.InvalidData(["REDLOCK_NODES"], `not a redis:// URL: "${hidePassword(url)}"`))
      }
      nodes.push({ ...parsed.value, password: parsed.value.password ?? Option.getOrUndefined(password) })
    }
    return layer(nodes)
  }))
