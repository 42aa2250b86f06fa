/**
 * The lock manager's options read from configuration (`Redlock.layerConfig`).
 *
 * @internal
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import type * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { Options } from "../Redlock.js"
import * as Validate from "./validate.js"

const optional = <A>(config: Config.Config<A>): Config.Config<A | undefined> =>
  Config.map(Config.option(config), Option.getOrUndefined)

/** A duration from configuration, read by `Redlock.parseDuration`. */
const duration = (name: string): Config.Config<Duration.Duration> =>
  Config.mapOrFail(Config.string(name), (text) =>
    Option.match(Validate.parseDuration(text), {
      onNone: () =>
        Either.left(ConfigError.InvalidData([name], `not a duration: "${text}" (e.g. 500ms, 30s, 2m, 30 seconds)`)),
      onSome: Either.right
    }))

/** The `REDLOCK_*` variables, each optional (documented at `Redlock.layerConfig`). */
export const options: Config.Config<Options> = Config.all({
  keyPrefix: optional(Config.string("REDLOCK_KEY_PREFIX")),
  driftFactor: optional(Config.number("REDLOCK_DRIFT_FACTOR")),
  nodeTimeout: optional(duration("REDLOCK_NODE_TIMEOUT")),
  maxExtensions: optional(Config.integer("REDLOCK_MAX_EXTENSIONS")),
  fencePrefix: optional(Config.string("REDLOCK_FENCE_PREFIX")),
  maxTtl: optional(duration("REDLOCK_MAX_TTL")),
  restartQuarantine: optional(Config.boolean("REDLOCK_RESTART_QUARANTINE"))
})
