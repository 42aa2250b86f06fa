/**
 * In-memory nodes: the semantics of the lock scripts on a Redis server, on
 * the clock of the fiber that built their layer (a test's `TestClock` moves
 * their latency and expiry), speaking the same promises as the ioredis
 * nodes, so that the lock manager runs the same engine over both.
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Time } from "../../engine/time.js"
import type * as RedisNode from "../../RedisNode.js"
import { type NodeCall, withCalls } from "../../engine/nodeCalls.js"
import { fromPromises, MemoryNodes, RedisNodeError, RedisNodes } from "../nodes.js"
import * as Monotonic from "../monotonic.js"
import * as Scripts from "../scripts.js"
import { Watchers } from "../watchers.js"

type Entry =
  | { readonly type: "string"; readonly value: string; expiresAt: number | undefined }
  | { readonly type: "list"; expiresAt: undefined }

interface Pending {
  readonly dueMillis: number
  readonly apply: (now: number) => void
}

/**
 * One in-memory node. Operations go through a FIFO queue, each applied and
 * answered at its due time (issue time + latency, never before an earlier
 * one). This is how a connection to a real server behaves: operations land
 * in order, and an operation whose caller stopped waiting still lands.
 */
class MemoryNode {
  readonly store = new Map<string, Entry>()
  down = false
  latencyMillis = 0
  failure: Option.Option<RedisNode.RedisNodeErrorReason> = Option.none()
  operations = 0
  lastDueMillis = 0
  restarts = 0
  /** Who waits for a release of which key (as subscribers of its release channel). */
  readonly releaseWatchers = new Watchers()
  /** Each lock key's line of waiters: lock value -> ticket and end of lease. */
  readonly lines = new Map<string, Map<string, { readonly ticket: number; readonly leaseEnd: number }>>()
  /** The nodes' first run started long before anything watched them. */
  run: RedisNode.NodeRun = { _tag: "Known", id: "0", startedAtMillis: Number.NEGATIVE_INFINITY }
  /** Whether a restart keeps the keys (see `MemoryNodesControl.setDurable`). */
  durable = false

  /** The operations issued and not yet applied, in order. */
  private readonly queue: Array<Pending> = []
  /** Whether the queue's head is scheduled (a timer, or a microtask when due now). */
  private serving = false

  constructor(readonly name: string, readonly time: Time) {}

  /** Issue an operation: it is applied and answered after the node's latency, or never when down. */
  submit<A>(operation: (now: number) => A, answered: (answer: A) => void, failed: (error: RedisNodeError) => void): void {
    this.operations++
    if (this.down) return
    const failure = this.failure
    const dueMillis = Math.max(this.time.wallNow() + this.latencyMillis, this.lastDueMillis)
    this.lastDueMillis = dueMillis
    this.queue.push({
      dueMillis,
      apply: (now) => {
        if (Option.isSome(failure)) return failed(this.error(failure.value, "injected failure"))
        let answer: A
        try {
          answer = operation(now)
        } catch (error) {
          if (error instanceof RedisNodeError) return failed(error)
          throw error
        }
        answered(answer)
      }
    })
    this.serve()
  }

  // Applies every operation that is due, in order, then schedules the next one.
  private serve(): void {
    if (this.serving || this.queue.length === 0) return
    this.serving = true
    const waitMillis = this.queue[0].dueMillis - this.time.wallNow()
    const applyDue = () => {
      this.serving = false
      const now = this.time.wallNow()
      while (this.queue.length > 0 && this.queue[0].dueMillis <= now) this.queue.shift()!.apply(now)
      this.serve()
    }
    if (waitMillis > 0) this.time.schedule(waitMillis, applyDue)
    else this.time.defer(applyDue)
  }

  leave(key: string, value: string): void {
    const line = this.lines.get(key)
    if (line === undefined) return
    line.delete(value)
    if (line.size === 0) this.lines.delete(key)
  }

  error(reason: RedisNode.RedisNodeErrorReason, detail: string): RedisNodeError {
    return new RedisNodeError({ node: this.name, reason, detail }, true)
  }

