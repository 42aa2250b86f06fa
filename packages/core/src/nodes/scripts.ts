/**
 * The Lua scripts run on each node, and their SHA-1 digests for EVALSHA.
 * Each script is atomic on its node: Redis runs it without interleaving.
 *
 * @internal
 */
import { createHash } from "node:crypto"
import { slotsPrefixOf, writerMark } from "../engine/slots.js"

export interface Script {
  readonly lua: string
  readonly sha: string
}

const script = (lua: string): Script => ({ lua, sha: createHash("sha1").update(lua).digest("hex") })

// Durations reach PX and PEXPIRE as whole milliseconds (Redis refuses "12.5"),
// rounded up, whatever the caller sent.
const wholeMillis = `
local function wholeMillis(text)
  return math.ceil(tonumber(text))
end
`

// A lock key that holds another type (a list, a hash ...) is someone's data,
// not a lock: acquiring refuses it with WRONGTYPE, naming the type, before
// anything is written, and leaves it as it is. Called where GET (by pcall)
// answered with an error, or valuesOf found such a key: only that key pays
// for TYPE.
const wrongType = `
local function wrongType(key)
  local kind = redis.call("TYPE", key).ok
  return redis.error_reply("WRONGTYPE lock key " .. key .. " holds a " .. kind .. ", not a lock value (left untouched)")
end
`

// The values of keys as a GET of each would read them (false where free),
// in at most two calls instead of one per key: MGET, then one EXISTS over
// the keys it found empty (MGET reads a key of another type as empty); one
// key is one GET. Returns nil and the first key of another type when there
// is one (the caller answers wrongType). With a record key (a setting
// record), its value is read by the same MGET and returned third. Each call a
// script makes costs the node several µs on top of the command itself: a
// read lock's 16 slots were 16 GETs (bench/README.md).
const valuesOf = `
local function valuesOf(keys, recordKey)
  if #keys == 1 and not recordKey then
    local value = redis.pcall("GET", keys[1])
    if type(value) == "table" then return nil, keys[1] end
    return { value }
  end
  local values, recorded
  if recordKey then
    values = redis.call("MGET", recordKey, unpack(keys))
    recorded = table.remove(values, 1)
  else
    values = redis.call("MGET", unpack(keys))
  end
  local empty = {}
  for i = 1, #keys do
    if not values[i] then empty[#empty + 1] = keys[i] end
  end
  if #empty > 0 and redis.call("EXISTS", unpack(empty)) > 0 then
    for _, key in ipairs(empty) do
      if redis.call("EXISTS", key) == 1 then return nil, key, recorded end
    end
  end
  return values, nil, recorded
end
`

/**
 * Set every key, or none if any holds another value. A key that holds our
 * own value is ours (a late answer of an earlier attempt of the same
 * acquisition): it is set again with the new ttl. ARGV: value, ttl in ms.
 * Returns 1 or 0; a key of another type is a WRONGTYPE error.
 */
export const acquireAll = script(`${wholeMillis}${wrongType}
local value, ttl = ARGV[1], wholeMillis(ARGV[2])
for _, key in ipairs(KEYS) do
  if redis.call("EXISTS", key) == 1 then
    local current = redis.pcall("GET", key)
    if type(current) == "table" then return wrongType(key) end
    if current ~= value then return 0 end
  end
end
for _, key in ipairs(KEYS) do
  redis.call("SET", key, value, "PX", ttl)
end
return 1
`)

/**
 * The keys of a lock key's line of waiters: a sorted set of lock values by
 * ticket, and one of the same values by the end of their lease (server
 * milliseconds). Lock keys never hold a NUL character (resources and the key
 * prefix are checked), so these can never be another resource's lock key.
 *
 * The scripts work them out from the lock key (`lineKeys` below) instead of
 * being sent them: a release then sends what the plain compare-and-delete
 * sends (one key, one value), where naming the line's keys cost 17% more
 * client instructions per lock+unlock at N = 1 (bench/README.md). Redis runs
 * keys a script did not declare on a standalone master; a Redis Cluster runs
 * them when they hash to the script's slot, which they do on a cluster node
 * (clusterKeys.ts: a lock key's hash tag covers the keys derived from it).
 */
