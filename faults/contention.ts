/**
 * Random schedules of contending clients and node faults on in-memory nodes,
 * run on virtual time (faults/simulation.ts), and the invariants every
 * schedule must keep:
 *
 * 1. No two holders inside their validity: the intervals from each
 *    acquisition to the end of its hold or of its validity, whichever comes
 *    first, never overlap. For a semaphore of `limit` permits: no more than
 *    `limit` of them overlap at any moment. For a read-write lock: a write
 *    hold overlaps no other hold, and no more than `maxReaders` read holds
 *    overlap.
 * 2. Fencing tokens strictly increase in acquisition order (of each
 *    semaphore slot), in schedules where no node restarted empty (counters
 *    need persistence, see README).
 * 3. No key is left: once every scope closed and every node is back, the
 *    lock keys that releases could not reach expire within the ttl.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as fc from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as Lock from "effect-redlock/Lock"
import * as Redlock from "effect-redlock/Redlock"
import * as RedisNode from "effect-redlock/RedisNode"
import * as Simulation from "./simulation.js"

export interface Acquisition {
  /** Wait before asking, after the previous acquisition ended. */
  readonly delayMillis: number
  readonly ttlMillis: number
  /** How long the holder keeps going once it has the lock; beyond its validity, it is a paused holder. */
  readonly holdMillis: number
  readonly autoExtend: boolean
  readonly fencing: boolean
  /** For a read-write lock: a write hold (else a read hold). */
  readonly write: boolean
}

/**
 * `restart` loses every key, unless the node is durable; `durableRestart`
 * makes the node durable (AOF, appendfsync always) for the whole schedule,
 * from its start (a server does not change its persistence between runs:
 * docs/quarantine.md), and restarts it: it keeps its keys and
 * votes at once. `lateAnnouncements`: the node's release announcements reach the
 * watchers up to 60 ms after the release's answer (they travel apart on Redis).
 * `clockJump`: the node's wall clock leaps `lastsMillis` forward (its keys
 * expire that much early; the nodes see it in their next vote's reading and
 * it sits out the quarantine); `clockBack`: it steps back as far.
 */
export type FaultKind =
  | "down"
  | "slow"
  | "failing"
  | "restart"
  | "durableRestart"
  | "lateAnnouncements"
  | "clockJump"
  | "clockBack"

const faultKinds: ReadonlyArray<FaultKind> = [
  "down",
  "slow",
  "failing",
  "restart",
  "durableRestart",
  "lateAnnouncements",
  "clockJump",
  "clockBack"
]

export interface Fault {
  readonly atMillis: number
  readonly node: number
  readonly kind: FaultKind
  readonly lastsMillis: number
}

export interface ContentionSchedule {
  readonly nodes: number
  /** The clients take permits of a semaphore of this many; none: they take the lock. */
  readonly limit: number | undefined
  /** The clients hold a read-write lock of this many readers (reading or writing); none: see `limit`. */
  readonly maxReaders: number | undefined
  readonly clients: ReadonlyArray<ReadonlyArray<Acquisition>>
  readonly faults: ReadonlyArray<Fault>
  readonly seed: number
}

export const maxTtlMillis = 1000

const acquisition: fc.Arbitrary<Acquisition> = fc.record({
  delayMillis: fc.integer({ min: 0, max: 400 }),
  ttlMillis: fc.integer({ min: 100, max: maxTtlMillis }),
  holdMillis: fc.integer({ min: 0, max: 2500 }),
  autoExtend: fc.boolean(),
  fencing: fc.boolean(),
  write: fc.boolean()
})

/**
 * Which primitive the clients contend for: the lock, a semaphore (of 1 to 3
 * permits), a read-write lock (of 1 to 3 readers), or any of them.
 */
export type Primitive = "lock" | "semaphore" | "readWrite" | "any"

const primitives = (
  primitive: Primitive
): fc.Arbitrary<{ readonly limit: number | undefined; readonly maxReaders: number | undefined }> => {
  const lock = fc.constant({ limit: undefined, maxReaders: undefined })
  const semaphore = fc.integer({ min: 1, max: 3 }).map((limit) => ({ limit, maxReaders: undefined }))
  const readWrite = fc.integer({ min: 1, max: 3 }).map((maxReaders) => ({ limit: undefined, maxReaders }))
  return primitive === "lock"
    ? lock
    : primitive === "semaphore"
    ? semaphore
    : primitive === "readWrite"
    ? readWrite
    : fc.oneof(lock, semaphore, readWrite)
}

