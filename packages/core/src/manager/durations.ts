/**
 * Durations as the plain manager reads them: what Effect reads as a
 * `Duration.DurationInput`, read without Effect, so that options written for
 * either API mean the same in both.
 *
 * @internal
 */
import type { ReadMillis } from "../engine/options.js"

/**
 * A duration: milliseconds, a string such as `"10 seconds"` or
 * `"500 millis"`, nanoseconds as a bigint, `[seconds, nanos]`, or an Effect
 * `Duration` (read by its value, so that Effect 3's and 4's both work).
 */
export type DurationInput =
  | number
  | bigint
  | readonly [seconds: number, nanos: number]
  | `${number} ${DurationUnit}`
  | EffectDuration

/** The units of a duration string, as Effect names them. */
export type DurationUnit =
  | "nano"
  | "nanos"
  | "micro"
  | "micros"
  | "milli"
  | "millis"
  | "second"
  | "seconds"
  | "minute"
  | "minutes"
  | "hour"
  | "hours"
  | "day"
  | "days"
  | "week"
  | "weeks"

/** An Effect `Duration` as this module reads it (the shape both Effect majors share). */
export interface EffectDuration {
  readonly value:
    | { readonly _tag: "Millis"; readonly millis: number }
    | { readonly _tag: "Nanos"; readonly nanos: bigint }
    | { readonly _tag: "Infinity" }
}

const millisPerUnit: Record<string, number> = {
  nano: 1e-6,
  micro: 1e-3,
  milli: 1,
  second: 1_000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 604_800_000
}

const durationText = /^(-?\d+(?:\.\d+)?)\s+(nano|micro|milli|second|minute|hour|day|week)s?$/

/** A duration input in milliseconds; `undefined`: not one. */
export const readMillis: ReadMillis = (input) => {
  switch (typeof input) {
    case "number":
      return input
    case "bigint":
      return Number(input) / 1e6
    case "string": {
      if (input === "Infinity") return Infinity
      const parsed = durationText.exec(input.trim())
      return parsed === null ? undefined : Number(parsed[1]) * millisPerUnit[parsed[2]]
    }
    case "object": {
      if (input === null) return undefined
      if (Array.isArray(input)) {
        const [seconds, nanos] = input as ReadonlyArray<unknown>
        return input.length === 2 && typeof seconds === "number" && typeof nanos === "number"
          ? seconds * 1_000 + nanos / 1e6
          : undefined
      }
      const value = (input as { readonly value?: unknown }).value
      if (typeof value !== "object" || value === null) return undefined
      const tagged = value as { readonly _tag?: unknown; readonly millis?: unknown; readonly nanos?: unknown }
      if (tagged._tag === "Millis" && typeof tagged.millis === "number") return tagged.millis
      if (tagged._tag === "Nanos" && typeof tagged.nanos === "bigint") return Number(tagged.nanos) / 1e6
      return tagged._tag === "Infinity" ? Infinity : undefined
    }
    default:
      return undefined
  }
}

const shortDuration = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/
const millisPerShortUnit: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }

/**
 * A finite duration as people write one in configuration or on a command
 * line, in milliseconds: `500ms`, `30s`, `2m`, `1h`, or a duration's text
 * (`"30 seconds"`); `undefined`: not one. Every line's `Redlock.parseDuration`.
 */
export const configMillis = (text: string): number | undefined => {
  const short = shortDuration.exec(text)
  if (short !== null) return Number(short[1]) * millisPerShortUnit[short[2]]
  const millis = readMillis(text)
  return millis !== undefined && Number.isFinite(millis) && millis >= 0 ? millis : undefined
}