// A line's queue key, as the scripts name it (the memory node lists it among a node's keys).
export const queueKey = (line: string): string => line + "\u0000queue"

/**
 * A resource's setting record (`Turn.setting`: a semaphore's limit, a
 * read-write lock's maxReaders), beside its slot keys: a slot's key without
 * its slot number, then "\u0000setting". Worked out from a slot's key, as the
 * line keys are; `undefined` for a key that is no slot's (users' lock keys
 * hold no NUL character). The record is set by a grant with at least the
 * grant's ttl, made to last at least as long by each extension, and deleted
 * by a release that leaves no slot of the resource held on the node: it
 * outlives every holder's key on the node, so two holders inside their
 * validity under different settings would need one node to have recorded
 * both at once.
 */
export const settingKey = (key: string): { readonly record: string; readonly slotsPrefix: string } | undefined => {
  const slotsPrefix = slotsPrefixOf(key)
  return slotsPrefix === undefined ? undefined : { record: slotsPrefix + "\u0000setting", slotsPrefix }
}

// As settingKey, in Lua ("%z" is the NUL character in a Lua 5.1 pattern).
const settingFunctions = `
-- Make a setting record last at least ttl ms from now. Given less, it is
-- given twice that, so that the grants and hand-overs of the next ttl's
-- time write nothing (a contended semaphore's every hand-over renewed it).
local function keepSetting(settingKey, setting, ttl)
  if redis.call("PTTL", settingKey) < ttl then redis.call("SET", settingKey, setting, "PX", 2 * ttl) end
end
local function settingKeys(key)
  -- A user's lock key holds no NUL: one plain search, no pattern, on every lock's release and extension.
  if not string.find(key, "\\0", 1, true) then return nil, nil end
  local slotsPrefix = string.match(key, "^(.*%z%a+)%d+$")
  if slotsPrefix then return slotsPrefix .. "\\0setting", slotsPrefix end
  return nil, nil
end
`

// A key's line, as lineOf (engine/slots.ts) names it: the key's own, or the
// one its resource's slots share. The names in Lua ("\0" is the NUL
// character there too); settingFunctions come first.
const lineKeys = `
local function lineKeys(key)
  local _, slotsPrefix = settingKeys(key)
  local line = slotsPrefix or key
  return line .. "\\0queue", line .. "\\0lease"
end
`

/**
 * How far a waiter's ticket may lie from when the node's clock says the
 * waiter began (its ticket's age, sent with every attempt, subtracted from
 * the node's time), in ms. Tickets are the clients' wall clocks, so that
 * every node orders the same waiters alike; a client whose clock is behind
 * would otherwise come before everyone who joined within its lag, and starve
 * them. Clients whose clocks agree with the servers' within this keep their
 * tickets as they are on every node.
 */
export const ticketSlackMillis = 1000

