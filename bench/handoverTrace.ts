/**
 * Diagnostic: where an N = 1 hand-over's time goes, from outside the
 * library. The semaphore workload of bench/semaphores.ts at N = 1 (promise
 * code, in line: 8 managers, 3 permits, 1 ms hold, one redis-server), each
 * hand-over followed from the holder's body end to the next holder's body
 * start: the release sent (ioredis `sendCommand`), written (the turn's
 * batched write, a tick later), its reply read (the socket's data event),
 * answered (the command's promise), and the next body. The next holder is
 * the one the release's answer names as handed a slot (`value/slot`). With
 * `--pin`, the server and this process run on cores of their own (cores.ts):
 * on a machine of two cores, compare with and without.
 *
 * `npm run bench:handover-trace [-- --seconds S --pin]`
 */
import * as Net from "node:net"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { Redis } from "ioredis"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Scripts from "@effect-redlock/core/nodes/scripts.js"
import { makeRedlock, retry } from "effect-redlock/Promise"
import { pinApart } from "./cores.js"
import { percentile } from "./scenarios.js"

const flag = (name: string): string | undefined => {
  const index = process.argv.indexOf(`--${name}`)
  return index >= 0 ? process.argv[index + 1] : undefined
}
const seconds = Number(flag("seconds") ?? 4)
const pin = process.argv.includes("--pin")

/** What was seen of one permit, by its lock value (ms, `performance.now()`). */
interface Trace {
  start?: number
  end?: number
  sent?: number
  written?: number
  read?: number | undefined
  answered?: number
  /** The holder whose release handed this permit its slot. */
  handedBy?: string
}

let tracing = false
const traces = new Map<string, Trace>()
const traceOf = (value: string): Trace => {
  let trace = traces.get(value)
  if (trace === undefined) traces.set(value, trace = {})
  return trace
}

// Every socket's data events, in order: a reply is read at the last one before its promise settles.
const dataEvents: Array<number> = []
const emit = Net.Socket.prototype.emit as (this: Net.Socket, event: string | symbol, ...args: Array<unknown>) => boolean
Net.Socket.prototype.emit = function(this: Net.Socket, event: string | symbol, ...args: Array<unknown>) {
  if (tracing && event === "data") dataEvents.push(performance.now())
  return emit.call(this, event, ...args)
} as typeof Net.Socket.prototype.emit
const lastDataBefore = (at: number): number | undefined => {
  let low = 0
  let high = dataEvents.length - 1
  if (high < 0 || dataEvents[0] > at) return undefined
  while (low < high) {
    const middle = (low + high + 1) >> 1
    if (dataEvents[middle] <= at) low = middle
    else high = middle - 1
  }
  return dataEvents[low]
}

// A release: an EVALSHA of releaseOwned, whose wire form the driver builds (its bulk strings: evalsha, sha, numkeys, key, value).
const bulkStrings = (wire: string): Array<string> => {
  const parts = wire.split("\r\n")
  const strings: Array<string> = []
  for (let index = 1; index + 1 < parts.length; index += 2) strings.push(parts[index + 1])
  return strings
}
const sendCommand = Redis.prototype.sendCommand
Redis.prototype.sendCommand = function(this: Redis, command: Parameters<Redis["sendCommand"]>[0], stream?: unknown) {
  const result = sendCommand.call(this, command, stream as never)
  const wire = tracing ? (command as unknown as { toWritable: () => unknown }).toWritable() : undefined
  if (typeof wire === "string" && wire.includes(Scripts.releaseOwned.sha)) {
    const strings = bulkStrings(wire)
    const trace = traceOf(strings[4])
    trace.sent = performance.now()
    process.nextTick(() => void (trace.written = performance.now()))
    command.promise.then((reply) => {
      trace.answered = performance.now()
      trace.read = lastDataBefore(trace.answered)
      for (const announcement of (reply as Array<unknown>).slice(1)) {
        for (const name of String(announcement).split(" ")) {
          const slash = name.lastIndexOf("/")
          if (slash > 0) traceOf(name.slice(0, slash)).handedBy = strings[4]
        }
      }
    }, () => {})
  }
  return result
} as typeof sendCommand

const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

const program = Effect.gen(function*() {
  const fleet = yield* RedisFleet.RedisFleet
  const server = fleet.servers[0]
  if (pin) console.error(pinApart([server.pid()]))
  return yield* Effect.promise(async () => {
    const options = { limit: 3, ttl: 10_000, retry: retry({ delay: Duration.millis(10), times: 1000 }) }
    const managers = await Promise.all(
      Array.from(
        { length: 8 },
        () => makeRedlock([{ host: "127.0.0.1", port: server.port }], { restartQuarantine: false })
      )
    )
    const run = async (millis: number) => {
      const end = performance.now() + millis
      await Promise.all(managers.map(async (manager) => {
        while (performance.now() < end) {
          await manager.usingPermit("bench:handover", options, async (permit) => {
            if (tracing) traceOf(permit.value).start = performance.now()
            await sleep(1)
            if (tracing) traceOf(permit.value).end = performance.now()
          })
        }
      }))
    }
    await run(3000)
    tracing = true
    const start = performance.now()
    await run(seconds * 1000)
    const elapsed = performance.now() - start
    tracing = false
    await Promise.all(managers.map((manager) => manager.close()))
    return elapsed
  })
})

const elapsed = await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(1))))
const segments: Record<string, Array<number>> = {
  "body end -> release sent": [],
  "sent -> written": [],
  "written -> reply read (the round trip, script included)": [],
  "reply read -> answered": [],
  "answered -> next holder's body": [],
  "the whole gap": []
}
let permits = 0
for (const trace of traces.values()) {
  if (trace.start !== undefined) permits++
  const holder = trace.handedBy === undefined ? undefined : traces.get(trace.handedBy)
  if (holder === undefined || trace.start === undefined) continue
  const { answered, end, read, sent, written } = holder
  if (
    end === undefined || sent === undefined || written === undefined || read === undefined || answered === undefined
  ) continue
  segments["body end -> release sent"].push(sent - end)
  segments["sent -> written"].push(written - sent)
  segments["written -> reply read (the round trip, script included)"].push(read - written)
  segments["reply read -> answered"].push(answered - read)
  segments["answered -> next holder's body"].push(trace.start - answered)
  segments["the whole gap"].push(trace.start - end)
}
const micros = (millis: number) => (millis * 1000).toFixed(0).padStart(5)
console.log(
  `${Math.round(permits / (elapsed / 1000))} permits/s${
    pin ? " (pinned: the server and the client on cores of their own)" : ""
  }`
)
console.log(`hand-overs traced: ${segments["the whole gap"].length}; µs:  p10   p50   p90`)
for (const [name, values] of Object.entries(segments)) {
  console.log(
    `  ${name.padEnd(58)} ${micros(percentile(values, 10))} ${micros(percentile(values, 50))} ${
      micros(percentile(values, 90))
    }`
  )
}
process.exit(0)
