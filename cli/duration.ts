/**
 * Durations as people type them on a command line: `500ms`, `30s`, `2m`,
 * `1h`, or anything Effect's `Duration` accepts (`"30 seconds"`).
 */
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"

const units: Record<string, (n: number) => Duration.Duration> = {
  ms: Duration.millis,
  s: Duration.seconds,
  m: Duration.minutes,
  h: Duration.hours
}

export const parse = (text: string): Option.Option<Duration.Duration> => {
  const short = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/.exec(text)
  if (short !== null) return Option.some(units[short[2]](Number(short[1])))
  return Option.filter(Duration.decodeUnknown(text), Duration.isFinite)
}