// Shared by the scripts below: the server's time in ms; drop waiters whose
// lease ended from line i; the first waiter of a line; a newcomer's place.
// Every redis.call costs the node CPU, and a contended lock runs three of
// these scripts per acquisition on every node: each script reads what it
// needs once (the time, a waiter's score) and passes it on.
const queueFunctions = `${wholeMillis}${settingFunctions}${lineKeys}
local function nowMillis()
  local time = redis.call("TIME")
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local function prune(queue, leases, now)
  local ended = redis.call("ZRANGEBYSCORE", leases, "-inf", now)
  for _, member in ipairs(ended) do
    redis.call("ZREM", queue, member)
    redis.call("ZREM", leases, member)
  end
end
-- The first waiter of a line, its ticket and the end of its lease. A member
-- without a lease (its lease set evicted, or left half-written) could never
-- be pruned: it is dropped when it reaches the head.
local function first(queue, leases)
  while true do
    local head = redis.call("ZRANGE", queue, 0, 0, "WITHSCORES")
    if head[1] == nil then return nil, nil, nil end
    local leaseEnd = redis.call("ZSCORE", leases, head[1])
    if leaseEnd then return head[1], tonumber(head[2]), tonumber(leaseEnd) end
    redis.call("ZREM", queue, head[1])
  end
end
-- A waiter's place, and whether it stands in the line already. With its
-- ticket's age (age) the place is worked out again at every attempt: the
-- ticket, bounded to within ticketSlackMillis of when this node's clock says
-- the waiter began, and a waiter standing elsewhere is moved there. Every
-- node then orders the same waiters alike (by ticket, where the clocks
-- agree), however the waiter's places were lost and retaken or in what order
-- the nodes were reached: lines that came to disagree converge at the next
-- attempts, and the first waiter is first on every node it reaches. Without
-- the age (an older client) a place is kept as it was joined: the ticket
-- bounded by the node's time then.
local function placeOf(queue, value, ticket, age, now)
  local kept = redis.call("ZSCORE", queue, value)
  if not age then
    if kept then return tonumber(kept), true end
    return math.min(math.max(ticket, now - ${ticketSlackMillis}), now), false
  end
  local began = now - age
  local place = math.min(math.max(ticket, began - ${ticketSlackMillis}), began + ${ticketSlackMillis})
  if kept and tonumber(kept) ~= place then redis.call("ZADD", queue, place, value) end
  return place, kept ~= false
end
-- Renew a waiter's lease; the line outlives its longest lease, by at most as
-- much again: given less than a lease to live, it is given two, so that the
-- renewals of the next lease's time write nothing (on a contended line
-- every attempt renews).
-- The queue and the leases hold the same waiters (every script adds and
-- removes a waiter in both) and are given their lifetime together: one PTTL
-- tells both.
local function renewLease(queue, leases, value, now, lease)
  redis.call("ZADD", leases, now + lease, value)
  if redis.call("PTTL", queue) < lease then
    redis.call("PEXPIRE", queue, 2 * lease)
    redis.call("PEXPIRE", leases, 2 * lease)
  end
end
-- Join a line at a place (placeOf), or keep the place, and renew the lease.
local function stay(queue, leases, value, place, kept, now, lease)
  if not kept then redis.call("ZADD", queue, place, value) end
  renewLease(queue, leases, value, now, lease)
end
`

/**
 * Acquire in turn (RedisNode.acquireInTurn). KEYS: the lock keys (their
 * lines' keys are worked out from them). ARGV: value, ttl ms, ticket, lease
 * ms (0: take no place, and leave the place held, if any, when refused), then
 * optionally the ticket's age in ms (see placeOf; "" for none) and the
 * setting (see settingKey).
 * Returns { 1 } granted, { 2, pttl } held (the longest pttl; -1 when a key
 * never expires), { 3 } free but not our turn, { 4, recorded } the
 * resource's holders recorded another setting (nothing written). A key of another type is a
 * WRONGTYPE error (nothing written); a key holding our own value (a late
 * answer of an earlier attempt, or handed to us by a release) is ours,
 * whoever joined the line ahead of us since (or a handover would deadlock
 * the two until its lease ends). A waiter's place is its ticket, bounded by
 * the server's time (see placeOf), and it stays in line until it
 * leaves: a grant keeps it too (and renews its lease), so that an attempt
 * refused after a split vote (whose undo keeps the place) is still in line;
 * the release takes it out.
 * Keys that are a resource's slots (a read-write lock's writer takes them
 * all) share one line, visited once, where the writer stands marked as one
 * (see acquireSlot); a writer is never handed a slot (releaseSlots hands
 * them to permits and readers).
 * Lines that are empty cost one EXISTS each.
 */
