/**
 * One operation sent to every node at once, all bounded by the same per-node
 * timeout (the calls start together, so one timer serves them all).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { type NodeOutcome, type RedisNode, RedisNodeError } from "../RedisNode.js"
import * as Algorithm from "./algorithm.js"
import * as Clock from "./clock.js"
import * as Quarantine from "./quarantine.js"

export interface FanOutResult<A = unknown> {
  /** One outcome per node, in node order. */
  readonly outcomes: ReadonlyArray<NodeOutcome>
  /** How many nodes answered `Ok`. */
  readonly yes: number
  /** Each node's answer, where it answered in time. */
  readonly answers: ReadonlyArray<A | undefined>
}

/** The outcome of a call that ended some other way than an answer or its timeout. */
const unexpected = (node: RedisNode, cause: Cause.Cause<RedisNodeError>, millis: number): NodeOutcome => {
  if (Cause.isInterruptedOnly(cause)) return { _tag: "NotAwaited", node: node.name, millis }
  const error = Cause.isFailType(cause)
    ? cause.error
    : new RedisNodeError({ node: node.name, reason: "Unknown", detail: Cause.pretty(cause), cause: Cause.squash(cause) }, true)
  return { _tag: "Failed", node: node.name, millis, error }
}

/**
 * The engine: call every node, settle each node once (its answer or the
 * timeout), and return as soon as `isDecided(ok, other)` holds. With a
 * `quarantineMillis`, a yes from a node whose server started less than that
 * long ago (or is not known) is `Abstained` and counts as no.
 */
const fanOut = <A>(
  nodes: ReadonlyArray<RedisNode>,
  call: (node: RedisNode) => Effect.Effect<A, RedisNodeError>,
  isYes: (answer: A) => boolean,
  timeout: Duration.Duration,
  isDecided: (ok: number, other: number) => boolean,
  quarantineMillis?: number
): Effect.Effect<FanOutResult<A>> =>
  Effect.suspend(() => {
    if (nodes.length === 0) return Effect.succeed(resultOf<A>([], []))
    const answers: Array<A | undefined> = nodes.map(() => undefined)
    const outcomes: Array<NodeOutcome> = nodes.map((node) => ({ _tag: "NotAwaited", node: node.name, millis: 0 }))
    const settled: Array<boolean> = nodes.map(() => false)
    let ok = 0
    let other = 0
    const runsAtStart = quarantineMillis === undefined ? undefined : nodes.map((node) => node.run())
    return Effect.flatMap(Effect.zip(Deferred.make<void>(), Clock.monotonicMillis), ([decided, start]) => {
      // The first word on a node counts: its answer, or its timeout.
      const settle = (index: number, outcome: NodeOutcome) => {
        if (settled[index]) return
        settled[index] = true
        outcomes[index] = outcome
        if (outcome._tag === "Ok") ok++
        else other++
        if (isDecided(ok, other)) Deferred.unsafeDone(decided, Effect.void)
      }
      const answered = (index: number) => (exit: Exit.Exit<A, RedisNodeError>) =>
        Effect.map(Clock.monotonicMillis, (now) => {
          const node = nodes[index]
          const millis = now - start
          if (Exit.isSuccess(exit)) {
            answers[index] = exit.value
            const yes = isYes(exit.value)
            const abstention = yes && runsAtStart !== undefined
              ? Quarantine.abstention(runsAtStart[index], node.run(), start, quarantineMillis!)
              : undefined
            settle(
              index,
              abstention !== undefined
                ? { _tag: "Abstained", node: node.name, millis, detail: abstention }
                : { _tag: yes ? "Ok" : "Held", node: node.name, millis }
            )
          } else {
            settle(index, unexpected(node, exit.cause, millis))
          }
        })
      const timer = Effect.zipRight(
        Effect.sleep(timeout),
        Effect.map(Clock.monotonicMillis, (now) =>
          nodes.forEach((node, index) => settle(index, { _tag: "TimedOut", node: node.name, millis: now - start })))
      )
      // Daemons, not children: an interruption of the caller must not reach a
      // call in flight (a fiber that is interrupted passes the signal on to its
      // children, even while it runs uninterruptibly, which would cancel a
      // release before it is sent). The calls still pending once the outcome is
      // decided are told to stop, and not waited for: the command was sent, and
      // a call forked by a finalizer cannot stop before it ends. Calls are
      // interruptible even inside a finalizer, so that they can be given up on.
      return Effect.forEach(
        nodes,
        (node, index) => Effect.forkDaemon(Effect.flatMap(Effect.exit(Effect.interruptible(call(node))), answered(index)))
      ).pipe(
        Effect.zip(Effect.forkDaemon(Effect.interruptible(timer))),
        Effect.flatMap(([fibers, timerFiber]) =>
          Deferred.await(decided).pipe(
            Effect.ensuring(Effect.forEach([...fibers, timerFiber], Fiber.interruptFork, { discard: true })),
            Effect.zipRight(Effect.sync(() => resultOf(outcomes, answers)))
          )
        )
      )
    })
  })

/**
 * Every node, waiting for all of them (each bounded by `timeout`), with each
 * node's answer. Used to read, where every answer is wanted.
 */
export const all = <A>(
  nodes: ReadonlyArray<RedisNode>,
  call: (node: RedisNode) => Effect.Effect<A, RedisNodeError>,
  timeout: Duration.Duration
): Effect.Effect<FanOutResult<A>> =>
  fanOut(nodes, call, () => true, timeout, (ok, other) => ok + other === nodes.length)

/**
 * Every node, returning as soon as the operation is decided: a quorum of nodes
 * answered `Ok`, or a quorum can no longer be reached. Nodes
 * still pending are then no longer awaited (their outcome is `NotAwaited`).
 * Their command was already sent and still lands on the node, in order with
 * the commands that follow it on the same node, so giving up on the answer
 * loses nothing: a late acquire is undone by the release that follows it.
 * Votes are quarantined when `quarantineMillis` is given (see quarantine.ts).
 */
export const untilDecided = <A>(
  nodes: ReadonlyArray<RedisNode>,
  call: (node: RedisNode) => Effect.Effect<A, RedisNodeError>,
  isYes: (answer: A) => boolean,
  timeout: Duration.Duration,
  quarantineMillis?: number
): Effect.Effect<FanOutResult<A>> =>
  fanOut(nodes, call, isYes, timeout, (ok, other) => Algorithm.tally(nodes.length, ok, other) !== "open", quarantineMillis)

const resultOf = <A>(outcomes: ReadonlyArray<NodeOutcome>, answers: ReadonlyArray<A | undefined>): FanOutResult<A> => ({
  outcomes: [...outcomes],
  yes: outcomes.filter((outcome) => outcome._tag === "Ok").length,
  answers: [...answers]
})
