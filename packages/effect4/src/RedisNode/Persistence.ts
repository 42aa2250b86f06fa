/**
 * Redis nodes from Effect's own `Redis` service (`effect/persistence/Redis`,
 * as `@effect/platform-node`'s `NodeRedis.layer` provides it): a program that
 * configures its Redis once, for Effect's RateLimiter or PersistedQueue
 * stores, makes its lock nodes from the same layers, one per master.
 *
 * What a node over the service does as any other: the lock scripts (by
 * `send("EVALSHA")`, loaded on each connection and never sent again out of
 * order), releases heard through the service's `subscribe`, each call
 * bounded by the per-node timeout, and the restart quarantine from the
 * server's `INFO server`. What it gives up, since the service says nothing
 * of its connections: each command that may vote is followed by `CLIENT ID`
 * and `LASTSAVE` (two small commands more per vote, an ACL must allow them)
 * to tell an answer of a restarted server from the old one's; each watched
 * key's channel is a subscription of its own (over NodeRedis, a connection
 * of its own, while someone waits on the key and a second after), and a
 * release published while one reconnects is missed (its waiters try again
 * on their schedule); the service's client queues commands while it
 * reconnects (NodeRedis's offline queue), which the node does not send
 * while no PING is answered.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redis from "effect/persistence/Redis"
import type * as Scope from "effect/Scope"
import * as DriverNodes from "../internal/driverNodes.js"
import type { InvalidOptions } from "../internal/errors.js"
import { driverOf, type RedisService } from "../internal/redisService.js"
import { type RedisNode, RedisNodes } from "../RedisNode.js"

/**
 * A node's settings beside its service, as for a client of the user's:
 * its name (default `redis service <n>`, its place in the list),
 * `maxPendingCommands`, `durable`, `waitForReplicas`.
 *
 * @since 0.2.0
 * @category models
 */
export type NodeSettings = Omit<DriverNodes.ClientOptions<RedisService>, "client">

/**
 * One master: its `Redis` service as a layer (e.g. `NodeRedis.layer({ url })`),
 * with the node's settings.
 *
 * @since 0.2.0
 * @category models
 */
export interface MasterOptions<E = never, R = never> extends NodeSettings {
  readonly redis: Layer.Layer<Redis.Redis, E, R>
}

/**
 * A node over `redis`, a `Redis` service, opened now and closed with the
 * scope (the service stays open: it is the user's).
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (
  redis: RedisService,
  settings: NodeSettings = {}
): Effect.Effect<RedisNode, InvalidOptions, Scope.Scope> =>
  Effect.flatMap(
    Effect.context<never>(),
    (context) => DriverNodes.make(driverOf(context, settings.name ?? "redis service"))({ ...settings, client: redis })
  )

/**
 * The nodes of `masters`, one per master: each a layer of its `Redis`
 * service, or {@link MasterOptions}; the services are built for the nodes
 * and closed with them, concurrently.
 *
 * @example
 * ```ts
 * import { NodeRedis } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { Redlock } from "effect-redlock"
 * import * as Persistence from "effect-redlock/RedisNode/Persistence"
 *
 * const masters = ["redis://10.0.0.1", "redis://10.0.0.2", "redis://10.0.0.3"].map((url) => NodeRedis.layer({ url }))
 * export const RedlockLive = Redlock.layer().pipe(Layer.provide(Persistence.layer(masters)))
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const layer = <E = never, R = never>(
  masters: ReadonlyArray<Layer.Layer<Redis.Redis, E, R> | MasterOptions<E, R>>
): Layer.Layer<RedisNodes, E | InvalidOptions, R> =>
  Layer.effect(
    RedisNodes,
    Effect.forEach(masters, (master, index) => {
      const { redis, ...settings }: MasterOptions<E, R> = "redis" in master ? master : { redis: master }
      return Effect.flatMap(
        Layer.build(redis),
        (services) => make(Context.get(services, Redis.Redis), { name: `redis service ${index + 1}`, ...settings })
      )
    }, { concurrency: "unbounded" })
  )

/**
 * One node over the `Redis` service the program already provides (one
 * master: for several, see {@link layer}).
 *
 * @since 0.2.0
 * @category constructors
 */
export const layerFromContext = (settings: NodeSettings = {}): Layer.Layer<RedisNodes, InvalidOptions, Redis.Redis> =>
  Layer.effect(RedisNodes, Effect.flatMap(Redis.Redis, (redis) => Effect.map(make(redis, settings), (node) => [node])))
