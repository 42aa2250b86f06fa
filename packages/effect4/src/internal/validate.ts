/**
 * The option checks of engine/options.ts with this shell's `Duration` and
 * `InvalidOptions`.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Options from "@effect-redlock/core/engine/options.js"
import { InvalidOptions } from "./errors.js"

/** A Duration input in milliseconds (`undefined`: not one). */
export const readMillis: Options.ReadMillis = (input) => {
  const duration = Duration.fromInput(input as Duration.Input)
  return Option.isSome(duration) ? Duration.toMillis(duration.value) : undefined
}

export const invalid = (option: string, detail: string): InvalidOptions => new InvalidOptions({ option, detail })

/** A checked value, or its problem as InvalidOptions. */
export const check = <A>(value: A | Options.Problem): Effect.Effect<A, InvalidOptions> =>
  value instanceof Options.Problem ? Effect.fail(invalid(value.option, value.detail)) : Effect.succeed(value)
