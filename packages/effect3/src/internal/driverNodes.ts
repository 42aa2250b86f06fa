/**
 * What every driver's public node module has in common (RedisNode/Ioredis,
 * RedisNode/NodeRedis): the connection options, the user's own client, the
 * checks of the options, a node opened for a scope, the layers. Each module
 * hands in its driver: how it makes, names and closes a client, and opens
 * a node over it (nodes/<driver>/node.ts).
 *
 * @internal
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { Problem } from "@effect-redlock/core/engine/options.js"
import * as CoreNodes from "@effect-redlock/core/nodes/nodeOptions.js"
import type { RedisNode } from "../RedisNode.js"
import { InvalidOptions } from "./errors.js"
import * as Monotonic from "./monotonic.js"
import { makeNodeError, RedisNodes } from "./nodes.js"
import * as Validate from "./validate.js"

/** Where a node is and how to log in (documented in core's nodes/nodeOptions.ts and each driver's module). */
export type ConnectionOptions = CoreNodes.ConnectionOptions<Redacted.Redacted<string>, Duration.DurationInput>

/** A client the user owns: we use it as it is and never close it. */
export type ClientOptions<Client> = CoreNodes.ClientOptions<Client, Duration.DurationInput>

export type NodeOptions<Client> = ConnectionOptions | ClientOptions<Client>

/** See core's nodes/nodeOptions.ts. */
export const defaultMaxPendingCommands = CoreNodes.defaultMaxPendingCommands

/** How one driver makes, names and closes its clients, and opens a node over one (core's). */
export type Driver<Client> = CoreNodes.Driver<Client>

/** Connection options from a `redis://` or `rediss://` URL. */
export const fromUrl = (url: string): Option.Option<ConnectionOptions> =>
  Option.fromNullable(CoreNodes.fromUrl<Redacted.Redacted<string>, Duration.DurationInput>(url, Redacted.make))

/** How this line's node options read: durations as Effect does, the password from its `Redacted`. */
const readers: CoreNodes.Readers = {
  millis: Validate.readMillis,
  password: (input) => Redacted.isRedacted(input) ? Redacted.value(input as Redacted.Redacted<string>) : undefined
}

/** One node over `driver`: a connection of ours is opened now and closed with the scope; a user's client is left open. */
export const make =
  <Client>(driver: Driver<Client>) =>
  (nodeOptions: NodeOptions<Client>): Effect.Effect<RedisNode, InvalidOptions, Scope.Scope> =>
    Effect.flatMap(Monotonic.currentTime, (time) => {
      // Checked before the connection is opened.
      const checked = CoreNodes.check(driver, nodeOptions, readers)
      if (checked instanceof Problem) {
        return new InvalidOptions({ option: checked.option, detail: checked.detail }, true)
      }
      return Effect.map(
        Effect.acquireRelease(
          Effect.promise(() => CoreNodes.open(driver, checked, makeNodeError, time.now)),
          (opened) => Effect.promise(opened.close)
        ),
        (opened): RedisNode => opened.node
      )
    })

/** The nodes over `driver`, connected concurrently. */
export const layer =
  <Client>(driver: Driver<Client>) =>
  (nodes: ReadonlyArray<NodeOptions<Client>>): Layer.Layer<RedisNodes, InvalidOptions> =>
    Layer.scoped(
      RedisNodes,
      Effect.suspend(() => {
        const problem = CoreNodes.listProblem(nodes)
        return problem === undefined
          ? Effect.forEach(nodes, make(driver), { concurrency: "unbounded" })
          : new InvalidOptions({ option: problem.option, detail: problem.detail }, true)
      })
    )

/** The configuration `layerConfig` reads by default: `REDLOCK_NODES` (comma-separated URLs) and `REDLOCK_PASSWORD`. */
export const defaultConfig: Config.Config<{
  readonly urls: ReadonlyArray<string>
  readonly password: Option.Option<Redacted.Redacted<string>>
}> = Config.all({
  urls: Config.map(Config.string("REDLOCK_NODES"), (list) => list.split(",").map((url) => url.trim())),
  password: Config.option(Config.redacted("REDLOCK_PASSWORD"))
})

/** The node list from configuration, over `driver`. */
export const layerConfig = <Client>(driver: Driver<Client>) =>
(
  config: Config.Config<{
    readonly urls: ReadonlyArray<string>
    readonly password: Option.Option<Redacted.Redacted<string>>
  }> = defaultConfig
): Layer.Layer<RedisNodes, ConfigError.ConfigError | InvalidOptions> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const { password, urls } = yield* config
    const nodes = CoreNodes.fromUrls<Redacted.Redacted<string>, Duration.DurationInput>(
      urls,
      Option.getOrUndefined(password),
      Redacted.make
    )
    if (nodes instanceof Problem) return yield* Effect.fail(ConfigError.InvalidData([nodes.option], nodes.detail))
    return layer(driver)(nodes)
  }))

/** What `layerConfig` reads: the node URLs, and the password of those whose URL has none. */
export type NodesConfig = Config.Config<{
  readonly urls: ReadonlyArray<string>
  readonly password: Option.Option<Redacted.Redacted<string>>
}>

/**
 * The functions of every driver's public module (RedisNode/Ioredis,
 * RedisNode/Iovalkey, RedisNode/NodeRedis), documented once here.
 */
export interface DriverModule<Options> {
  /**
   * How many commands of a node may wait for their answer at once, by
   * default. A server that stops answering (paused, overloaded, cut off
   * without a reset) keeps its connection open, and every command sent to it
   * would wait for as long as the server is away. Past this many, a new
   * command fails at once as `Unavailable` without being sent: a hung node
   * costs bounded memory, and no time; the other nodes serve quorums
   * meanwhile.
   */
  readonly defaultMaxPendingCommands: number
  /** Connection options from a `redis://` or `rediss://` URL (`redis://user:password@host:port/db`). */
  readonly fromUrl: (url: string) => Option.Option<ConnectionOptions>
  /** One node. The connection is opened now and closed when the scope closes (unless it is a client the user owns). */
  readonly make: (nodeOptions: Options) => Effect.Effect<RedisNode, InvalidOptions, Scope.Scope>
  /** The nodes, connected concurrently. */
  readonly layer: (nodes: ReadonlyArray<Options>) => Layer.Layer<RedisNodes, InvalidOptions>
  /**
   * The node list from configuration: `REDLOCK_NODES` holds comma-separated
   * `redis://` URLs; `REDLOCK_PASSWORD`, when set, is the password of nodes
   * whose URL has none.
   */
  readonly layerConfig: (config?: NodesConfig) => Layer.Layer<RedisNodes, ConfigError.ConfigError | InvalidOptions>
}

/** The public functions of `driver`'s module. */
export const moduleOf = <Client, Options extends NodeOptions<Client>>(
  driver: Driver<Client>
): DriverModule<Options> => ({
  defaultMaxPendingCommands,
  fromUrl,
  make: make(driver),
  layer: layer(driver),
  layerConfig: layerConfig(driver)
})
