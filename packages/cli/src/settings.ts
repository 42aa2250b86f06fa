/**
 * The lock manager `redlock` makes: its nodes and settings, each from its
 * flag, else from its `REDLOCK_*` variable (the same variables an Effect
 * application's `Redlock.layerConfig` and `Ioredis.layerConfig` read), else
 * the library's default. A value that cannot be read is a `UsageError`
 * naming where it came from: the flag where one was given, else the variable.
 */
import { configMillis } from "@effect-redlock/core/manager/durations.js"
import type { ManagerOptions } from "@effect-redlock/core/manager/settings.js"
import * as Address from "@effect-redlock/core/nodes/address.js"
import { hidePassword } from "@effect-redlock/core/engine/options.js"

/** Bad usage: exit 64 with this message, and the usage after it where a flag was wrong (`showUsage`). */
export class UsageError extends Error {
  constructor(message: string, readonly showUsage = true) {
    super(message)
  }
}

/** A value that cannot be read: the usage follows only where a flag gave it. */
const unreadable = (given: Given, message: string) =>
  new UsageError(`${given.source}: ${message}`, given.source.startsWith("--"))

/** The manager's settings as flags: each flag's name, its variable, and how its text is read. */
export const settingFlags = {
  "nodes": "REDLOCK_NODES",
  "key-prefix": "REDLOCK_KEY_PREFIX",
  "max-ttl": "REDLOCK_MAX_TTL",
  "node-timeout": "REDLOCK_NODE_TIMEOUT",
  "drift-factor": "REDLOCK_DRIFT_FACTOR",
  "max-extensions": "REDLOCK_MAX_EXTENSIONS",
  "fence-prefix": "REDLOCK_FENCE_PREFIX",
  "restart-quarantine": "REDLOCK_RESTART_QUARANTINE"
} as const

export type SettingFlag = keyof typeof settingFlags

/** A setting's text and where it came from (`--flag` or the variable); none where neither gave one. */
interface Given {
  readonly text: string
  readonly source: string
}

/** `500ms`, `30s`, `2m`, `1h`, or a duration's text (`30 seconds`), in ms; `undefined`: not a finite duration (core's). */
export const parseDuration = configMillis

export const durationOf = (given: Given): number => {
  const millis = parseDuration(given.text)
  if (millis === undefined) throw unreadable(given, `not a duration: "${given.text}" (e.g. 500ms, 30s, 2m, 30 seconds)`)
  return millis
}

const numberOf = (given: Given): number => {
  const value = given.text.trim() === "" ? Number.NaN : Number(given.text)
  if (Number.isNaN(value)) throw unreadable(given, `not a number: "${given.text}"`)
  return value
}

/** A whole number as given (its range is the library's to check: it names the option). */
export const wholeNumberOf = (given: Given): number => {
  if (!/^-?\d+$/.test(given.text)) throw unreadable(given, `not a whole number: "${given.text}"`)
  return Number(given.text)
}

const flagWords: Record<string, boolean> = { on: true, off: false }
const variableWords: Record<string, boolean> = {
  true: true,
  yes: true,
  on: true,
  "1": true,
  false: false,
  no: false,
  off: false,
  "0": false
}

const quarantineOf = (given: Given): boolean => {
  const words = given.source.startsWith("--") ? flagWords : variableWords
  const value = words[given.text.trim().toLowerCase()]
  if (value === undefined) {
    throw unreadable(
      given,
      `expected ${given.source.startsWith("--") ? "on or off" : "true or false"}, got "${given.text}"`
    )
  }
  return value
}

/** The node list: comma-separated `redis://` or `rediss://` URLs; `REDLOCK_PASSWORD` for those with none. */
const nodesOf = (given: Given | undefined, env: NodeJS.ProcessEnv) => {
  if (given === undefined || given.text.trim() === "") {
    throw new UsageError("no nodes: pass --nodes redis://host:port,... or set REDLOCK_NODES (see --help)", false)
  }
  const password = env.REDLOCK_PASSWORD
  return given.text.split(",").map((url) => url.trim()).map((url) => {
    if (Address.parseUrl(url) === undefined) throw unreadable(given, `not a redis:// URL: "${hidePassword(url)}"`)
    return Address.parseUrl(url)!.password === undefined && password !== undefined ? { url, password } : { url }
  })
}

/** The nodes and the manager's options of `flags` (given flags by name), else of `env`. */
export const managerOf = (flags: Partial<Record<SettingFlag, string>>, env: NodeJS.ProcessEnv) => {
  const given = (flag: SettingFlag): Given | undefined => {
    const text = flags[flag]
    if (text !== undefined) return { text, source: `--${flag}` }
    const variable = settingFlags[flag]
    const fromEnv = env[variable]
    return fromEnv === undefined ? undefined : { text: fromEnv, source: variable }
  }
  const read = <A>(flag: SettingFlag, parse: (given: Given) => A): A | undefined => {
    const value = given(flag)
    return value === undefined ? undefined : parse(value)
  }
  const options: ManagerOptions = {
    keyPrefix: read("key-prefix", (value) => value.text),
    maxTtl: read("max-ttl", durationOf),
    nodeTimeout: read("node-timeout", durationOf),
    driftFactor: read("drift-factor", numberOf),
    maxExtensions: read("max-extensions", wholeNumberOf),
    fencePrefix: read("fence-prefix", (value) => value.text),
    restartQuarantine: read("restart-quarantine", quarantineOf)
  }
  return { nodes: nodesOf(given("nodes"), env), options, nodeTimeoutSet: given("node-timeout") !== undefined }
}
