/** @internal */
import * as Effect from "effect/Effect"
import { randomFillSync } from "node:crypto"

const valueBytes = 20
// One call to the OS for many lock values: the bytes are as random, the calls far fewer.
const pool = Buffer.alloc(valueBytes * 256)
let used = pool.length

/**
 * A fresh lock value: 160 bits from the operating system's cryptographic
 * source (as the reference's 20 bytes of /dev/urandom), never Effect's seeded
 * `Random`, so that no other client can guess or repeat it. Each value's
 * bytes are used once.
 */
export const unsafeMake = (): string => {
  if (used + valueBytes > pool.length) {
    randomFillSync(pool)
    used = 0
  }
  const value = pool.toString("base64url", used, used + valueBytes)
  used += valueBytes
  return value
}

export const make: Effect.Effect<string> = Effect.sync(unsafeMake)