export const acquireInTurn = script(`${queueFunctions}${wrongType}${valuesOf}
local n = #KEYS
local value, ttl, ticket, lease = ARGV[1], wholeMillis(ARGV[2]), tonumber(ARGV[3]), wholeMillis(ARGV[4])
local age = tonumber(ARGV[5])
local setting = ARGV[6]
local settingKey = settingKeys(KEYS[1])
local member = value
if settingKey then member = value .. "${writerMark}" end
-- The setting record is read with the keys (one MGET), and checked first.
local values, foreign, recorded = valuesOf(KEYS, setting and settingKey)
if recorded and recorded ~= setting then return { 4, recorded } end
if foreign then return wrongType(foreign) end
local held, longest = false, 0
-- Keys that hold our value already: handed to us by a release, or set by a
-- late answer of our own earlier attempt. They are ours whoever stands
-- before us in line now (someone who joined since the handover).
local ours = {}
for i = 1, n do
  local current = values[i]
  ours[i] = current == value and not settingKey
  if current and current ~= value then
    held = true
    local pttl = redis.call("PTTL", KEYS[i])
    if longest ~= -1 and (pttl == -1 or pttl > longest) then longest = pttl end
  end
end
local now = nil
local ourTurn = true
-- Each line once (by the index of its first key): our place in it, and whether we hold it already.
local lines, seen, places, kept = {}, {}, {}, {}
for i = 1, n do
  local queue, leases = lineKeys(KEYS[i])
  if not seen[queue] then
    seen[queue] = true
    lines[#lines + 1] = i
    if redis.call("EXISTS", queue) == 1 then
      now = now or nowMillis()
      prune(queue, leases, now)
      places[i], kept[i] = placeOf(queue, member, ticket, age, now)
      local head, score = first(queue, leases)
      if head ~= nil and head ~= member and not ours[i] and (score < places[i] or (score == places[i] and head < member)) then
        ourTurn = false
      end
    end
  end
end
if not held and ourTurn then
  if setting and settingKey then keepSetting(settingKey, setting, ttl) end
  for i = 1, n do
    redis.call("SET", KEYS[i], value, "PX", ttl)
  end
  -- A waiter granted here stays in line, its lease renewed as by any attempt.
  for _, i in ipairs(lines) do
    if lease > 0 and kept[i] then
      local queue, leases = lineKeys(KEYS[i])
      renewLease(queue, leases, member, now, lease)
    end
  end
  return { 1 }
end
if lease > 0 then
  now = now or nowMillis()
  for _, i in ipairs(lines) do
    local queue, leases = lineKeys(KEYS[i])
    if places[i] == nil then places[i], kept[i] = placeOf(queue, member, ticket, age, now) end
    stay(queue, leases, member, places[i], kept[i], now, lease)
  end
else
  -- A refused waiter that takes no place leaves the one it had: a key is
  -- never handed to a waiter that no longer waits in line.
  for _, i in ipairs(lines) do
    if kept[i] then
      local queue, leases = lineKeys(KEYS[i])
      redis.call("ZREM", queue, member)
      redis.call("ZREM", leases, member)
    end
  end
end
if held then return { 2, longest } end
return { 3 }
`)

/**
 * Acquire one of a resource's slots in turn (RedisNode.acquireSlot). KEYS:
 * every slot key of the resource, in the order the client tries them. ARGV
 * as acquireInTurn's (value, ttl ms, ticket, lease ms, age or "", setting).
 * The slot that holds our value already (a late answer of an earlier
 * attempt) is taken again; else the first free one, when our turn: fewer
 * waiters stand before us in the resource's line (shared by its slots) than
 * slots are free, and none of them is a writer (marked, see acquireInTurn),
 * who needs every slot. A grant leaves the line: a waiter behind counts the
 * slots left free, not those held. Returns { 1, slot } (the slot's index in
 * KEYS, from 0), { 2, pttl } every slot held (the soonest pttl; -1 when none
 * expires), { 3 } not our turn, { 4, recorded } as acquireInTurn. One call
 * per node is a permit's whole round.
 */
