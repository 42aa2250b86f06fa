/**
 * The engine's fan-out (engine/fanOut.ts) for the Effect shell: its rules
 * with per-node timeouts as Durations and failures as RedisNodeErrors, and
 * a fan-out as one asynchronous step.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Engine from "@effect-redlock/core/engine/fanOut.js"
import type { Time } from "@effect-redlock/core/engine/time.js"
import type { Node, NodeOperation } from "@effect-redlock/core/engine/node.js"
import * as Monotonic from "./monotonic.js"
import { RedisNodeError } from "./nodes.js"

export { type Answer, type Call, call, type Late, type Rules, send } from "@effect-redlock/core/engine/fanOut.js"

/** A fan-out's result, its failures this shell's RedisNodeErrors (`nodeError`). */
export type FanOutResult<A = unknown> = Engine.FanOutResult<A, RedisNodeError>

/** A failure that is not a RedisNodeError already (a driver that broke its contract) as one. */
export const nodeError = (node: Node, error: unknown): RedisNodeError =>
  error instanceof RedisNodeError
    ? error
    : new RedisNodeError({ node: node.name, reason: "Unknown", detail: String(error), cause: error }, true)

/**
 * Decided as soon as a quorum of nodes answered yes, or a quorum can no
 * longer be reached; votes are quarantined when `quarantineMillis` is given.
 */
export const atQuorum = <A>(
  nodes: ReadonlyArray<Node>,
  isYes: (answer: A) => boolean,
  timeout: Duration.Duration,
  quarantineMillis: number | undefined
): Engine.Rules<A, RedisNodeError> =>
  Engine.atQuorum(nodes, isYes, Duration.toMillis(timeout), quarantineMillis, nodeError)

/**
 * `send` as an effect: one asynchronous step. Interruption only stops the
 * waiting: the commands were sent, and land on each node in order.
 *
 * No canceler is returned: an interrupted fiber stops waiting all the same
 * (Effect resumes it with the interruption and ignores a later resume), and
 * a canceler makes Effect wrap every fan-out in interruption handling that
 * costs more than the rest of the fan-out (measured: ~5 µs and ~2 KB of
 * memory that lives long enough to be promoted, per call). What an
 * interrupted fan-out leaves is its timer, which fires within the node
 * timeout and finds the round over.
 */
const fanOut = <M extends NodeOperation>(
  nodes: ReadonlyArray<Node>,
  call: Engine.Call<M>,
  rules: Engine.Rules<Engine.Answer<M>, RedisNodeError>,
  time: Time | undefined
): Effect.Effect<FanOutResult<Engine.Answer<M>>> => {
  const sendOn = (time: Time) =>
    Effect.async<FanOutResult<Engine.Answer<M>>>((resume) =>
      Engine.send(nodes, call, rules, time, (result) => resume(Effect.succeed(result)))
    )
  return time === undefined ? Effect.flatMap(Monotonic.currentTime, sendOn) : sendOn(time)
}

/**
 * Every node, waiting for all of them (each bounded by `timeout`), with each
 * node's answer. Used to read, where every answer is wanted.
 */
export const all = <M extends NodeOperation>(
  nodes: ReadonlyArray<Node>,
  call: Engine.Call<M>,
  timeout: Duration.Duration,
  time?: Time
): Effect.Effect<FanOutResult<Engine.Answer<M>>> =>
  fanOut(nodes, call, Engine.everyNode(nodes, Duration.toMillis(timeout), nodeError), time)

/**
 * Every node, returning as soon as the operation is decided: a quorum of nodes
 * answered `Ok`, or a quorum can no longer be reached. Nodes
 * still pending are then no longer awaited (their outcome is `NotAwaited`).
 * Their command was already sent and still lands on the node, in order with
 * the commands that follow it on the same node, so giving up on the answer
 * loses nothing: a late acquire is undone by the release that follows it.
 * Votes are quarantined when `quarantineMillis` is given (see quarantine.ts).
 * A caller that already has the engine's time passes it, saving a lookup.
 */
export const untilDecided = <M extends NodeOperation>(
  nodes: ReadonlyArray<Node>,
  call: Engine.Call<M>,
  isYes: (answer: Engine.Answer<M>) => boolean,
  timeout: Duration.Duration,
  quarantineMillis?: number,
  time?: Time
): Effect.Effect<FanOutResult<Engine.Answer<M>>> =>
  fanOut(nodes, call, atQuorum(nodes, isYes, timeout, quarantineMillis), time)
