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
import * as ConfigProvider from "effect/ConfigProvider"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Options from "@effect-redlock/core/engine/options.js"
import * as CoreNodes from "@effect-redlock/core/nodes/nodeOptions.js"
import { type RedisNode, RedisNodes } from "../RedisNode.js"
import type { InvalidOptions } from "./errors.js"
import { makeNodeError } from "./nodes.js"
import * as TimeOf from "./monotonic.js"
import * as Validate from "./validate.js"

/** Where a node is and how to log in (documented in core's nodes/nodeOptions.ts and each driver's module). */
export type ConnectionOptions = CoreNodes.ConnectionOptions<Redacted.Redacted<string>, Duration.Input>

/** A client the user owns: we use it as it is and never close it. */
export type ClientOptions<Client> = CoreNodes.ClientOptions<Client, Duration.Input>

export type NodeOptions<Client> = ConnectionOptions | ClientOptions<Client>

/** See core's nodes/nodeOptions.ts. */
export const defaultMaxPendingCommands = CoreNodes.defaultMaxPendingCommands

/** How one driver makes, names and closes its clients, and opens a node over one (core's). */
export type Driver<Client> = CoreNodes.Driver<Client>

/** Connection options from a `redis://` or `rediss://` URL. */
export const fromUrl = (url: string): Option.Option<ConnectionOptions> =>
  Option.fromNullishOr(CoreNodes.fromUrl<Redacted.Redacted<string>, Duration.Input>(url, Redacted.make))

/** How this line's node options read: durations as Effect does, the password from its `Redacted`. */
const readers: CoreNodes.Readers = {
  millis: Validate.readMillis,
  password: (input) => Redacted.isRedacted(input) ? Redacted.value(input as Redacted.Redacted<string>) : undefined
}

/** One node over `driver`: a connection of ours is opened now and closed with the scope; a user's client is left open. */
export const make =
  <Client>(driver: Driver<Client>) =>
  (nodeOptions: NodeOptions<Client>): Effect.Effect<RedisNode, InvalidOptions, Scope.Scope> =>
    Effect.flatMap(TimeOf.currentTime, (time) => {
      // Checked before the connection is opened.
      const checked = CoreNodes.check(driver, nodeOptions, readers)
      if (checked instanceof Options.Problem) return Effect.fail(Validate.invalid(checked.option, checked.detail))
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
    Layer.effect(
      RedisNodes,
      Effect.suspend(() => {
        const problem = CoreNodes.listProblem(nodes)
        return problem === undefined
          ? Effect.forEach(nodes, make(driver), { concurrency: "unbounded" })
          : Effect.fail(Validate.invalid(problem.option, problem.detail))
      })
    )

// A URL that is not one is a ConfigError naming REDLOCK_NODES, as in the Effect 3 line: Effect 4's
// ConfigError carries a SchemaError, so the check is the schema's.
const nodeUrls = Schema.String.check(Schema.makeFilter((list: string) => {
  const problem = CoreNodes.fromUrls(list.split(",").map((url) => url.trim()), undefined, (password) => password)
  return problem instanceof Options.Problem ? problem.detail : true
}))

/** The configuration `layerConfig` reads by default: `REDLOCK_NODES` (comma-separated URLs) and `REDLOCK_PASSWORD`. */
export const defaultConfig: Config.Config<{
  readonly urls: ReadonlyArray<string>
  readonly password: Option.Option<Redacted.Redacted<string>>
}> = Config.all({
  urls: Config.map(Config.schema(nodeUrls, "REDLOCK_NODES"), (list) => list.split(",").map((url) => url.trim())),
  password: Config.option(Config.Redacted("REDLOCK_PASSWORD"))
})

/** The node list from configuration, over `driver`. */
export const layerConfig = <Client>(driver: Driver<Client>) =>
(
  config: Config.Config<{
    readonly urls: ReadonlyArray<string>
    readonly password: Option.Option<Redacted.Redacted<string>>
  }> = defaultConfig
): Layer.Layer<RedisNodes, Config.ConfigError | InvalidOptions> =>
  Layer.unwrap(Effect.gen(function*() {
    const { password, urls } = yield* config
    const nodes = CoreNodes.fromUrls<Redacted.Redacted<string>, Duration.Input>(
      urls,
      Option.getOrUndefined(password),
      Redacted.make
    )
    // A config of the user's own, with URLs the default one's schema would have refused: the same ConfigError.
    if (nodes instanceof Options.Problem) {
      return yield* Effect.fail(
        new Config.ConfigError(new ConfigProvider.SourceError({ message: `${nodes.option}: ${nodes.detail}` }))
      )
    }
    return layer(driver)(nodes)
  }))

/** What `layerConfig` reads: the node URLs, and the password of those whose URL has none. */
export type NodesConfig = Config.Config<{
  readonly urls: ReadonlyArray<string>
  readonly password: Option.Option<Redacted.Redacted<string>>
}>

/** The functions of every driver's public module (RedisNode/Ioredis, RedisNode/Iovalkey, RedisNode/NodeRedis). */
export interface DriverModule<Options> {
  readonly defaultMaxPendingCommands: number
  readonly fromUrl: (url: string) => Option.Option<ConnectionOptions>
  readonly make: (nodeOptions: Options) => Effect.Effect<RedisNode, InvalidOptions, Scope.Scope>
  readonly layer: (nodes: ReadonlyArray<Options>) => Layer.Layer<RedisNodes, InvalidOptions>
  readonly layerConfig: (config?: NodesConfig) => Layer.Layer<RedisNodes, Config.ConfigError | InvalidOptions>
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