export const acquireSlot = script(`${queueFunctions}${wrongType}${valuesOf}
local n = #KEYS
local value, ttl, ticket, lease = ARGV[1], wholeMillis(ARGV[2]), tonumber(ARGV[3]), wholeMillis(ARGV[4])
local age, setting = tonumber(ARGV[5]), ARGV[6]
local settingKey = settingKeys(KEYS[1])
-- The setting record is read with the slots (one MGET), and checked first.
local values, foreign, recorded = valuesOf(KEYS, setting and settingKey)
if recorded and recorded ~= setting then return { 4, recorded } end
if foreign then return wrongType(foreign) end
local queue, leases = lineKeys(KEYS[1])
local function grant(i)
  if setting and settingKey then keepSetting(settingKey, setting, ttl) end
  redis.call("SET", KEYS[i], value, "PX", ttl)
  if redis.call("ZREM", queue, value) == 1 then redis.call("ZREM", leases, value) end
  return { 1, i - 1 }
end
local free = {}
for i = 1, n do
  local current = values[i]
  if current == value then return grant(i) end
  if not current then free[#free + 1] = i end
end
local now, place, kept = nil, nil, false
if redis.call("EXISTS", queue) == 1 then
  now = nowMillis()
  -- Who else stands in line matters only when a slot is free; with every slot held, the
  -- release that frees one prunes before it hands it.
  if #free > 0 then prune(queue, leases, now) end
  place, kept = placeOf(queue, value, ticket, age, now)
end
if #free > 0 then
  if place == nil then return grant(free[1]) end
  -- Those before us, as far as it matters: as many as slots are free, and ourselves.
  local before = redis.call("ZRANGEBYSCORE", queue, "-inf", place, "WITHSCORES", "LIMIT", 0, #free + 1)
  local ahead, writerAhead = 0, false
  for j = 1, #before, 2 do
    local waiter, score = before[j], tonumber(before[j + 1])
    if waiter ~= value and (score < place or waiter < value) then
      ahead = ahead + 1
      if string.sub(waiter, -2) == "${writerMark}" then writerAhead = true end
    end
  end
  if ahead < #free and not writerAhead then return grant(free[1]) end
end
if lease > 0 then
  now = now or nowMillis()
  if place == nil then place, kept = placeOf(queue, value, ticket, age, now) end
  stay(queue, leases, value, place, kept, now, lease)
elseif kept then
  redis.call("ZREM", queue, value)
  redis.call("ZREM", leases, value)
end
if #free > 0 then return { 3 } end
local soonest = -1
for i = 1, n do
  local pttl = redis.call("PTTL", KEYS[i])
  if pttl >= 0 and (soonest == -1 or pttl < soonest) then soonest = pttl end
end
return { 2, soonest }
`)

/** Where a release of a key is announced, for waiters (`PUBLISH` to this prefix + the key). */
export const releaseChannelPrefix = "redlock-released:"

// An announcement on the release channel of a key (a lock key, or a
// resource's slots' prefix); returns whether it was published (1 or 0). The
// PUBLISH is best effort: a user the ACLs refuse it (Redis 7 checks them
// inside scripts) still releases. Where the releasing process's own
// connection hears the channel (ARGV[4] "1", see releaseOwned) it is sent
// only when some other connection hears it too (counted first): that
// process reads the reply. Where it does not ("0"), it is sent, and counts
// as published only if it reached someone (a standalone server's count is
// exact). No count given (a cluster): sent and counted as published.
const publishFunction = `
local ownSubscribers = tonumber(ARGV[4])
local function publish(key, message)
  local channel = "${releaseChannelPrefix}" .. key
  if ownSubscribers and ownSubscribers > 0 then
    -- An error (an ACL without pub/sub) is a table without a count: then PUBLISH is tried.
    local counted = redis.pcall("PUBSUB", "NUMSUB", channel)
    local count = type(counted) == "table" and tonumber(counted[2])
    if count and count <= ownSubscribers then return 0 end
  end
  if redis.pcall("PUBLISH", channel, message) == 0 and ownSubscribers then return 0 end
  return 1
end
`

/**
 * The answers of the release of one plain lock key that nobody waits for in
 * line (a number, where the general path answers a list): 0 not ours, 1
 * deleted, `plainReleaseAnnounced` deleted and announced with no one named
 * but not published, `plainReleasePublished` the same, published.
 */
export const plainReleaseAnnounced = 2
export const plainReleasePublished = 3

