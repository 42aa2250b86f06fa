/** The shared behaviours (the test fleet's behaviours.ts) for the promise API as core ships it. */
import { afterAll, beforeAll, beforeEach, describe, it } from "vitest"
import { behaviours, type FrontEnd, type Held } from "@effect-redlock/fleet/behaviours.js"
import { makeRedlock, memoryNodes, noRetry, type PromiseLock, retry } from "../src/Promise.js"

const promiseApi: FrontEnd = {
  name: "promise API",
  manager: async (nodes, settings) => {
    const redlock = await makeRedlock("memory" in nodes ? memoryNodes(nodes.memory) : nodes.options as never, {
      restartQuarantine: false,
      logger: { warn: () => {} },
      ...(settings?.keyPrefix === undefined ? {} : { keyPrefix: settings.keyPrefix })
    })
    const held = (lock: PromiseLock): Held => ({
      value: lock.value,
      attempts: lock.attempts,
      release: async () => (await redlock.release(lock)).status,
      extend: async (ttlMillis) => void (await redlock.extend(lock, ttlMillis)),
      remainingMillis: async () => lock.remaining()
    })
    return {
      acquire: async (resources, options) => {
        const { retry: retrySetting, ...rest } = options
        const policy = retrySetting === undefined
          ? {}
          : { retry: retrySetting === "none" ? noRetry : retry({ delay: retrySetting.delayMillis, times: retrySetting.times }) }
        return held(await redlock.acquire(resources as never, { ...rest, ...policy } as never))
      },
      holder: async (resource) => (await redlock.inspect(resource)).holder ?? undefined,
      close: () => redlock.close()
    }
  }
}

behaviours(promiseApi, { afterAll, beforeAll, beforeEach, describe, it })
