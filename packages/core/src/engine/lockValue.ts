/**
 * Lock values: 168 bits from the operating system's cryptographic source
 * (the reference takes 20 bytes of /dev/urandom), never a seeded random
 * source, so that no other client can guess or repeat one.
 *
 * @internal
 */
import { randomFillSync } from "node:crypto"

// 21 bytes are 28 base64url characters exactly (3 bytes to 4), so one
// encoding of a pool of them cuts into whole values: one call to the OS and
// one encoding for 256 values, the bytes as random.
const valueBytes = 21
const valueChars = 28
const valuesPerPool = 256
const pool = Buffer.alloc(valueBytes * valuesPerPool)
let encoded = ""
let used = valuesPerPool

/** A fresh lock value; each value's bytes are used once. */
export const make = (): string => {
  if (used === valuesPerPool) {
    randomFillSync(pool)
    encoded = pool.toString("base64url")
    used = 0
  }
  const value = encoded.slice(used * valueChars, (used + 1) * valueChars)
  used++
  return value
}
