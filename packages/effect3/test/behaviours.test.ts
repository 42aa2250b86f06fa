/**
 * The shared behaviours (the test fleet's behaviours.ts) for the Effect 3
 * API, through the front end both Effect lines share (effectFrontEnd.ts):
 * `Redlock.layer` over `Ioredis.layer` or `RedisNode.layerMemory`, each lock
 * in a scope of its own, an abort as the fiber's interruption.
 */
import { afterAll, beforeAll, beforeEach, describe, it } from "vitest"
import { behaviours } from "@effect-redlock/fleet/behaviours.js"
import { effectFrontEnd } from "@effect-redlock/fleet/effectFrontEnd.js"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { RedisNode, Redlock } from "effect-redlock"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"

const effect3Api = effectFrontEnd({
  name: "Effect 3 API",
  effect: { Cause, Context, Duration, Effect, Exit, Layer, Scope },
  Redlock,
  nodes: (setting) =>
    "memory" in setting ? RedisNode.layerMemory(setting.memory) : Ioredis.layer(setting.options as never)
})

behaviours(effect3Api, { afterAll, beforeAll, beforeEach, describe, it })