// The release of one plain lock key that nobody waits for in line, the path
// of every uncontended lock: it returns before the script defines the
// functions of the general path below (Redis runs a script's whole top level
// on each call, and each definition costs the server time), with a number
// (a list costs the server and the client more). It does what the general
// path does for such a key: delete the key if it holds our value, and
// announce it (no one is first in line: message "") when asked to.
const plainRelease = `
if #KEYS == 1 and not string.find(KEYS[1], "\\0", 1, true) and redis.call("EXISTS", KEYS[1] .. "\\0queue") == 0 then
  if redis.pcall("GET", KEYS[1]) ~= ARGV[1] then return 0 end
  redis.call("DEL", KEYS[1])
  if (ARGV[2] or "1") ~= "1" then return 1 end
  return ${plainReleaseAnnounced} + publish(KEYS[1], "")
end
`

/**
 * Delete each key that holds our value, and take our value out of its line of
 * waiters. The message on the key's release channel names the waiter now
 * first in line ("" for none); it is sent when ARGV[2] is "1" and the key was
 * deleted, or when we were first in line and the key is free. When ARGV[3] is
 * "1" (a refused attempt's undo), only the keys are deleted: the line and the
 * channel are left alone. A key of another type is not ours and is left alone
 * (pcall turns GET's WRONGTYPE error into a value). KEYS: the lock keys (their
 * lines' keys are worked out from them). ARGV: value, then announce and keep
 * place, both "1" or "0" (a value alone: announce, do not keep the place, as
 * a plain compare-and-delete does), then how many subscribers of the
 * channels announced on are the releasing process's own connection ("1" or
 * "0"; none: publish always). Returns a list: the number of keys deleted,
 * then each announcement made, as the key it was made for, its message and
 * whether it was published (one plain key nobody waited for in line: a
 * number instead, see plainReleaseAnnounced). The releasing process tells
 * its own waiters from the reply (driverNode.ts), without waiting for the
 * channel, so a PUBLISH that only its own connection would hear (`PUBSUB
 * NUMSUB`: exact on a standalone server, whose PUBLISH reaches no other
 * server's subscribers; the caller sends no count for a cluster) is not
 * sent: no message crosses the wire for a hand-over between waiters of one
 * process.
 *
 * Handover: a key we freed (or found free when we were first in line) while
 * others wait in line is set to the value of the waiter now first, for what
 * is left of its lease, instead of staying free. That waiter's next attempt
 * finds its own value, which is its (acquireInTurn); anyone else finds the
 * key held, so a newcomer's plain SET NX (the uncontended first attempt, see
 * RedisNode.acquire) cannot take the lock ahead of the line. No lock is held
 * by it: the waiter holds the lock only once its attempt set the key with its
 * ttl on a quorum, as any attempt.
 *
 * A resource's slots (KEYS: a permit's or a reader's slot, a writer's every
 * read slot, or every slot of a waiter that leaves) are released by
 * releaseSlots below.
 */
