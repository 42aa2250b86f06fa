/**
 * The Lua scripts run on each node, and their SHA-1 digests for EVALSHA.
 * Each script is atomic on its node: Redis runs it without interleaving.
 *
 * @internal
 */
import { createHash } from "node:crypto"

export interface Script {
  readonly lua: string
  readonly sha: string
}

const script = (lua: string): Script => ({ lua, sha: createHash("sha1").update(lua).digest("hex") })

/** Set every key, or none if any exists. ARGV: value, ttl in ms. Returns 1 or 0. */
export const acquireAll = script(`
for _, key in ipairs(KEYS) do
  if redis.call("EXISTS", key) == 1 then return 0 end
end
for _, key in ipairs(KEYS) do
  redis.call("SET", key, ARGV[1], "PX", ARGV[2])
end
return 1
`)

/** Where a release of a key is announced, for waiters (`PUBLISH` to this prefix + the key). */
export const releaseChannelPrefix = "redlock-released:"

/**
 * Delete each key that holds our value, and announce each deletion on the
 * key's release channel when ARGV[2] is "1". A key of another type is not ours
 * and is left alone (pcall turns GET's WRONGTYPE error into a value). ARGV:
 * value, announce. Returns the number of keys deleted.
 */
export const releaseOwned = script(`
local deleted = 0
for _, key in ipairs(KEYS) do
  if redis.pcall("GET", key) == ARGV[1] then
    redis.call("DEL", key)
    if ARGV[2] == "1" then redis.call("PUBLISH", "${releaseChannelPrefix}" .. key, "") end
    deleted = deleted + 1
  end
end
return deleted
`)

/** New ttl on every key, only if all hold our value. ARGV: value, ttl in ms. Returns 1 or 0. */
export const extendOwned = script(`
for _, key in ipairs(KEYS) do
  if redis.call("GET", key) ~= ARGV[1] then return 0 end
end
for _, key in ipairs(KEYS) do
  redis.call("PEXPIRE", key, ARGV[2])
end
return 1
`)

/** { pttl, value }: value is missing from the reply when the key is. */
export const inspectKey = script(`
local value = redis.call("GET", KEYS[1])
return { redis.call("PTTL", KEYS[1]), value }
`)

/**
 * KEYS: the lock keys, then one fence counter per lock key. ARGV: value.
 * If every lock key holds our value, INCR each counter and return the new
 * counts as strings (exact beyond 2^53); otherwise nil.
 */
export const incrementFences = script(`
local n = #KEYS / 2
for i = 1, n do
  if redis.call("GET", KEYS[i]) ~= ARGV[1] then return false end
end
local counts = {}
for i = 1, n do
  counts[i] = tostring(redis.call("INCR", KEYS[n + i]))
end
return counts
`)

/**
 * KEYS as incrementFences. ARGV: value, then one token per counter (decimal).
 * If every lock key holds our value, raise each counter to at least its
 * token and return 1; otherwise 0. Tokens are compared as decimal strings of
 * whole numbers (length first), so no precision is lost.
 */
export const commitFences = script(`
local n = #KEYS / 2
for i = 1, n do
  if redis.call("GET", KEYS[i]) ~= ARGV[1] then return 0 end
end
for i = 1, n do
  local current = redis.call("GET", KEYS[n + i]) or "0"
  local token = ARGV[i + 1]
  if #token > #current or (#token == #current and token > current) then
    redis.call("SET", KEYS[n + i], token)
  end
end
return 1
`)

/**
 * A write fenced by a token. KEYS: the data key, the key of the highest token
 * seen for it. ARGV: the value, the token (decimal). Writes and records the
 * token only if it is not below any token seen (an equal token is the same
 * holder writing again); returns 1, else the highest token seen (as a string).
 */
export const fencedSet = script(`
local highest = redis.call("GET", KEYS[2]) or "0"
local token = ARGV[2]
if #token > #highest or (#token == #highest and token >= highest) then
  redis.call("SET", KEYS[1], ARGV[1])
  redis.call("SET", KEYS[2], token)
  return 1
end
return highest
`)