  /** A live entry, with lazy expiry as in Redis. */
  live(key: string, now: number): Entry | undefined {
    const entry = this.store.get(key)
    if (entry !== undefined && entry.expiresAt !== undefined && entry.expiresAt <= now) {
      this.store.delete(key)
      return undefined
    }
    return entry
  }

  /** A key's line of waiters without those whose lease ended; `undefined` when empty. */
  line(key: string, now: number) {
    const line = this.lines.get(key)
    if (line === undefined) return undefined
    for (const [value, place] of line) if (place.leaseEnd <= now) line.delete(value)
    if (line.size > 0) return line
    this.lines.delete(key)
    return undefined
  }

  /**
   * Whether a live key holds anything but `value` (a key of ours is a late
   * answer of our own earlier attempt). A key of another type is refused
   * with WRONGTYPE naming the type, as the acquire scripts do.
   */
  heldByOther(key: string, value: string, now: number): boolean {
    const entry = this.live(key, now)
    if (entry === undefined) return false
    if (entry.type !== "string") {
      throw this.error("WrongType", `WRONGTYPE lock key ${key} holds a ${entry.type}, not a lock value (left untouched)`)
    }
    return entry.value !== value
  }

  /** Whether a live key holds `value`. */
  holds(key: string, value: string, now: number): boolean {
    const entry = this.live(key, now)
    return entry?.type === "string" && entry.value === value
  }

  /** A waiter's place in a key's line: the one it holds, or its ticket bounded by this node's time. */
  placeOf(key: string, value: string, ticket: number, now: number): number {
    return this.lines.get(key)?.get(value)?.ticket ??
      Math.min(Math.max(ticket, now - Scripts.ticketSlackMillis), now)
  }

  /** Join a key's line, or keep the place held there and renew its lease. */
  stay(key: string, value: string, turn: RedisNode.Turn, now: number): void {
    const ticket = this.placeOf(key, value, turn.ticket, now)
    let line = this.lines.get(key)
    if (line === undefined) this.lines.set(key, line = new Map())
    line.set(value, { ticket, leaseEnd: now + Math.ceil(turn.leaseMillis) })
  }

  /** Who is first in a key's line (lowest ticket, then lowest value), if anyone. */
  first(key: string, now: number): { readonly value: string; readonly ticket: number } | undefined {
    let head: { value: string; ticket: number } | undefined
    for (const [value, { ticket }] of this.line(key, now) ?? []) {
      if (head === undefined || ticket < head.ticket || (ticket === head.ticket && value < head.value)) {
        head = { value, ticket }
      }
    }
    return head
  }

  /** A counter's value (0 when missing), throwing as INCR does on a value that is not an integer. */
  counter(key: string, now: number): bigint {
    const text = this.getString(key, now)
    if (text === undefined) return 0n
    if (!/^-?\d+$/.test(text)) throw this.error("Unknown", "ERR value is not an integer or out of range")
    return BigInt(text)
  }

  /** The string value of a key, throwing WRONGTYPE for other types as Redis GET does. */
  getString(key: string, now: number): string | undefined {
    const entry = this.live(key, now)
    if (entry === undefined) return undefined
    if (entry.type !== "string") {
      throw this.error("WrongType", "WRONGTYPE Operation against a key holding the wrong kind of value")
    }
    return entry.value
  }

  toRedisNode(): RedisNode.RedisNode {
    const operations = this.operationsAt()
    const call: NodeCall = (method, args, answered, failed) =>
      this.submit((now) => (operations[method] as (...args: Array<unknown>) => (now: number) => unknown)(...args)(now), answered, failed)
    const promise = (method: RedisNode.NodeOperation) => (...args: Array<unknown>) =>
      new Promise((resolve, reject) => call(method, args, resolve, reject))
    const promises = Object.fromEntries(
      (Object.keys(operations) as Array<RedisNode.NodeOperation>).map((method) => [method, promise(method)])
    ) as unknown as RedisNode.NodePromises
    const watchReleasesNow = (key: string, onRelease: (next: string | null) => void) =>
      this.releaseWatchers.watch(key, onRelease, this.time.wallNow())
    return withCalls(
      fromPromises({
        name: this.name,
        run: () => this.run,
        promises,
        watchReleasesNow
      }),
      call
    )
  }

