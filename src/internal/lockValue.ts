/** @internal */
import { randomBytes } from "node:crypto"
import * as Effect from "effect/Effect"

/**
 * A fresh lock value: 160 bits from the operating system's cryptographic
 * source (as the reference's 20 bytes of /dev/urandom), never Effect's seeded
 * `Random`, so that no other client can guess or repeat it.
 */
export const make: Effect.Effect<string> = Effect.sync(() => randomBytes(20).toString("base64url"))
