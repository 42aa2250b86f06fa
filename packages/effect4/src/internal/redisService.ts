/**
 * A node over a `Redis` service of `effect/persistence` (what
 * `@effect/platform-node`'s `NodeRedis.layer` provides): core's driver
 * contract (nodes/nodeOptions.ts) with the service as the "client".
 *
 * The service says nothing of its connections, and its clients reconnect
 * on their own: the connection is core's quietConnection.ts, each command
 * that may cast a vote followed by `CLIENT ID` and `LASTSAVE` (sent at once
 * behind it, so on the same connection). Scripts go by `send("EVALSHA")`,
 * loaded by core on each connection, never by the service's `eval`, which
 * answers NOSCRIPT by loading the script and sending the command again after
 * the commands sent meanwhile (see core's loadedScripts.ts). Releases are
 * heard through the service's `subscribe`: each watched key's channel is a
 * subscription of its own (over NodeRedis, a connection of its own) while
 * someone waits on the key and a second after; a release published while
 * such a subscription reconnects is missed, and its waiters try again on
 * their schedule.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Redis from "effect/persistence/Redis"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import type * as CoreNodes from "@effect-redlock/core/nodes/nodeOptions.js"
import * as DriverNode from "@effect-redlock/core/nodes/driverNode.js"
import * as QuietConnection from "@effect-redlock/core/nodes/quietConnection.js"
import * as ReleaseChannels from "@effect-redlock/core/nodes/releaseChannels.js"

/** The service a node is made from. */
export type RedisService = Redis.Redis["Service"]

/** A server's reply reads `CODE detail`; anything else the service fails with is its connection's failure. */
const isServerReply = (error: Error): boolean => /^[A-Z][A-Z_-]*( |$)/.test(error.message)

/** What the service failed with: its `RedisError`'s cause, as an error. */
const causeOf = (failure: unknown): Error => {
  const cause = typeof failure === "object" && failure !== null && "cause" in failure
    ? (failure as { cause: unknown }).cause
    : failure
  return cause instanceof Error ? cause : new Error(String(cause))
}

/** An effect of the service as a promise on `context`: its failure as the error its `RedisError` carries. */
const runner = (context: Context.Context<never>) => {
  const run = Effect.runPromiseExitWith(context)
  return <A>(effect: Effect.Effect<A, unknown>): Promise<A> =>
    run(effect).then((exit) => Exit.isSuccess(exit) ? exit.value : Promise.reject(causeOf(Cause.squash(exit.cause))))
}

const isConnectionFailure = (cause: unknown): boolean => !isServerReply(causeOf(cause))

const asReply = (cause: unknown): Error => {
  const error = causeOf(cause)
  return isServerReply(error) ? error : QuietConnection.noConnection(`Redis service: ${error.message}`)
}

/** The service as a node's connection. */
const connectionOf = (redis: RedisService, run: ReturnType<typeof runner>) => {
  const send = (command: Array<string>) => redis.send(command[0], ...command.slice(1))
  // An error reply in its place; the connection's failure fails the whole.
  const inPlace = (command: Array<string>) =>
    run(send(command)).catch((cause: unknown) => isConnectionFailure(cause) ? Promise.reject(cause) : causeOf(cause))
  return QuietConnection.connectionOf({
    send: (command) => run(send(command)),
    // Sent one after the other now, before any answer: on one connection, in this order.
    sendMarked: (command) =>
      Promise.all([inPlace(command), inPlace(["CLIENT", "ID"]), inPlace(["LASTSAVE"]), inPlace(["TIME"])]),
    isConnectionFailure,
    asReply
  })
}

/** How long a subscription may take to be confirmed before its channel counts as refused. */
const confirmWithinMillis = 1000

/** A subscription that failed: the server refused it (an ACL without pub/sub), or the service could not make it. */
class SubscribeRefused extends Error {}