  /** Each operation: its arguments, then the node's time when it is applied. */
  private operationsAt(): { readonly [K in RedisNode.NodeOperation]: (...args: Parameters<RedisNode.RedisNode[K]>) => (now: number) => unknown } {
    return {
      acquire: (keys, value, ttlMillis) =>
        ((now) => {
          if (keys.some((key) => this.heldByOther(key, value, now))) return false
          for (const key of keys) this.store.set(key, { type: "string", value, expiresAt: now + ttlMillis })
          return true
        }),
      acquireInTurn: (keys, value, ttlMillis, turn) =>
        ((now): RedisNode.TurnAnswer => {
          let held = false
          let longest: number | undefined = 0
          for (const key of keys) {
            if (!this.heldByOther(key, value, now)) continue
            const entry = this.live(key, now)!
            held = true
            if (longest !== undefined) {
              longest = entry.expiresAt === undefined ? undefined : Math.max(longest, entry.expiresAt - now)
            }
          }
          // As the script: a key that holds our value already (handed to us, or a late answer of ours) is ours.
          const ourTurn = keys.every((key) => {
            const head = this.first(key, now)
            if (head === undefined || head.value === value || this.holds(key, value, now)) return true
            const place = this.placeOf(key, value, turn.ticket, now)
            return head.ticket > place || (head.ticket === place && head.value > value)
          })
          // A grant keeps the place in line and renews its lease (see scripts.ts, acquireInTurn): the release takes it out.
          if (!held && ourTurn) {
            for (const key of keys) {
              this.store.set(key, { type: "string", value, expiresAt: now + ttlMillis })
              if (turn.leaseMillis > 0 && this.lines.get(key)?.has(value)) this.stay(key, value, turn, now)
            }
            return { _tag: "Granted" }
          }
          // As the script: a refused waiter that takes no place leaves the one it had.
          for (const key of keys) {
            if (turn.leaseMillis > 0) this.stay(key, value, turn, now)
            else this.leave(key, value)
          }
          return held ? { _tag: "Held", ttlMillis: longest } : { _tag: "NotYourTurn" }
        }),
      release: (keys, value, announce, keepPlace) =>
        ((now) => {
          let deleted = 0
          for (const key of keys) {
            const entry = this.live(key, now)
            const freed = entry !== undefined && entry.type === "string" && entry.value === value
            if (freed) {
              this.store.delete(key)
              deleted++
            }
            if (keepPlace === true) continue
            const wasFirst = this.first(key, now)?.value === value
            this.leave(key, value)
            const free = this.live(key, now) === undefined
            const next = this.first(key, now)
            // The handover (see scripts.ts, releaseOwned): the key waits for the first in line, for the rest of its lease.
            if (free && (freed || wasFirst) && next !== undefined) {
              const leaseEnd = this.lines.get(key)!.get(next.value)!.leaseEnd
              this.store.set(key, { type: "string", value: next.value, expiresAt: leaseEnd })
            }
            if ((freed && announce) || (wasFirst && free)) this.releaseWatchers.notify(key, next?.value ?? "", now)
          }
          return deleted
        }),
      extend: (keys, value, ttlMillis) =>
        ((now) => {
          if (!keys.every((key) => this.getString(key, now) === value)) return false
          for (const key of keys) this.live(key, now)!.expiresAt = now + ttlMillis
          return true
        }),
      incrementFences: (keys, value, fenceKeys) =>
        ((now) => {
          if (!keys.every((key) => this.getString(key, now) === value)) return Option.none()
          // As the script: the larger of count + 1 and the time in microseconds.
          const nowMicros = BigInt(Math.floor(now * 1000))
          return Option.some(fenceKeys.map((fenceKey) => {
            const count = this.counter(fenceKey, now) + 1n
            const next = count > nowMicros ? count : nowMicros
            this.store.set(fenceKey, { type: "string", value: next.toString(), expiresAt: undefined })
            return next
          }))
        }),
      commitFences: (keys, value, fenceKeys, tokens) =>
        ((now) => {
          if (!keys.every((key) => this.getString(key, now) === value)) return false
          fenceKeys.forEach((fenceKey, index) => {
            if (tokens[index] > this.counter(fenceKey, now)) {
              this.store.set(fenceKey, { type: "string", value: tokens[index].toString(), expiresAt: undefined })
            }
          })
          return true
        }),
      inspect: (key) =>
        ((now): RedisNode.KeyState => {
          const value = this.getString(key, now)
          const expiresAt = this.live(key, now)?.expiresAt
          return {
            value: Option.fromNullable(value),
            ttl: expiresAt === undefined ? Option.none() : Option.some(Duration.millis(expiresAt - now))
          }
        })
    }
  }
}

