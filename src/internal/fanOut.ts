/**
 * One operation sent to every node at once, each with its own timeout.
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

export interface FanOutResult<A = unknown> {
  /** One outcome per node, in node order. */
  readonly outcomes: ReadonlyArray<NodeOutcome>
  /** How many nodes answered `Ok`. */
  readonly yes: number
  /** Each node's answer, where it answered in time. */
  readonly answers: ReadonlyArray<A | undefined>
}

/**
 * The outcome of one node's call, with the per-node timeout applied. It never
 * fails: an unexpected defect is that node's `Failed` outcome, so that a
 * fan-out always comes to a decision.
 */
const callNode = <A>(
  node: RedisNode,
  call: (node: RedisNode) => Effect.Effect<A, RedisNodeError>,
  isYes: (answer: A) => boolean,
  timeout: Duration.Duration
): Effect.Effect<NodeOutcome> =>
  Effect.flatMap(Clock.monotonicMillis, (start) => {
    const since = Effect.map(Clock.monotonicMillis, (now) => now - start)
    // Interruptible even inside a finalizer or an uninterruptible region: the
    // timeout must be able to give up on a node that never answers.
    return Effect.interruptible(call(node)).pipe(
      Effect.timeoutTo({ duration: timeout, onTimeout: () => undefined, onSuccess: (answer) => ({ answer }) }),
      Effect.flatMap((answered) =>
        Effect.map(since, (millis): NodeOutcome =>
          answered === undefined
            ? { _tag: "TimedOut", node: node.name, millis }
            : { _tag: isYes(answered.answer) ? "Ok" : "Held", node: node.name, millis })
      ),
      Effect.catchAllCause((cause) => Effect.map(since, (millis) => unexpected(node, cause, millis)))
    )
  })

/** The outcome of a call that ended some other way than an answer or its timeout. */
const unexpected = (node: RedisNode, cause: Cause.Cause<RedisNodeError>, millis: number): NodeOutcome => {
  if (Cause.isInterruptedOnly(cause)) return { _tag: "NotAwaited", node: node.name, millis }
  const error = Cause.isFailType(cause)
    ? cause.error
    : new RedisNodeError({ node: node.name, reason: "Unknown", detail: Cause.pretty(cause), cause: Cause.squash(cause) }, true)
  return { _tag: "Failed", node: node.name, millis, error }
}

/**
 * Every node, waiting for all of them (each bounded by `timeout`), with each
 * node's answer. Used to read, where every answer is wanted.
 */
export const all = <A>(
  nodes: ReadonlyArray<RedisNode>,
  call: (node: RedisNode) => Effect.Effect<A, RedisNodeError>,
  timeout: Duration.Duration
): Effect.Effect<FanOutResult<A>> =>
  Effect.suspend(() => {
    const answers: Array<A | undefined> = nodes.map(() => undefined)
    return Effect.map(
      Effect.forEach(
        nodes,
        (node, index) => callNode(node, keepAnswer(call, answers, index), () => true, timeout),
        { concurrency: "unbounded" }
      ),
      (outcomes) => resultOf(outcomes, answers)
    )
  })

const keepAnswer = <A>(
  call: (node: RedisNode) => Effect.Effect<A, RedisNodeError>,
  answers: Array<A | undefined>,
  index: number
) =>
(node: RedisNode) => Effect.tap(call(node), (answer) => void (answers[index] = answer))

/**
 * Every node, returning as soon as the operation is decided: a quorum of nodes
 * gave an answer that `counts`, or a quorum can no longer be reached. Nodes
 * still pending are then no longer awaited (their outcome is `NotAwaited`).
 * Their command was already sent and still lands on the node, in order with
 * the commands that follow it on the same node, so giving up on the answer
 * loses nothing: a late acquire is undone by the release that follows it.
 */
export const untilDecided = <A>(
  nodes: ReadonlyArray<RedisNode>,
  call: (node: RedisNode) => Effect.Effect<A, RedisNodeError>,
  isYes: (answer: A) => boolean,
  timeout: Duration.Duration,
  counts: (outcome: NodeOutcome) => boolean = (outcome) => outcome._tag === "Ok"
): Effect.Effect<FanOutResult<A>> =>
  Effect.suspend(() => {
    if (nodes.length === 0) return Effect.succeed(resultOf<A>([], []))
    const answers: Array<A | undefined> = nodes.map(() => undefined)
    const outcomes: Array<NodeOutcome> = nodes.map((node) => ({ _tag: "NotAwaited", node: node.name, millis: 0 }))
    const settled: Array<boolean> = nodes.map(() => false)
    let counted = 0
    let other = 0
    return Effect.flatMap(Effect.zip(Deferred.make<void>(), Clock.monotonicMillis), ([decided, start]) => {
      // The first word on a node counts: its answer, or its timeout.
      const settle = (index: number, outcome: NodeOutcome) => {
        if (settled[index]) return
        settled[index] = true
        outcomes[index] = outcome
        if (counts(outcome)) counted++
        else other++
        if (Algorithm.tally(nodes.length, counted, other) !== "open") Deferred.unsafeDone(decided, Effect.void)
      }
      const answered = (index: number) => (exit: Exit.Exit<A, RedisNodeError>) =>
        Effect.map(Clock.monotonicMillis, (now) => {
          const node = nodes[index]
          const millis = now - start
          if (Exit.isSuccess(exit)) {
            answers[index] = exit.value
            settle(index, { _tag: isYes(exit.value) ? "Ok" : "Held", node: node.name, millis })
          } else {
            settle(index, unexpected(node, exit.cause, millis))
          }
        })
      // All calls start together, so one timer stands for every node's timeout.
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
      // a call forked by a finalizer cannot stop before it ends.
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

const resultOf = <A>(outcomes: ReadonlyArray<NodeOutcome>, answers: ReadonlyArray<A | undefined>): FanOutResult<A> => ({
  outcomes: [...outcomes],
  yes: outcomes.filter((outcome) => outcome._tag === "Ok").length,
  answers: [...answers]
})