/** Release announcements through the service's `subscribe`, one subscription per channel. */
const releaseDriver = (redis: RedisService, run: ReturnType<typeof runner>): ReleaseChannels.Driver => ({
  open: (events) => {
    const subscriptions = new Map<string, Scope.Closeable>()
    let open = true
    const closeScope = (scope: Scope.Closeable) => void run(Scope.close(scope, Exit.void)).catch(() => {})
    const drop = (channel: string) => {
      const scope = subscriptions.get(channel)
      if (scope === undefined) return
      subscriptions.delete(channel)
      closeScope(scope)
    }
    // Each subscription reconnects by itself: ready from the start (told after `open` returned).
    setTimeout(() => open && events.ready(), 0).unref?.()
    const subscribe = (channel: string) =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const queue = yield* Scope.provide(redis.subscribe(channel), scope)
        // A subscription the service could not make has failed its queue by now.
        const first = Queue.takeUnsafe(queue)
        if (first !== undefined && Exit.isFailure(first)) {
          yield* Scope.close(scope, Exit.void)
          return yield* Effect.fail(
            new SubscribeRefused(`SUBSCRIBE ${channel}: ${causeOf(Cause.squash(first.cause)).message}`)
          )
        }
        if (first !== undefined) events.message(channel, first.value.message)
        yield* Effect.forkIn(
          Effect.forever(
            Effect.flatMap(Queue.take(queue), (message) => Effect.sync(() => events.message(channel, message.message)))
          ).pipe(
            // The subscription is gone for good: as if the connection dropped, every channel is asked again.
            Effect.onExit((exit) =>
              Effect.sync(() => {
                if (!Exit.hasInterrupts(exit) && open && subscriptions.get(channel) === scope) {
                  drop(channel)
                  events.closed()
                  events.ready()
                }
              })
            )
          ),
          scope
        )
        return scope
      })
    return {
      isReady: () => open,
      subscribe: (channel) => {
        drop(channel)
        return run(Effect.timeoutOrElse(subscribe(channel), {
          duration: confirmWithinMillis,
          orElse: () =>
            Effect.fail(new SubscribeRefused(`SUBSCRIBE ${channel} not confirmed within ${confirmWithinMillis} ms`))
        })).then((scope) => {
          if (!open) closeScope(scope)
          else subscriptions.set(channel, scope)
        })
      },
      unsubscribe: (channel) => {
        drop(channel)
        return Promise.resolve()
      },
      close: () => {
        open = false
        for (const channel of [...subscriptions.keys()]) drop(channel)
      }
    }
  },
  isRefusal: (error) => error instanceof SubscribeRefused,
  countsSubscribers: true,
  keyPrefix: ""
})

/** Why `service` cannot be a node's (`undefined`: it can). */
const serviceProblem = (service: unknown): string | undefined => {
  if (typeof service !== "object" || service === null) return "must be a Redis service of effect/persistence"
  for (const method of ["send", "subscribe"]) {
    if (typeof (service as Record<string, unknown>)[method] !== "function") {
      return `must be a Redis service of effect/persistence: it has no ${method}`
    }
  }
  return undefined
}

/** The driver of nodes over services, their effects run on `context`; `name` names a node not given one. */
export const driverOf = (context: Context.Context<never>, name: string): CoreNodes.Driver<RedisService> => {
  const run = runner(context)
  return {
    newClient: () => {
      throw new Error("a Redis service is the user's: nodes over it have no connection options")
    },
    closeClient: () => Promise.resolve(),
    clientName: () => name,
    connectUserClient: () => {},
    userClientProblem: serviceProblem,
    sentinels: false,
    open: async (redis, settings) => {
      const connection = connectionOf(redis, run)
      const opened = await DriverNode.open(connection, settings, () => {
        // Channels are not shared between nodes: each service may be another server, or log in otherwise.
        const use = ReleaseChannels.share(releaseDriver(redis, run), undefined, () => false)
        return { channels: use.channels, stop: use.leave }
      })
      return {
        node: opened.node,
        close: async () => {
          await opened.close()
          connection.stop()
        }
      }
    }
  }
}
