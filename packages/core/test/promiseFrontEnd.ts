/**
 * The promise API as a front end of the shared behaviours (the test fleet's
 * behaviours.ts): core's `makeRedlock`, over node options, in-memory nodes
 * or (drivers.test.ts) users' own clients.
 */
import type { AcquireSettings, FrontEnd, Held } from "@effect-redlock/fleet/behaviours.js"
import { makeRedlock, memoryNodes, noRetry, type PromiseLock, retry } from "../src/Promise.js"

export const promiseApi: FrontEnd = {
  name: "promise API",
  manager: async (nodes, settings = {}) => {
    const { maxTtlMillis, ...rest } = settings
    const redlock = await makeRedlock("memory" in nodes ? memoryNodes(nodes.memory) : nodes.options as never, {
      restartQuarantine: false,
      logger: { warn: () => {} },
      ...rest,
      ...(maxTtlMillis === undefined ? {} : { maxTtl: maxTtlMillis })
    })
    /** The options for one acquisition: a behaviour's retry as a retry policy. */
    const optionsOf = ({ retry: setting, ...options }: AcquireSettings) =>
      (setting === undefined
        ? options
        : {
          ...options,
          retry: setting === "none" ? noRetry : retry({ delay: setting.delayMillis, times: setting.times })
        }) as never
    const held = (lock: PromiseLock): Held => ({
      value: lock.value,
      attempts: lock.attempts,
      release: async () => (await redlock.release(lock)).status,
      extend: async (ttlMillis) => void (await redlock.extend(lock, ttlMillis)),
      remainingMillis: async () => lock.remaining(),
      fencingToken: () => lock.fencingToken()
    })
    return {
      acquire: async (resources, settings) => held(await redlock.acquire(resources as never, optionsOf(settings))),
      acquirePermit: async (resource, limit, settings) =>
        held(await redlock.acquirePermit(resource, { limit, ...optionsOf(settings) as object } as never)),
      acquireRead: async (resource, settings) => held(await redlock.acquireRead(resource, optionsOf(settings))),
      acquireWrite: async (resource, settings) => held(await redlock.acquireWrite(resource, optionsOf(settings))),
      using: (resource, settings, body) => redlock.using(resource, optionsOf(settings), (_, signal) => body(signal)),
      holder: async (resource) => (await redlock.inspect(resource)).holder ?? undefined,
      permitsHeld: async (resource, limit) => (await redlock.inspectPermits(resource, limit)).held,
      close: () => redlock.close()
    }
  }
}
