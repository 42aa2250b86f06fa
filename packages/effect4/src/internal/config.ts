/**
 * The lock manager's options read from configuration (`Redlock.layerConfig`),
 * read as the Effect 3 line reads them: a value that is not one is a
 * `ConfigError` naming its variable (Effect 4's carries a `SchemaError`, so
 * each check is a schema's).
 *
 * @internal
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { configMillis } from "@effect-redlock/core/manager/durations.js"
import type { Options } from "../Redlock.js"

/** `Redlock.parseDuration` (core's manager/durations.ts). */
export const parseDuration = (text: string): Option.Option<Duration.Duration> =>
  Option.map(Option.fromUndefinedOr(configMillis(text)), Duration.millis)

const durationText = Schema.String.check(
  Schema.makeFilter((text: string) =>
    configMillis(text) !== undefined || `not a duration: "${text}" (e.g. 500ms, 30s, 2m, 30 seconds)`
  )
)

/** A duration from configuration, read by `Redlock.parseDuration`. */
const duration = (name: string): Config.Config<Duration.Duration> =>
  Config.map(Config.schema(durationText, name), (text) => Duration.millis(configMillis(text)!))

const optional = <A>(config: Config.Config<A>): Config.Config<A | undefined> =>
  Config.map(Config.option(config), Option.getOrUndefined)

/** The `REDLOCK_*` variables, each optional (documented at `Redlock.layerConfig`). */
export const options: Config.Config<Options> = Config.map(
  Config.all({
    keyPrefix: optional(Config.String("REDLOCK_KEY_PREFIX")),
    driftFactor: optional(Config.Number("REDLOCK_DRIFT_FACTOR")),
    nodeTimeout: optional(duration("REDLOCK_NODE_TIMEOUT")),
    maxExtensions: optional(Config.Int("REDLOCK_MAX_EXTENSIONS")),
    fencePrefix: optional(Config.String("REDLOCK_FENCE_PREFIX")),
    maxTtl: optional(duration("REDLOCK_MAX_TTL")),
    restartQuarantine: optional(Config.Boolean("REDLOCK_RESTART_QUARANTINE"))
  }),
  // Unset variables leave their options out (the options take no `undefined` under exactOptionalPropertyTypes).
  (read) => Object.fromEntries(Object.entries(read).filter(([, value]) => value !== undefined)) as Options
)
