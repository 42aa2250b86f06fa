/**
 * One operation sent to every node at once, each with its own timeout.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type { NodeOutcome, RedisNode, RedisNodeError } from "../RedisNode.js"
import * as Algorithm from "./algorithm.js"

export interface FanOutResult {
  /** One outcome per node, in node order. */
  readonly outcomes: ReadonlyArray<NodeOutcome>
  /** How many nodes answered `Ok`. */
  readonly yes: number
}

/** The outcome of one node's call, with the per-node timeout applied. It never fails. */
const callNode = <A>(
  node: RedisNode,
  call: (node: RedisNode) => Effect.Effect<A, RedisNodeError>,
  isYes: (answer: A) => boolean,
  timeout: Duration.Duration
): Effect.Effect<NodeOutcome> =>
  Effect.flatMap(Clock.currentTimeNanos, (start) => {
    const since = Effect.map(Clock.currentTimeNanos, (now) => Number(now - start) / 1e6)
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
      Effect.catchAll((error) =>
        Effect.map(since, (millis): NodeOutcome => ({ _tag: "Failed", node: node.name, millis, error }))
      )
    )
  })

/**
 * Every node, waiting for all of them (each bounded by `timeout`). Used for
 * release, where every node must be asked and answers are only reported.
 */
export const all = <A>(
  nodes: ReadonlyArray<RedisNode>,
  call: (node: RedisNode) => Effect.Effect<A, RedisNodeError>,
  isYes: (answer: A) => boolean,
  timeout: Duration.Duration
): Effect.Effect<FanOutResult> =>
  Effect.map(
    Effect.forEach(nodes, (node) => callNode(node, call, isYes, timeout), { concurrency: "unbounded" }),
    (outcomes) => ({ outcomes, yes: outcomes.filter((outcome) => outcome._tag === "Ok").length })
  )

/**
 * Every node, returning as soon as the attempt is decided: a quorum said yes,
 * or a quorum can no longer be reached. Nodes still pending are then no longer
 * awaited (their outcome is `NotAwaited`); the caller releases on every node,
 * and nodes apply operations in order, so a late yes is undone by that release.
 */
export const untilDecided = <A>(
  nodes: ReadonlyArray<RedisNode>,
  call: (node: RedisNode) => Effect.Effect<A, RedisNodeError>,
  isYes: (answer: A) => boolean,
  timeout: Duration.Duration
): Effect.Effect<FanOutResult> =>
  Effect.suspend(() => {
    const outcomes: Array<NodeOutcome> = nodes.map((node) => ({ _tag: "NotAwaited", node: node.name, millis: 0 }))
    let yes = 0
    let no = 0
    return Effect.flatMap(Deferred.make<void>(), (decided) => {
      const record = (index: number) => (outcome: NodeOutcome) =>
        Effect.suspend(() => {
          outcomes[index] = outcome
          if (outcome._tag === "Ok") yes++
          else no++
          return Algorithm.tally(nodes.length, yes, no) === "open" ? Effect.void : Deferred.succeed(decided, undefined)
        })
      return Effect.forEach(nodes, (node, index) =>
        Effect.fork(Effect.flatMap(callNode(node, call, isYes, timeout), record(index)))).pipe(
          Effect.flatMap((fibers) =>
            Effect.zipRight(
              Deferred.await(decided),
              Effect.zipRight(Fiber.interruptAll(fibers), Effect.sync(() => ({ outcomes: [...outcomes], yes })))
            )
          )
        )
    })
  })