export const schedule = (primitive: Primitive = "any"): fc.Arbitrary<ContentionSchedule> =>
  fc.tuple(fc.constantFrom(3, 5), primitives(primitive)).chain(([nodes, { limit, maxReaders }]) =>
    fc.record({
      nodes: fc.constant(nodes),
      limit: fc.constant(limit),
      maxReaders: fc.constant(maxReaders),
      clients: fc.array(fc.array(acquisition, { minLength: 1, maxLength: 4 }), { minLength: 2, maxLength: 5 }),
      faults: fc.array(
        fc.record({
          atMillis: fc.integer({ min: 0, max: 4000 }),
          node: fc.integer({ min: 0, max: nodes - 1 }),
          kind: fc.constantFrom(...faultKinds),
          lastsMillis: fc.integer({ min: 1, max: 1500 })
        }),
        { maxLength: 8 }
      ),
      seed: fc.integer({ min: 0, max: 2 ** 30 })
    })
  )

interface Grant {
  readonly client: number
  /** A read-write lock's write hold. */
  readonly write: boolean
  /** The lock's resource: for a semaphore, the slot. */
  readonly resource: string
  readonly at: number
  token: Option.Option<bigint>
  /** The end of the part of the hold this holder could rely on. */
  until: number
}

/** What broke, in words; empty when every invariant held. */
export type Problems = ReadonlyArray<string>

const applyFault = (control: RedisNode.MemoryNodesControl, fault: Fault) =>
  Effect.gen(function*() {
    yield* Effect.sleep(Duration.millis(fault.atMillis))
    switch (fault.kind) {
      case "restart":
      case "durableRestart":
        return yield* control.restart(fault.node)
      case "down":
        yield* control.setDown(fault.node, true)
        yield* Effect.sleep(Duration.millis(fault.lastsMillis))
        return yield* control.setDown(fault.node, false)
      case "slow":
        yield* control.setLatency(fault.node, Duration.millis(Math.min(fault.lastsMillis, 60)))
        yield* Effect.sleep(Duration.millis(fault.lastsMillis))
        return yield* control.setLatency(fault.node, 0)
      case "lateAnnouncements":
        // Announcements come after answers the node gave later (an undo's, a round's).
        yield* control.setAnnouncementDelay(fault.node, Duration.millis(Math.min(fault.lastsMillis, 60)))
        yield* Effect.sleep(Duration.millis(fault.lastsMillis))
        return yield* control.setAnnouncementDelay(fault.node, 0)
      case "clockJump":
        return yield* control.jumpClock(fault.node, fault.lastsMillis)
      case "clockBack":
        return yield* control.jumpClock(fault.node, -fault.lastsMillis)
      case "failing":
        yield* control.setFailure(fault.node, Option.some("Busy"))
        yield* Effect.sleep(Duration.millis(fault.lastsMillis))
        return yield* control.setFailure(fault.node, Option.none())
    }
  })

