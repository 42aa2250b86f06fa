/**
 * The behaviours' front end over an Effect line's `RedlockService`, written
 * once for both majors: each line's runner passes its `effect` modules and
 * its package's exports (`EffectLine`), typed loosely here because the two
 * `effect` packages' types cannot meet in one file; where the majors name a
 * function differently, both names are tried.
 */
import type { AcquireSettings, FrontEnd, Held, NodesSetting } from "./behaviours.js"

/** What the behaviours call on a `RedlockService` (its effects are opaque here). */
export interface EffectRedlock {
  readonly acquire: (resources: never, options: never) => unknown
  readonly release: (lock: never) => unknown
  readonly extend: (lock: never, ttl: number) => unknown
  readonly inspect: (resource: string) => unknown
  readonly acquirePermit: (resource: string, options: never) => unknown
  readonly acquireRead: (resource: string, options: never) => unknown
  readonly acquireWrite: (resource: string, options: never) => unknown
  readonly inspectPermits: (resource: string, limit: number) => unknown
}

interface EffectLock {
  readonly value: string
  readonly attempts: number
  /** An effect of the validity left, as a `Duration`. */
  readonly remaining: unknown
  /** An effect of the fencing token. */
  readonly fencingToken: unknown
}

/**
 * The `effect` modules the front end uses, as one line's package exports
 * them; where the majors name a function differently both names are listed.
 */
export interface EffectModules {
  readonly Cause: {
    readonly squash: (cause: never) => unknown
    readonly isInterruptedOnly?: (cause: never) => boolean
    readonly hasInterruptsOnly?: (cause: never) => boolean
  }
  readonly Context: { readonly get: (context: never, tag: never) => unknown }
  readonly Duration: { readonly toMillis: (duration: never) => number }
  readonly Effect: {
    readonly runPromiseExit: (effect: never, options?: { readonly signal?: AbortSignal }) => Promise<unknown>
    readonly promise: (evaluate: (signal: AbortSignal) => Promise<unknown>) => unknown
    readonly provideService: (self: never, tag: never, service: never) => unknown
  }
  readonly Exit: { readonly void: unknown }
  readonly Layer: {
    readonly build: (layer: never) => unknown
    readonly provide: (layer: never) => (self: never) => unknown
  }
  readonly Scope: {
    readonly make: () => unknown
    readonly close: (scope: never, exit: never) => unknown
    readonly extend?: (effect: never, scope: never) => unknown
    readonly provide?: (effect: never, scope: never) => unknown
  }
}

/** One Effect line: its modules, and its package's exports the behaviours use. */
export interface EffectLine {
  readonly name: string
  readonly effect: EffectModules
  readonly Redlock: {
    readonly Redlock: unknown
    readonly layer: (options: never) => unknown
    readonly retry: (options: { readonly delay: number; readonly times: number }) => unknown
    readonly noRetry: unknown
    readonly withLock: (self: never, resources: never, options: never) => unknown
  }
  /** The nodes' layer for a setting (`Ioredis.layer` or `RedisNode.layerMemory`). */
  readonly nodes: (setting: NodesSetting) => unknown
}

type Exit = { readonly _tag: "Success"; readonly value: unknown } | {
  readonly _tag: "Failure"
  readonly cause: unknown
}

/** How a line's effects run: rejecting with the error itself (the cause squashed), or with the signal's reason when it interrupted. */
const runnerOf = ({ Cause, Effect, Exit, Scope }: EffectModules) => {
  const interruptedOnly = (Cause.isInterruptedOnly ?? Cause.hasInterruptsOnly)!
  const inScope = (Scope.extend ?? Scope.provide)!
  const run = async <A>(effect: unknown, signal?: AbortSignal): Promise<A> => {
    const exit = await Effect.runPromiseExit(effect as never, signal === undefined ? undefined : { signal }) as Exit
    if (exit._tag === "Success") return exit.value as A
    if (signal?.aborted === true && interruptedOnly(exit.cause as never)) throw signal.reason
    throw Cause.squash(exit.cause as never)
  }
  /** `effect` run in a new scope, closed by `close` (or at once when it fails). */
  const runScoped = async <A>(effect: unknown, signal?: AbortSignal) => {
    const scope = await run(Scope.make())
    const close = () => run<void>(Scope.close(scope as never, Exit.void as never))
    const value = await run<A>(inScope(effect as never, scope as never), signal).catch(async (error) => {
      await close()
      throw error
    })
    return { value, close }
  }
  return { run, runScoped }
}

