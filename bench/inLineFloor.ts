/**
 * The floor of a fair in-line semaphore over our scripts, N = 1: the least
 * client code that does on the wire what our permits do in the semaphore
 * workload — one `acquireSlot` that takes a place in line when refused, a
 * slot handed over by a release and told from the release's answer (as our
 * node tells the waiters of its own process), one `releaseOwned` — sent by a
 * plain ioredis client. No engine and no node layer: no validity, no
 * lost-lock signal, no retry schedule, no per-node timeout, no typed errors,
 * and waiters of this process only (no release channel). Not a way to use
 * the library: what any client of this design spends per permit, so that the
 * table shows which part of the gap to redis-semaphore's polling `Semaphore`
 * is the design's (its scripts, waiting in line) and which the library's.
 */
import { Redis } from "ioredis"
import * as Slots from "@effect-redlock/core/engine/slots.js"
import * as LockValue from "@effect-redlock/core/engine/lockValue.js"
import * as Options from "@effect-redlock/core/engine/options.js"
import * as Scripts from "@effect-redlock/core/nodes/scripts.js"
import type { SemaphoreContender } from "./semaphores.js"

/**
 * How long a refused waiter keeps its place in line; it attempts again
 * (renewing it) after half of it if no release told it anything (a release
 * told to nobody: its own hand-over came before it listened, or another
 * process released).
 */
const leaseMillis = 1000

/** What a release told a waiter: the slot it was handed (its number), or `undefined`: attempt again. */
type Told = (slot: number | undefined) => void

/** The waiters of one line in this process, by lock value, and hand-overs told before their waiter listened. */
class Line {
  readonly waiters = new Map<string, Told>()
  readonly handedEarly = new Map<string, number>()
  users = 0

  /** A release's answer: its deleted count, then each announcement as key, message and whether it was published. */
  tell(reply: ReadonlyArray<unknown>): void {
    for (let index = 1; index + 2 < reply.length; index += 3) {
      const message = String(reply[index + 1])
      // A release that names nobody: every waiter attempts again.
      if (message === "") {
        for (const told of [...this.waiters.values()]) told(undefined)
        continue
      }
      for (const name of message.split(" ")) {
        const slash = name.indexOf("/")
        const value = slash === -1 ? name : name.slice(0, slash)
        const slot = slash === -1 ? undefined : Number(name.slice(slash + 1))
        const told = this.waiters.get(value)
        if (told !== undefined) told(slot)
        else if (slot !== undefined) this.handedEarly.set(value, slot)
      }
    }
  }
}

const lines = new Map<string, Line>()

/**
 * The keys of a resource's `limit` permit slots as the library names them
 * under its default key prefix: the scripts read only that form as slots
 * (the setting record, one line for all of them).
 */
export const librarySlotKeys = (key: string, limit: number): Array<string> =>
  Array.from({ length: limit }, (_, slot) => `redlock:${Options.slotResource(key, slot, "permit")}`)

/** The contender on `limit` slots with `ttlMillis` (those of the semaphore workload). */
export const inLineFloor = (limit: number, ttlMillis: number): SemaphoreContender => ({
  name: "effect-redlock's scripts in line over plain ioredis (no engine, no node layer), N = 1",
  nodes: 1,
  start: async (ports, key) => {
    const redis = new Redis({ host: "127.0.0.1", port: ports[0]! })
    await redis.script("LOAD", Scripts.acquireSlot.lua)
    await redis.script("LOAD", Scripts.releaseOwned.lua)
    // The library's slot keys and the setting they are acquired under.
    const slots = librarySlotKeys(key, limit)
    const setting = String(limit)
    const lineName = `${ports[0]}|${key}`
    const line = lines.get(lineName) ?? new Line()
    lines.set(lineName, line)
    line.users++

    const attempt = (value: string, ticket: number, start: number): Promise<Array<number>> =>
      redis.evalsha(
        Scripts.acquireSlot.sha,
        slots.length,
        ...slots,
        value,
        ttlMillis,
        ticket,
        leaseMillis,
        Math.floor(performance.now() - start),
        setting
      ) as Promise<Array<number>>
    // Until a release tells this waiter something, or half its lease passed.
    const told = (value: string): Promise<number | undefined> =>
      new Promise((resolve) => {
        const timer = setTimeout(() => {
          line.waiters.delete(value)
          resolve(undefined)
        }, leaseMillis / 2)
        line.waiters.set(value, (slot) => {
          clearTimeout(timer)
          line.waiters.delete(value)
          resolve(slot)
        })
      })
    const acquire = async (value: string): Promise<number> => {
      const ticket = Date.now()
      const start = performance.now()
      for (;;) {
        const [code, slot] = await attempt(value, ticket, start)
        const handed = line.handedEarly.get(value)
        // A slot handed before this waiter listened: the attempt found it ours (granted), or it is ours now.
        if (handed !== undefined) line.handedEarly.delete(value)
        if (code === 1) return slot!
        if (handed !== undefined) return handed
        const given = await told(value)
        if (given !== undefined) return given
      }
    }
    return {
      withPermit: async (hold) => {
        const value = Slots.handableValue(LockValue.make(), ttlMillis, setting)
        const slot = await acquire(value)
        try {
          await hold()
        } finally {
          // ARGV: value, announce, keep no place, this process's subscribers (none: nothing is published).
          line.tell(await redis.evalsha(Scripts.releaseOwned.sha, 1, slots[slot]!, value, 1, 0, 0) as Array<unknown>)
        }
        return true
      },
      close: async () => {
        if (--line.users === 0) lines.delete(lineName)
        redis.disconnect()
      }
    }
  }
})
