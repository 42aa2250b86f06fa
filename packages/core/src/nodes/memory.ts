/**
 * In-memory nodes: the semantics of the lock scripts on a Redis server, on
 * the time a shell hands them (a test's `TestClock` moves their latency and
 * expiry; each node's wall clock may jump apart from it), speaking the
 * engine's node interface (promises, and callbacks for
 * the simulation), so that every test runs the production engine. Each
 * shell builds its layer over a `MemoryFleet` and wraps its fault controls.
 *
 * @internal
 */
import type { NodeCall } from "../engine/nodeCalls.js"
import { withCalls } from "../engine/nodeCalls.js"
import type {
  ClockLead,
  KeyReading,
  MakeNodeError,
  Node,
  NodeError,
  NodeErrorReason,
  NodeOperation,
  NodePromises,
  NodeRun,
  Turn,
  TurnAnswer
} from "../engine/node.js"
import { handoverTagOf, lineOf, linesOf, writerMark } from "../engine/slots.js"
import type { Time } from "../engine/time.js"
import * as Scripts from "./scripts.js"
import { ServerClock } from "./serverClock.js"
import { Watchers } from "./watchers.js"

/** A node's error thrown out of an operation as it is applied (a plain throw could be any bug). */
class NodeFailure {
  constructor(readonly error: NodeError) {}
}

type Entry =
  | { readonly type: "string"; readonly value: string; expiresAt: number | undefined }
  | { readonly type: "list"; expiresAt: undefined }

type ClockJump = NonNullable<Extract<NodeRun, { readonly _tag: "Known" }>["clockJump"]>

/** The operations whose answer may count toward a quorum: each brings a reading of the server's clock (`toNode`). */
const votingOperations: ReadonlySet<NodeOperation> = new Set<NodeOperation>([
  "acquire",
  "acquireInTurn",
  "acquireSlot",
  "extend",
  "incrementFences",
  "commitFences"
])

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
// Run ids of in-memory servers, unique in the process (engine/sameServer.ts tells servers apart by them).
let runs = 0
const nextRunId = (): string => `memory-${++runs}`

export class MemoryNode {
  readonly store = new Map<string, Entry>()
  down = false
  latencyMillis = 0
  /** Every operation fails with this reason while set (see `MemoryFleet.setFailure`). */
  failure: NodeErrorReason | undefined = undefined
  operations = 0
  lastDueMillis = 0
  /** Who waits for a release of which key (as subscribers of its release channel). */
  readonly releaseWatchers = new Watchers()
  /**
   * How much later than the operation's answer its release announcement
   * reaches the watchers (see `MemoryFleet.setAnnouncementDelay`): on Redis
   * the message travels on another connection than the answer.
   */
  announcementDelayMillis = 0
  /** Each line of waiters (engine/slots.ts, lineOf): lock value (a writer's marked) -> ticket and end of lease. */
  readonly lines = new Map<string, Map<string, { readonly ticket: number; readonly leaseEnd: number }>>()
  /** The nodes' first run started long before anything watched them; each run's id is its own, as Redis's run_id. */
  run: NodeRun = { _tag: "Known", id: nextRunId(), startedAtMillis: Number.NEGATIVE_INFINITY }
  /** Whether a restart keeps the keys (see `MemoryNodesControl.setDurable`). */
  durable = false
  /**
   * How far this server's wall clock is ahead of the shell's (behind, when
   * negative): its keys' ttls, its lines' leases and its `TIME` run on it
   * (see `MemoryFleet.jumpClock`).
   */
  clockOffsetMillis = 0

  /** The operations issued and not yet applied, in order. */
  private readonly queue: Array<Pending> = []
  /** Whether the queue's head is scheduled (a timer, or a microtask when due now). */
  private serving = false

  constructor(readonly name: string, readonly time: Time, private readonly makeError: MakeNodeError) {}