/** The program of one schedule; it fails with the problems it found. */
const program = (plan: ContentionSchedule, options: Redlock.Options) =>
  Effect.gen(function*() {
    const control = yield* RedisNode.MemoryNodes
    const durable = new Set(plan.faults.flatMap((fault) => fault.kind === "durableRestart" ? [fault.node] : []))
    for (const node of durable) yield* control.setDurable(node, true)
    const grants: Array<Grant> = []
    const retry = Schedule.spaced("40 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(30)))
    const client = (acquisitions: ReadonlyArray<Acquisition>, index: number) =>
      Effect.gen(function*() {
        const redlock = yield* Redlock.make({ maxTtl: Duration.millis(maxTtlMillis), ...options })
        for (const step of acquisitions) {
          yield* Effect.sleep(Duration.millis(step.delayMillis))
          yield* Effect.scoped(Effect.gen(function*() {
            const options: Redlock.AcquireOptions = {
              ttl: Duration.millis(step.ttlMillis),
              nodeTimeout: "20 millis",
              retry,
              autoExtend: step.autoExtend
            }
            const lock = yield* (plan.maxReaders !== undefined
              ? (step.write ? redlock.acquireWrite : redlock.acquireRead)("r", {
                ...options,
                maxReaders: plan.maxReaders
              })
              : plan.limit !== undefined
              ? redlock.acquirePermit("r", { ...options, limit: plan.limit })
              : redlock.acquire("r", options))
            const grant: Grant = {
              client: index,
              write: plan.maxReaders !== undefined && step.write,
              resource: lock.resources[0],
              at: yield* Lock.monotonicMillis,
              token: Option.none(),
              until: lock.validUntilMillis
            }
            grants.push(grant)
            // A writer holds every read slot: its tokens are one per slot, not one to order.
            if (step.fencing && !grant.write) grant.token = yield* Effect.option(lock.fencingToken)
            yield* Effect.sleep(Duration.millis(step.holdMillis))
            grant.until = Math.min(yield* Lock.monotonicMillis, lock.validUntilMillis)
          })).pipe(Effect.ignore)
        }
      }).pipe(Effect.withRandom(Random.make(plan.seed + index)))
    const fibers = yield* Effect.forEach(
      plan.clients,
      (acquisitions, index) => Effect.fork(client(acquisitions, index))
    )
    const faults = yield* Effect.forEach(plan.faults, (fault) => Effect.fork(applyFault(control, fault)))
    yield* Fiber.joinAll(fibers)
    yield* Fiber.joinAll(faults)
    for (let i = 0; i < plan.nodes; i++) yield* control.heal(i)

    const problems: Array<string> = []
    const ordered = [...grants].sort((a, b) => a.at - b.at)
    // Holders at a moment: the count only grows at a grant, so checking at each grant is enough.
    // A read-write lock: a writer alone, at most maxReaders readers; else at most `limit` (1: the lock).
    const limit = plan.maxReaders ?? plan.limit ?? 1
    const what = (grant: Grant) =>
      plan.maxReaders !== undefined
        ? `${grant.write ? "the write" : "a read"} hold of ${limit} readers`
        : plan.limit === undefined
        ? "the lock"
        : `a permit of ${limit}`
    for (let j = 0; j < ordered.length; j++) {
      const holding = ordered.slice(0, j).filter((earlier) => ordered[j].at < earlier.until)
      const broken = plan.maxReaders === undefined
        ? holding.length >= limit
        : ordered[j].write
        ? holding.length > 0
        : holding.some((h) => h.write) || holding.length >= limit
      if (broken) {
        problems.push(
          `client ${ordered[j].client} got ${what(ordered[j])} at ${ordered[j].at} ms while ` +
            `${
              holding.map((h) =>
                `client ${h.client}${h.write ? " (writing)" : ""} (from ${h.at} ms, valid until ${h.until} ms)`
              ).join(", ")
            } held`
        )
      }
    }
    // Without the quarantine, an empty restart may send tokens back (docs/safety.md, "Fencing tokens").
    const emptyRestart = plan.faults.some((fault) => fault.kind === "restart" && !durable.has(fault.node))
    if (options.restartQuarantine !== false || !emptyRestart) {
      const last = new Map<string, bigint>()
      for (const grant of ordered) {
        if (Option.isNone(grant.token)) continue
        const before = last.get(grant.resource)
        if (before !== undefined && grant.token.value <= before) {
          problems.push(
            `token ${grant.token.value} at ${grant.at} ms after token ${before} (${JSON.stringify(grant.resource)})`
          )
        }
        last.set(grant.resource, grant.token.value)
      }
    }
    // Releases that could not reach a node leave keys that expire within the ttl; a semaphore's or
    // read-write lock's setting record, renewed with twice the ttl (scripts.ts, keepSetting), within twice it.
    yield* Effect.sleep(Duration.millis(2 * maxTtlMillis))
    for (let i = 0; i < plan.nodes; i++) {
      const left = (yield* control.keys(i)).filter((key) => key.startsWith("redlock:"))
      if (left.length > 0) problems.push(`node ${i} still holds ${left.join(", ")} after every scope closed`)
    }
    return problems
  }).pipe(
    Effect.provide(RedisNode.layerMemory(plan.nodes)),
    // Release warnings are expected under faults; thousands of runs would drown the result.
    Logger.withMinimumLogLevel(LogLevel.None)
  )

/** Run one schedule on virtual time and return what broke. */
export const check = (plan: ContentionSchedule, options: Redlock.Options = {}): Problems => {
  const { exit } = Simulation.run(program(plan, options))
  return Exit.isSuccess(exit) ? exit.value : [`the program itself failed: ${String(exit.cause)}`]
}

const verify = (plan: ContentionSchedule, options: Redlock.Options) => {
  const problems = check(plan, options)
  if (problems.length > 0) throw new Error(problems.slice(0, 3).join("\n"))
}

/** A fast-check property over random schedules. */
export const property = (options: Redlock.Options = {}, primitive: Primitive = "any") =>
  fc.property(schedule(primitive), (plan) => verify(plan, options))

/**
 * The same property, letting the event loop turn before each schedule: a
 * schedule runs synchronously on virtual time, and a process that runs them
 * back to back for a minute reads no message meanwhile (a vitest worker then
 * misses its runner's answers and reports a timeout of its own).
 */
export const asyncProperty = (options: Redlock.Options = {}, primitive: Primitive = "any") =>
  fc.asyncProperty(schedule(primitive), async (plan) => {
    await new Promise((resolve) => setImmediate(resolve))
    verify(plan, options)
  })