/** @internal */
export const layer = (n: number): Layer.Layer<RedisNodes | MemoryNodes> =>
  Layer.scopedContext(Effect.gen(function*() {
    if (!Number.isInteger(n) || n < 1) return yield* Effect.dieMessage(`layerMemory: n must be a positive integer, got ${n}`)
    // The clock of the fiber that builds the layer: a test's TestClock moves latency and expiry.
    const time = yield* Monotonic.currentTime
    const nodes: Array<MemoryNode> = []
    for (let i = 0; i < n; i++) nodes.push(new MemoryNode(`memory-${i}`, time))
    const at = (index: number): MemoryNode => {
      const node = nodes[index]
      if (node === undefined) throw new RangeError(`memory node index ${index} is out of range 0..${n - 1}`)
      return node
    }
    const control: RedisNode.MemoryNodesControl = {
      size: n,
      setDown: (index, down) => Effect.sync(() => void (at(index).down = down)),
      setLatency: (index, latency) => Effect.sync(() => void (at(index).latencyMillis = Duration.toMillis(latency))),
      setFailure: (index, reason) => Effect.sync(() => void (at(index).failure = reason)),
      heal: (index) =>
        Effect.sync(() => {
          const node = at(index)
          node.down = false
          node.latencyMillis = 0
          node.failure = Option.none()
        }),
      restart: (index) =>
        Effect.map(Monotonic.monotonicMillis, (now) => {
          const node = at(index)
          if (!node.durable) {
            node.store.clear()
            node.lines.clear()
          }
          node.restarts++
          node.run = { ...node.run, _tag: "Known", id: String(node.restarts), startedAtMillis: now }
        }),
      setDurable: (index, durable) =>
        Effect.sync(() => {
          const node = at(index)
          node.durable = durable
          if (node.run._tag === "Known") {
            node.run = {
              ...node.run,
              persistence: durable
                ? { keepsKeys: true, detail: "in memory, durable (as AOF with appendfsync always)" }
                : { keepsKeys: false, detail: "in memory, keys lost on restart" }
            }
          }
        }),
      putForeign: (index, key) => Effect.sync(() => void at(index).store.set(key, { type: "list", expiresAt: undefined })),
      putString: (index, key, value, ttlMillis) =>
        Effect.sync(() => time.wallNow()).pipe(Effect.map((now) =>
          void at(index).store.set(key, {
            type: "string",
            value,
            expiresAt: ttlMillis === undefined ? undefined : now + ttlMillis
          }))),
      keys: (index) =>
        Effect.sync(() => {
          const now = time.wallNow()
          const node = at(index)
          return [
            ...[...node.store.keys()].filter((key) => node.live(key, now) !== undefined),
            ...[...node.lines.keys()].filter((key) => node.line(key, now) !== undefined).map(Scripts.queueKey)
          ]
        }),
      operations: (index) => Effect.sync(() => at(index).operations),
      releaseWatchers: (index) => Effect.sync(() => at(index).releaseWatchers.size)
    }
    return Context.make(RedisNodes, nodes.map((node) => node.toRedisNode())).pipe(Context.add(MemoryNodes, control))
  }))