export const releaseOwned = script(`${publishFunction}${plainRelease}${queueFunctions}
-- An announcement (see publish) added to the reply: the key, the message, whether it was published.
local function announced(reply, key, message)
  local published = publish(key, message)
  reply[#reply + 1] = key
  reply[#reply + 1] = message
  reply[#reply + 1] = published
end

-- A resource's slots: every slot key that holds our value is deleted (a slot
-- handed to us that we never counted goes too), our place (plain or a
-- writer's) leaves the line, and the free slots are handed over: to each of
-- the first waiters in line, up to a writer, one free slot (the ones freed
-- here first), set to the waiter's value with its ttl, the waiter taken out
-- of the line. A waiter's value carries its ttl and setting (engine
-- slots.ts, handableValue); one without them (an older client), or with
-- another setting than the one recorded, is only named. One announcement per
-- release, on the line's channel, names those waiters: "value/slot" for a
-- handed slot, the value alone to wake one. The setting record goes with the
-- last slot held here.
local function releaseSlots(value, announces, keepsPlace, settingKey, slotsPrefix, reply)
  local setting = redis.call("GET", settingKey)
  local slotKeys = KEYS
  if setting then
    slotKeys = {}
    for slot = 0, tonumber(setting) - 1 do slotKeys[slot + 1] = slotsPrefix .. slot end
  end
  local values = redis.call("MGET", unpack(slotKeys))
  local deleted, free, holders = 0, {}, {}
  for i, key in ipairs(slotKeys) do
    if values[i] == value then
      redis.call("DEL", key)
      deleted = deleted + 1
      free[#free + 1] = i
    elseif values[i] then
      holders[values[i]] = true
    end
  end
  for i = 1, #slotKeys do
    if not values[i] then free[#free + 1] = i end
  end
  local function dropRecordIfIdle()
    if setting and #free == #slotKeys then redis.call("DEL", settingKey) end
  end
  reply[1] = deleted
  if keepsPlace then
    dropRecordIfIdle()
    return reply
  end
  local queue, leases = lineKeys(KEYS[1])
  if redis.call("EXISTS", queue) == 0 then
    dropRecordIfIdle()
    if deleted > 0 and announces then announced(reply, slotsPrefix, "") end
    return reply
  end
  local writer = value .. "${writerMark}"
  local left = redis.call("ZREM", queue, value, writer)
  -- A holder granted its slot left the line then, lease and all (acquireSlot's grant): nothing more to remove.
  if left > 0 then redis.call("ZREM", leases, value, writer) end
  if not ((deleted > 0 and announces) or (left > 0 and (#free > 0 or not setting))) then
    dropRecordIfIdle()
    return reply
  end
  prune(queue, leases, nowMillis())
  local names = {}
  local count = #free
  if not setting then count = math.max(count, 1) end
  local handed = 0
  if count > 0 then
    for _, waiter in ipairs(redis.call("ZRANGE", queue, 0, count - 1)) do
      if string.sub(waiter, -2) == "${writerMark}" then
        names[#names + 1] = string.sub(waiter, 1, -3)
        break
      end
      local name = waiter
      local ttl, waiterSetting = string.match(waiter, "^[%w_-]+%.(%d+)%.(%d+)$")
      local slot = free[handed + 1]
      -- SET NX: a slot key of another type (someone's data) is left as it is.
      if slot and ttl and waiterSetting == setting and not holders[waiter] and
        redis.call("SET", slotKeys[slot], waiter, "PX", ttl, "NX") then
        handed = handed + 1
        redis.call("ZREM", queue, waiter)
        redis.call("ZREM", leases, waiter)
        keepSetting(settingKey, setting, tonumber(ttl))
        name = waiter .. "/" .. string.match(slotKeys[slot], "(%d+)$")
      end
      names[#names + 1] = name
    end
  end
  if handed == 0 then dropRecordIfIdle() end
  announced(reply, slotsPrefix, table.concat(names, " "))
  return reply
end

local value = ARGV[1]
local announces, keepsPlace = (ARGV[2] or "1") == "1", ARGV[3] == "1"
local settingKey, slotsPrefix = settingKeys(KEYS[1])
local reply = {0}
if slotsPrefix then return releaseSlots(value, announces, keepsPlace, settingKey, slotsPrefix, reply) end
local deleted = 0
for _, key in ipairs(KEYS) do
  local queue, leases = lineKeys(key)
  local freed = false
  if redis.pcall("GET", key) == value then
    redis.call("DEL", key)
    deleted = deleted + 1
    freed = true
  end
  local announce = freed and announces
  local nextWaiter = ""
  if not keepsPlace and redis.call("EXISTS", queue) == 1 then
    local now = nowMillis()
    prune(queue, leases, now)
    -- Whether we were first matters only when this release announces nothing yet.
    local wasFirst = false
    if not announce then wasFirst = first(queue, leases) == value end
    redis.call("ZREM", queue, value)
    redis.call("ZREM", leases, value)
    local head, _, leaseEnd = first(queue, leases)
    nextWaiter = head or ""
    local free = freed or redis.call("EXISTS", key) == 0
    if wasFirst and free then announce = true end
    if free and (freed or wasFirst) and head ~= nil and leaseEnd - now > 0 then
      redis.call("SET", key, head, "PX", leaseEnd - now)
    end
  end
  if announce then announced(reply, key, nextWaiter) end
end
reply[1] = deleted
return reply
`)

/**
 * New ttl on every key, only if all hold our value; a slot's setting record
 * is made to last as long. ARGV: value, ttl in ms. Returns 1 or 0.
 */