  /** Issue an operation: it is applied and answered after the node's latency, or never when down. */
  submit<A>(operation: (now: number) => A, answered: (answer: A) => void, failed: (error: NodeError) => void): void {
    this.operations++
    if (this.down) return
    const failure = this.failure
    const dueMillis = Math.max(this.time.wallNow() + this.latencyMillis, this.lastDueMillis)
    this.lastDueMillis = dueMillis
    this.queue.push({
      dueMillis,
      apply: (now) => {
        if (failure !== undefined) return failed(this.error(failure, "injected failure"))
        let answer: A
        try {
          answer = operation(now + this.clockOffsetMillis)
        } catch (error) {
          if (error instanceof NodeFailure) return failed(error.error)
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

  /** Announce a release on `key`'s channel, now or `announcementDelayMillis` later (on the shell's clock, as the watches). */
  announce(key: string, next: string): void {
    if (this.announcementDelayMillis <= 0) return this.releaseWatchers.notify(key, next, this.time.wallNow())
    this.time.schedule(this.announcementDelayMillis, () => this.releaseWatchers.notify(key, next, this.time.wallNow()))
  }

  /** Leave a line; whether the member stood in it. */
  leave(name: string, member: string): boolean {
    const line = this.lines.get(name)
    if (line === undefined) return false
    const stood = line.delete(member)
    if (line.size === 0) this.lines.delete(name)
    return stood
  }

  error(reason: NodeErrorReason, detail: string): NodeError {
    return this.makeError({ node: this.name, reason, detail })
  }

  /** A failure of the operation being applied, thrown out of it (see `submit`). */
  fail(reason: NodeErrorReason, detail: string): NodeFailure {
    return new NodeFailure(this.error(reason, detail))
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

  /** A line of waiters without those whose lease ended; `undefined` when empty. */
  line(name: string, now: number) {
    const line = this.lines.get(name)
    if (line === undefined) return undefined
    for (const [member, place] of line) if (place.leaseEnd <= now) line.delete(member)
    if (line.size > 0) return line
    this.lines.delete(name)
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
      throw this.fail("WrongType", `WRONGTYPE lock key ${key} holds a ${entry.type}, not a lock value (left untouched)`)
    }
    return entry.value !== value
  }

  /** Whether a live key holds `value`. */
  holds(key: string, value: string, now: number): boolean {
    const entry = this.live(key, now)
    return entry?.type === "string" && entry.value === value
  }

  /**
   * A waiter's place in a line, as the script works it out (scripts.ts,
   * placeOf): with the ticket's age, the ticket bounded to within the slack
   * of when this node's time says the waiter began, at every attempt;
   * without, the place it holds, else its ticket bounded by this node's time.
   */
  placeOf(name: string, member: string, turn: Turn, now: number): number {
    const slack = Scripts.ticketSlackMillis
    if (turn.ageMillis === undefined) {
      return this.lines.get(name)?.get(member)?.ticket ?? Math.min(Math.max(turn.ticket, now - slack), now)
    }
    const began = now - turn.ageMillis
    return Math.min(Math.max(turn.ticket, began - slack), began + slack)
  }

  /** Move a waiter that stands in a line to its place (see `placeOf`). */
  reseat(name: string, member: string, turn: Turn, now: number): void {
    const line = this.line(name, now)
    const standing = line?.get(member)
    if (standing !== undefined) {
      line!.set(member, { ticket: this.placeOf(name, member, turn, now), leaseEnd: standing.leaseEnd })
    }
  }

  /** Join a line, or keep the place held there and renew its lease. */
  stay(name: string, member: string, turn: Turn, now: number): void {
    const ticket = this.placeOf(name, member, turn, now)
    let line = this.lines.get(name)
    if (line === undefined) this.lines.set(name, line = new Map())
    line.set(member, { ticket, leaseEnd: now + Math.ceil(turn.leaseMillis) })
  }

  /** Set a setting record (scripts.ts, keepSetting) to `value`, to live at least `ttlMillis` from now: given less, twice that. */
  keepAtLeast(key: string, value: string, ttlMillis: number, now: number): void {
    const current = this.live(key, now)?.expiresAt ?? 0
    const expiresAt = current >= now + ttlMillis ? current : now + 2 * ttlMillis
    this.store.set(key, { type: "string", value, expiresAt })
  }

  /** A line's waiters in order (lowest ticket, then lowest member). */
  inOrder(name: string, now: number): Array<{ readonly value: string; readonly ticket: number }> {
    const waiters = [...this.line(name, now) ?? []].map(([value, { ticket }]) => ({ value, ticket }))
    return waiters.sort((a, b) => a.ticket - b.ticket || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0))
  }

  /** Who is first in a line, if anyone. */
  first(name: string, now: number): { readonly value: string; readonly ticket: number } | undefined {
    return this.inOrder(name, now)[0]
  }

  /** As the scripts: the setting a resource's holders recorded, when it is not the turn's. */
  settingConflict(slots: ReturnType<typeof Scripts.settingKey>, turn: Turn, now: number): TurnAnswer | undefined {
    if (slots === undefined || turn.setting === undefined) return undefined
    const recorded = this.getString(slots.record, now)
    return recorded !== undefined && recorded !== turn.setting ? { _tag: "SettingConflict", recorded } : undefined
  }

  /**
   * As the release script's releaseSlots: delete every slot of ours, leave
   * the line (plain or as a writer), hand the free slots over to the first
   * waiters (up to a writer) whose value carries the recorded setting, drop
   * the setting record with the last slot held, and announce on the line's
   * channel the waiters named ("value/slot" for a slot handed over).
   */
  releaseSlots(
    keys: ReadonlyArray<string>,
    value: string,
    announce: boolean,
    keepPlace: boolean,
    slots: NonNullable<ReturnType<typeof Scripts.settingKey>>,
    now: number
  ): number {
    const recorded = this.live(slots.record, now)
    const setting = recorded?.type === "string" ? recorded.value : undefined
    const slotKeys = setting === undefined
      ? keys
      : Array.from({ length: Number(setting) }, (_, slot) => slots.slotsPrefix + slot)
    let deleted = 0
    const freed: Array<string> = []
    const stillFree: Array<string> = []
    const holders = new Set<string>()
    for (const key of slotKeys) {
      const entry = this.live(key, now)
      if (entry?.type === "string" && entry.value === value) {
        this.store.delete(key)
        deleted++
        freed.push(key)
      } else if (entry === undefined) stillFree.push(key)
      else if (entry.type === "string") holders.add(entry.value)
    }
    const free = [...freed, ...stillFree]
    const dropRecordIfIdle = () => {
      if (setting !== undefined && free.length === slotKeys.length) this.store.delete(slots.record)
    }
    if (keepPlace) {
      dropRecordIfIdle()
      return deleted
    }
    const line = slots.slotsPrefix
    if (this.line(line, now) === undefined) {
      dropRecordIfIdle()
      if (deleted > 0 && announce) this.announce(line, "")
      return deleted
    }
    const left = [this.leave(line, value), this.leave(line, value + writerMark)].includes(true)
    if (!((deleted > 0 && announce) || (left && (free.length > 0 || setting === undefined)))) {
      dropRecordIfIdle()
      return deleted
    }
    const names: Array<string> = []
    let handed = 0
    const count = setting === undefined ? Math.max(free.length, 1) : free.length
    for (const waiter of this.inOrder(line, now).slice(0, count)) {
      if (waiter.value.endsWith(writerMark)) {
        names.push(waiter.value.slice(0, -writerMark.length))
        break
      }
      const tag = handoverTagOf(waiter.value)
      const key = free[handed]
      if (key !== undefined && tag !== undefined && tag.setting === setting && !holders.has(waiter.value)) {
        handed++
        this.store.set(key, { type: "string", value: waiter.value, expiresAt: now + tag.ttlMillis })
        this.leave(line, waiter.value)
        this.keepAtLeast(slots.record, setting!, tag.ttlMillis, now)
        names.push(`${waiter.value}/${key.slice(slots.slotsPrefix.length)}`)
      } else names.push(waiter.value)
    }
    if (handed === 0) dropRecordIfIdle()
    this.announce(line, names.join(" "))
    return deleted
  }

  /** A counter's value (0 when missing), throwing as INCR does on a value that is not an integer. */
  counter(key: string, now: number): bigint {
    const text = this.getString(key, now)
    if (text === undefined) return 0n
    if (!/^-?\d+$/.test(text)) throw this.fail("Unknown", "ERR value is not an integer or out of range")
    return BigInt(text)
  }

  /** The string value of a key, throwing WRONGTYPE for other types as Redis GET does. */
  getString(key: string, now: number): string | undefined {
    const entry = this.live(key, now)
    if (entry === undefined) return undefined
    if (entry.type !== "string") {
      throw this.fail("WrongType", "WRONGTYPE Operation against a key holding the wrong kind of value")
    }
    return entry.value
  }

  /**
   * The node as the engine talks to it: its operations as promises, and as
   * callbacks (engine/nodeCalls.ts). Like a driver's node, it reads its
   * server's clock with each vote (serverClock.ts): a jump forward seen
   * against an earlier reading marks the run, which then sits out the
   * restart quarantine; a node made after the jump has nothing to hold it
   * against.
   */
  toNode(): Node {
    const operations = this.operationsAt()
    const clock = new ServerClock()
    let readRunId: string | undefined
    // The last jump forward seen, with the run it was seen on; the lead the jumps add up to; the run as told with them.
    let jump: { readonly runId: string; readonly clockJump: ClockJump } | undefined
    let lead: ClockLead | undefined
    let told:
      | { readonly of: NodeRun; readonly jump: typeof jump; readonly lead: ClockLead; readonly run: NodeRun }
      | undefined
    const read = (serverMillis: number, sentAtMillis: number) => {
      const run = this.run
      if (run._tag !== "Known") return
      // Another run is another server (a driver's node reconnects to it): its readings start afresh.
      if (run.id !== readRunId) clock.forget()
      readRunId = run.id
      const seen = clock.read({ serverMillis, sentAtMillis, answeredAtMillis: this.time.now() })
      if (seen === undefined) return
      lead = { nowMillis: clock.leadMillis, mostMillis: clock.mostLeadMillis }
      if (seen._tag === "Forward") {
        jump = { runId: run.id, clockJump: { atMillis: this.time.now(), byMillis: seen.byMillis } }
      }
    }
    // A jump stays with its server's run (a restart starts another), the lead with the node.
    const currentRun = (): NodeRun => {
      const run = this.run
      if (lead === undefined || run._tag !== "Known") return run
      const jumped = jump !== undefined && run.id === jump.runId ? jump : undefined
      if (told?.of !== run || told.jump !== jumped || told.lead !== lead) {
        told = {
          of: run,
          jump: jumped,
          lead,
          run: { ...run, clockLead: lead, ...(jumped === undefined ? {} : { clockJump: jumped.clockJump }) }
        }
      }
      return told.run
    }
    const call: NodeCall = (method, args, answered, failed) => {
      const operation = (operations[method] as (...args: Array<unknown>) => (now: number) => unknown)(...args)
      if (!votingOperations.has(method)) return this.submit(operation, answered, failed)
      const sentAtMillis = this.time.now()
      let serverMillis = 0
      this.submit((now) => {
        serverMillis = now
        return operation(now)
      }, (answer) => {
        read(serverMillis, sentAtMillis)
        answered(answer)
      }, failed)
    }
    const promise = (method: NodeOperation) => (...args: Array<unknown>) =>
      new Promise((resolve, reject) => call(method, args, resolve, reject))
    const promises = Object.fromEntries(
      (Object.keys(operations) as Array<NodeOperation>).map((method) => [method, promise(method)])
    ) as unknown as NodePromises
    const watchReleasesNow = (key: string, onRelease: (next: string | null) => void) =>
      this.releaseWatchers.watch(key, onRelease, this.time.wallNow())
    return withCalls({ name: this.name, run: currentRun, promises, watchReleasesNow }, call)
  }

  /** Each operation: its arguments, then the node's time when it is applied. */
  private operationsAt(): {
    readonly [K in NodeOperation]: (
      ...args: Parameters<NodePromises[K]>
    ) => (now: number) => Awaited<ReturnType<NodePromises[K]>>
  } {
    return {
      acquire: (keys, value, ttlMillis) => ((now) => {
        if (keys.some((key) => this.heldByOther(key, value, now))) return false
        for (const key of keys) this.store.set(key, { type: "string", value, expiresAt: now + ttlMillis })
        return true
      }),
      acquireInTurn: (keys, value, ttlMillis, turn) => ((now): TurnAnswer => {
        // As the script: a setting the resource's holders do not share is refused before anything else.
        const slots = Scripts.settingKey(keys[0])
        const conflict = this.settingConflict(slots, turn, now)
        if (conflict !== undefined) return conflict
        // A writer over a resource's slots stands in their line marked as one.
        const member = slots === undefined ? value : value + writerMark
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
        const lines = linesOf(keys)
        for (const line of lines) this.reseat(line, member, turn, now)
        // As the script: a lock key that holds our value already (handed to us, or a late answer of ours) is ours.
        const ourTurn = lines.every((line) => {
          const head = this.first(line, now)
          if (head === undefined || head.value === member || (slots === undefined && this.holds(line, value, now))) {
            return true
          }
          const place = this.placeOf(line, member, turn, now)
          return head.ticket > place || (head.ticket === place && head.value > member)
        })
        // A grant keeps the place in line and renews its lease (see scripts.ts, acquireInTurn): the release takes it out.
        if (!held && ourTurn) {
          if (slots !== undefined && turn.setting !== undefined) {
            this.keepAtLeast(slots.record, turn.setting, ttlMillis, now)
          }
          for (const key of keys) this.store.set(key, { type: "string", value, expiresAt: now + ttlMillis })
          for (const line of lines) {
            if (turn.leaseMillis > 0 && this.lines.get(line)?.has(member)) this.stay(line, member, turn, now)
          }
          return { _tag: "Granted" }
        }
        // As the script: a refused waiter that takes no place leaves the one it had.
        for (const line of lines) {
          if (turn.leaseMillis > 0) this.stay(line, member, turn, now)
          else this.leave(line, member)
        }
        return held ? { _tag: "Held", ttlMillis: longest } : { _tag: "NotYourTurn" }
      }),
      acquireSlot: (keys, value, ttlMillis, turn) => ((now): TurnAnswer => {
        const slots = Scripts.settingKey(keys[0])
        const conflict = this.settingConflict(slots, turn, now)
        if (conflict !== undefined) return conflict
        const line = lineOf(keys[0])
        // As the script: a grant records the setting and leaves the line.
        const grant = (slot: number): TurnAnswer => {
          if (slots !== undefined && turn.setting !== undefined) {
            this.keepAtLeast(slots.record, turn.setting, ttlMillis, now)
          }
          this.store.set(keys[slot], { type: "string", value, expiresAt: now + ttlMillis })
          this.leave(line, value)
          return { _tag: "Granted", slot }
        }
        const free: Array<number> = []
        for (let slot = 0; slot < keys.length; slot++) {
          if (this.holds(keys[slot], value, now)) return grant(slot)
          if (!this.heldByOther(keys[slot], value, now)) free.push(slot)
        }
        const waiting = this.line(line, now)
        if (free.length > 0) {
          if (waiting === undefined) return grant(free[0])
          // As the script: fewer waiters before us than slots free, and no writer among them.
          const place = this.placeOf(line, value, turn, now)
          const before = this.inOrder(line, now).filter((waiter) =>
            waiter.value !== value && (waiter.ticket < place || (waiter.ticket === place && waiter.value < value))
          )
          if (before.length < free.length && !before.some((waiter) => waiter.value.endsWith(writerMark))) {
            return grant(free[0])
          }
        }
        if (turn.leaseMillis > 0) this.stay(line, value, turn, now)
        else this.leave(line, value)
        if (free.length > 0) return { _tag: "NotYourTurn" }
        let soonest: number | undefined
        for (const key of keys) {
          const expiresAt = this.live(key, now)?.expiresAt
          if (expiresAt !== undefined && (soonest === undefined || expiresAt - now < soonest)) soonest = expiresAt - now
        }
        return { _tag: "Held", ttlMillis: soonest }
      }),
      release: (keys, value, announce, keepPlace) => ((now) => {
        const slots = Scripts.settingKey(keys[0])
        if (slots !== undefined) return this.releaseSlots(keys, value, announce, keepPlace === true, slots, now)
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
          if ((freed && announce) || (wasFirst && free)) this.announce(key, next?.value ?? "")
        }
        return deleted
      }),
      extend: (keys, value, ttlMillis) => ((now) => {
        if (!keys.every((key) => this.getString(key, now) === value)) return false
        for (const key of keys) this.live(key, now)!.expiresAt = now + ttlMillis
        const setting = Scripts.settingKey(keys[0])
        const record = setting === undefined ? undefined : this.live(setting.record, now)
        if (record?.expiresAt !== undefined) record.expiresAt = Math.max(record.expiresAt, now + ttlMillis)
        return true
      }),
      incrementFences: (keys, value, fenceKeys) => ((now) => {
        if (!keys.every((key) => this.getString(key, now) === value)) return undefined
        // As the script: the larger of count + 1 and the time in microseconds.
        const nowMicros = BigInt(Math.floor(now * 1000))
        return fenceKeys.map((fenceKey) => {
          const count = this.counter(fenceKey, now) + 1n
          const next = count > nowMicros ? count : nowMicros
          this.store.set(fenceKey, { type: "string", value: next.toString(), expiresAt: undefined })
          return next
        })
      }),
      commitFences: (keys, value, fenceKeys, tokens) => ((now) => {
        if (!keys.every((key) => this.getString(key, now) === value)) return false
        fenceKeys.forEach((fenceKey, index) => {
          if (tokens[index] > this.counter(fenceKey, now)) {
            this.store.set(fenceKey, { type: "string", value: tokens[index].toString(), expiresAt: undefined })
          }
        })
        return true
      }),
      inspect: (key) => ((now): KeyReading => {
        const expiresAt = this.live(key, now)?.expiresAt
        return { value: this.getString(key, now), ttlMillis: expiresAt === undefined ? undefined : expiresAt - now }
      })
    }
  }
}

/**
 * `n` memory nodes and their fault controls, by node index (each shell's
 * `MemoryNodes` wraps them as effects; documented there).
 */
export class MemoryFleet {
  readonly nodes: ReadonlyArray<MemoryNode>

  constructor(n: number, private readonly time: Time, makeError: MakeNodeError) {
    const nodes: Array<MemoryNode> = []
    for (let i = 0; i < n; i++) nodes.push(new MemoryNode(`memory-${i}`, time, makeError))
    this.nodes = nodes
  }

  get size(): number {
    return this.nodes.length
  }

  at(index: number): MemoryNode {
    const node = this.nodes[index]
    if (node === undefined) {
      throw new RangeError(`memory node index ${index} is out of range 0..${this.nodes.length - 1}`)
    }
    return node
  }

  setDown(index: number, down: boolean): void {
    this.at(index).down = down
  }

  setLatency(index: number, latencyMillis: number): void {
    this.at(index).latencyMillis = latencyMillis
  }

  setFailure(index: number, reason: NodeErrorReason | undefined): void {
    this.at(index).failure = reason
  }

  /** The node's release announcements reach watchers `delayMillis` after the release's answer. */
  setAnnouncementDelay(index: number, delayMillis: number): void {
    this.at(index).announcementDelayMillis = delayMillis
  }

  heal(index: number): void {
    const node = this.at(index)
    node.down = false
    node.latencyMillis = 0
    node.failure = undefined
    node.announcementDelayMillis = 0
  }

  /**
   * The node's wall clock jumps `byMillis` forward (negative: back), the
   * shell's clock untouched: keys whose ttl it passes expire at once, as on a
   * server whose clock was set (Kleppmann's scenario, docs/safety.md).
   */
  jumpClock(index: number, byMillis: number): void {
    this.at(index).clockOffsetMillis += byMillis
  }

  /** A restart at `now` (monotonic ms): every key is lost, unless the node is durable. */
  restart(index: number, now: number): void {
    const node = this.at(index)
    if (!node.durable) {
      node.store.clear()
      node.lines.clear()
    }
    node.run = { ...node.run, _tag: "Known", id: nextRunId(), startedAtMillis: now }
  }

  setDurable(index: number, durable: boolean): void {
    const node = this.at(index)
    node.durable = durable
    if (node.run._tag === "Known") {
      node.run = {
        ...node.run,
        persistence: durable
          ? { keepsKeys: true, detail: "in memory, durable (as AOF with appendfsync always)" }
          : { keepsKeys: false, detail: "in memory, keys lost on restart" }
      }
    }
  }

  putForeign(index: number, key: string): void {
    this.at(index).store.set(key, { type: "list", expiresAt: undefined })
  }

  putString(index: number, key: string, value: string, ttlMillis: number | undefined): void {
    const now = this.serverNow(index)
    this.at(index).store.set(key, {
      type: "string",
      value,
      expiresAt: ttlMillis === undefined ? undefined : now + ttlMillis
    })
  }

  /** The live keys of a node; a resource's line of waiters shows as its key + `"\u0000queue"`. */
  keys(index: number): ReadonlyArray<string> {
    const now = this.serverNow(index)
    const node = this.at(index)
    return [
      ...[...node.store.keys()].filter((key) => node.live(key, now) !== undefined),
      ...[...node.lines.keys()].filter((key) => node.line(key, now) !== undefined).map(Scripts.queueKey)
    ]
  }

  /** The node's wall clock (see `jumpClock`). */
  private serverNow(index: number): number {
    return this.time.wallNow() + this.at(index).clockOffsetMillis
  }

  operations(index: number): number {
    return this.at(index).operations
  }

  releaseWatchers(index: number): number {
    return this.at(index).releaseWatchers.size
  }
}