/** The front end of an Effect line: each lock in a scope of its own, released by `release` and its scope then closed. */
export const effectFrontEnd = (line: EffectLine): FrontEnd => ({
  name: line.name,
  manager: async (nodes, settings = {}) => {
    const { Context, Duration, Layer } = line.effect
    const { run, runScoped } = runnerOf(line.effect)
    const { maxTtlMillis, ...rest } = settings
    const options = {
      restartQuarantine: false,
      ...rest,
      ...(maxTtlMillis === undefined ? {} : { maxTtl: maxTtlMillis })
    }
    const layer = Layer.provide(line.nodes(nodes) as never)(line.Redlock.layer(options as never) as never)
    const { close, value: context } = await runScoped(Layer.build(layer as never))
    const redlock = Context.get(context as never, line.Redlock.Redlock as never) as EffectRedlock
    /** A behaviour's acquire settings as the line's acquire options, and the signal apart. */
    const optionsOf = ({ retry, signal, ...rest }: AcquireSettings) => {
      const policy = retry === undefined
        ? {}
        : {
          retry: retry === "none"
            ? line.Redlock.noRetry
            : line.Redlock.retry({ delay: retry.delayMillis, times: retry.times })
        }
      return { options: { ...rest, ...policy } as never, signal }
    }
    /** The lock `acquire` gives for these settings, held in a scope of its own. */
    const hold = async (acquire: (options: never) => unknown, settings: AcquireSettings): Promise<Held> => {
      const { options, signal } = optionsOf(settings)
      const scoped = await runScoped<EffectLock>(acquire(options), signal)
      const lock = scoped.value
      return {
        value: lock.value,
        attempts: lock.attempts,
        release: async () => {
          const { status } = await run<{ readonly status: string }>(redlock.release(lock as never))
          await scoped.close()
          return status
        },
        extend: (ttlMillis) => run<unknown>(redlock.extend(lock as never, ttlMillis)).then(() => undefined),
        remainingMillis: async () => Duration.toMillis(await run(lock.remaining)),
        fencingToken: () => run<bigint>(lock.fencingToken)
      }
    }
    return {
      acquire: (resources, settings) => hold((options) => redlock.acquire(resources as never, options), settings),
      acquirePermit: (resource, limit, settings) =>
        hold((options) => redlock.acquirePermit(resource, { limit, ...options as object } as never), settings),
      acquireRead: (resource, settings) => hold((options) => redlock.acquireRead(resource, options), settings),
      acquireWrite: (resource, settings) => hold((options) => redlock.acquireWrite(resource, options), settings),
      using: (resource, settings, body) => {
        const { options, signal } = optionsOf(settings)
        const { Effect } = line.effect
        const held = line.Redlock.withLock(Effect.promise(body) as never, resource as never, options)
        return run(Effect.provideService(held as never, line.Redlock.Redlock as never, redlock as never), signal)
      },
      holder: async (resource) => {
        const { holder } = await run<{ readonly holder: { readonly _tag: string; readonly value?: string } }>(
          redlock.inspect(resource)
        )
        return holder._tag === "Some" ? holder.value : undefined
      },
      permitsHeld: async (resource, limit) =>
        (await run<{ readonly held: number }>(redlock.inspectPermits(resource, limit))).held,
      close
    }
  }
})