export const extendOwned = script(`${wholeMillis}${settingFunctions}
local ttl = wholeMillis(ARGV[2])
for _, key in ipairs(KEYS) do
  if redis.call("GET", key) ~= ARGV[1] then return 0 end
end
for _, key in ipairs(KEYS) do
  redis.call("PEXPIRE", key, ttl)
end
local settingKey = settingKeys(KEYS[1])
if settingKey then
  local pttl = redis.call("PTTL", settingKey)
  if pttl >= 0 and pttl < ttl then redis.call("PEXPIRE", settingKey, ttl) end
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
 * If every lock key holds our value, advance each counter and return the new
 * counts as the counters' own strings: Lua numbers are doubles, which lose
 * digits beyond 2^53 and print in exponent notation from 10^14.
 *
 * A counter advances to the larger of its count + 1 and the server's time in
 * microseconds (a hybrid logical clock): a counter lost in an empty restart
 * starts again from the time, which is past every token issued before the
 * restart once the node has sat out its quarantine (docs/safety.md, "Fencing
 * tokens"). Decimal strings are compared length first, so nothing is lost.
 */
export const incrementFences = script(`
local n = #KEYS / 2
for i = 1, n do
  if redis.call("GET", KEYS[i]) ~= ARGV[1] then return false end
end
local time = redis.call("TIME")
local nowMicros = time[1] .. string.format("%06d", tonumber(time[2]))
local counts = {}
for i = 1, n do
  redis.call("INCR", KEYS[n + i])
  local count = redis.call("GET", KEYS[n + i])
  if #nowMicros > #count or (#nowMicros == #count and nowMicros > count) then
    redis.call("SET", KEYS[n + i], nowMicros)
    count = nowMicros
  end
  counts[i] = count
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
 * holder writing again); returns 1, else { highest token seen } (a string in
 * a list: a client that reads integers as strings still tells them apart).
 */
export const fencedSet = script(`
local highest = redis.call("GET", KEYS[2]) or "0"
local token = ARGV[2]
if #token > #highest or (#token == #highest and token >= highest) then
  redis.call("SET", KEYS[1], ARGV[1])
  redis.call("SET", KEYS[2], token)
  return 1
end
return { highest }
`)

/**
 * A voting script that also answers the server's `TIME`, read once the vote
 * has run: `{ seconds, microseconds, the vote's reply }` (serverClock.ts).
 * The reading comes with the vote it may invalidate, in one command, where a
 * `TIME` sent behind it would be a second command (and promise) per vote
 * (the one-key acquire, a native SET NX PX, has one: a script costs the
 * server more than SET and TIME do, bench/README.md).
 * An error reply is answered as it is. A reply of `false` ends the list
 * after the time (Redis ends an array at the first nil).
 */
const timed = (voting: Script): Script =>
  script(`local function vote()
${voting.lua}
end
local reply = vote()
if type(reply) == "table" and reply.err then return reply end
local now = redis.call("TIME")
return { now[1], now[2], reply }
`)

/** The scripts whose answer may count toward a quorum: an acquire, an extension, a fencing round. */
const votingScripts: ReadonlyArray<Script> = [
  acquireAll,
  acquireInTurn,
  acquireSlot,
  extendOwned,
  incrementFences,
  commitFences
]

const timedScripts = new Map<Script, Script>(votingScripts.map((voting) => [voting, timed(voting)]))

/** Whether a script's answer may count toward a quorum (an acquire, an extension, a fencing round), not only release or read. */
export const castsVote = (script: Script): boolean => script !== releaseOwned && script !== inspectKey

/** The `timed` form of a voting script; `undefined` for one that casts no vote (a release, an inspection). */
export const timedForm = (script: Script): Script | undefined => timedScripts.get(script)

/**
 * Every script a lock node runs, loaded on each connection (see
 * loadedScripts.ts): with `timedVotes`, the voting ones in their `timed` form.
 */
export const nodeScripts = (timedVotes: boolean): ReadonlyArray<Script> =>
  timedVotes ? [...timedScripts.values(), releaseOwned, inspectKey] : [...votingScripts, releaseOwned, inspectKey]
