/**
 * One operation sent to every node at once, all bounded by the same per-node
 * timeout (the calls start together, so one timer serves them all): plain
 * code over the nodes' promises (or callbacks, where a node offers them:
 * nodeCalls.ts), with no fiber per node, on the time its caller hands it
 * (time.ts). A round is decided by its rules: at a quorum, or once every
 * node answered.
 *
 * @internal
 */
import type { Node, NodeError, NodeOperation, NodeOutcome, NodePromises } from "./node.js"
import * as Algorithm from "./algorithm.js"
import * as Arrays from "./arrays.js"
import { callOf } from "./nodeCalls.js"
import * as Quarantine from "./quarantine.js"
import * as SameServer from "./sameServer.js"
import type { Time } from "./time.js"

/** Which operation to send, with its arguments. */
export interface Call<M extends NodeOperation> {
  readonly method: M
  readonly args: Parameters<NodePromises[M]>
}

export const call = <M extends NodeOperation>(method: M, ...args: Parameters<NodePromises[M]>): Call<M> => ({
  method,
  args
})

export type Answer<M extends NodeOperation> = Awaited<ReturnType<NodePromises[M]>>

/** A round's result; `E`: the error of a node's failure (the shell's, as its `nodeError` makes it). */
export interface FanOutResult<A = unknown, E extends NodeError = NodeError> {
  /** One outcome per node, in node order. */
  readonly outcomes: ReadonlyArray<NodeOutcome<E>>
  /** How many nodes answered `Ok`. */
  readonly yes: number
  /** Each node's answer, where it answered in time. */
  readonly answers: ReadonlyArray<A | undefined>
  /** When the calls were sent and when the round was decided, on the monotonic timeline (ms). */
  readonly startMillis: number
  readonly endMillis: number
  /**
   * The answers of nodes that were not awaited (or timed out), as they come
   * after the round was decided; only when some node had not answered.
   */
  readonly late?: Late | undefined
}

export interface Late {
  /**
   * Listen: to the answers that already came, then to those to come, each
   * told as the round's rules read it (for an attempt: whether the node took
   * the key); `undefined` is a call that failed (it may or may not have run
   * on its node).
   */
  forEach(listener: (index: number, yes: boolean | undefined, answer: unknown) => void): void
}

// Marks, in a decided round's own outcomes, a node whose answer or failure came after the decision.
const answeredLate: NodeOutcome<never> = { _tag: "NotAwaited", node: "", millis: 0 }
const failedLate: NodeOutcome<never> = { _tag: "NotAwaited", node: "", millis: 0 }

/** When a round is decided, and how a node's answer counts. */
export interface Rules<A, E extends NodeError = NodeError> {
  readonly isYes: (answer: A) => boolean
  /** From how many nodes voted yes (`ok`) and otherwise (`other`), and the answers so far. */
  readonly isDecided: (ok: number, other: number, answers: ReadonlyArray<A | undefined>) => boolean
  readonly timeoutMillis: number
  readonly quarantineMillis: number | undefined
  /**
   * Whether a yes is a vote for the lock (a grant, an extension, a fence): a
   * node that is an earlier node's server abstains (sameServer.ts). Those
   * operations answer yes on every node of one server alike. Not a release's
   * deletion, which only the first of them to run makes.
   */
  readonly votes: boolean
  /** A node's failure as its outcome's error (the drivers' promises reject with the shell's node error; anything else is wrapped). */
  readonly nodeError: (node: Node, error: unknown) => E
}

/**
 * The bookkeeping of one fan-out: the first word on a node counts (its
 * answer, its failure, or the timeout), and the round is decided as soon as
 * the rules say so.
 */
class Round<A, E extends NodeError> implements Late {
  readonly answers: Array<A | undefined>
  /** The first word of each node; none yet: not awaited (filled in by `result`). */
  private readonly outcomes: Array<NodeOutcome<E> | undefined>
  private readonly runsAtStart
  private ok = 0
  private other = 0

  constructor(readonly nodes: ReadonlyArray<Node>, readonly rules: Rules<A, E>, readonly start: number) {
    this.answers = Arrays.unset(nodes.length)
    this.outcomes = Arrays.unset(nodes.length)
    this.runsAtStart = rules.quarantineMillis === undefined ? undefined : nodes.map((node) => node.run())
  }

  get decided(): boolean {
    return this.rules.isDecided(this.ok, this.other, this.answers)
  }

  private settle(index: number, outcome: NodeOutcome<E>): void {
    if (this.outcomes[index] !== undefined) return
    this.outcomes[index] = outcome
    if (outcome._tag === "Ok") this.ok++
    else this.other++
  }

  answered(index: number, answer: A, now: number): void {
    const node = this.nodes[index]
    const millis = now - this.start
    this.answers[index] = answer
    const yes = this.rules.isYes(answer)
    let abstention: string | undefined
    if (yes) {
      if (this.runsAtStart !== undefined) {
        abstention = Quarantine.abstention(
          this.runsAtStart[index],
          node.run(),
          this.start,
          this.rules.quarantineMillis!,
          this.runsAtStart
        )
      }
      if (abstention === undefined && this.rules.votes) abstention = SameServer.abstention(this.nodes, index)
    }
    this.settle(
      index,
      abstention !== undefined
        ? { _tag: "Abstained", node: node.name, millis, detail: abstention }
        : { _tag: yes ? "Ok" : "Held", node: node.name, millis }
    )
  }

  failed(index: number, error: E, now: number): void {
    this.settle(index, { _tag: "Failed", node: this.nodes[index].name, millis: now - this.start, error })
  }

  timedOut(now: number): void {
    this.nodes.forEach((node, index) =>
      this.settle(index, { _tag: "TimedOut", node: node.name, millis: now - this.start })
    )
  }

  /** The round as decided; `collectLate`: the calls still pending go on, and their answers are wanted. */
  result(endMillis: number, collectLate: boolean): FanOutResult<A, E> {
    let pending = false
    // Copies, by loops (no callback per round): the round's own arrays keep the late words.
    const outcomes = Arrays.empty<NodeOutcome<E>>()
    for (let index = 0; index < this.outcomes.length; index++) {
      const outcome = this.outcomes[index]
      pending ||= outcome === undefined || outcome._tag === "TimedOut"
      outcomes.push(outcome ?? { _tag: "NotAwaited", node: this.nodes[index].name, millis: 0 })
    }
    return {
      outcomes,
      yes: this.ok,
      answers: this.answers.slice(),
      startMillis: this.start,
      endMillis,
      late: collectLate && pending ? this : undefined
    }
  }

  // After the decision the round's own answers and outcomes (the result has
  // copies) keep the late words: nothing is allocated for a round whose late
  // answers nobody asks for.
  private lateListener: ((index: number, yes: boolean | undefined, answer: unknown) => void) | undefined

  /** A node's answer (`undefined`: its failure) after the round was decided. */
  late(index: number, answer: A | undefined): void {
    this.answers[index] = answer
    this.outcomes[index] = answer === undefined ? failedLate : answeredLate
    this.lateListener?.(index, this.lateYes(index), answer)
  }

  private lateYes(index: number): boolean | undefined {
    const answer = this.answers[index]
    return answer === undefined ? undefined : this.rules.isYes(answer)
  }

  forEach(listener: (index: number, yes: boolean | undefined, answer: unknown) => void): void {
    this.lateListener = listener
    this.outcomes.forEach((outcome, index) => {
      // A node that timed out may have answered before the round was decided.
      const answeredAfterTimeout = outcome?._tag === "TimedOut" && this.answers[index] !== undefined
      if (outcome === answeredLate || outcome === failedLate || answeredAfterTimeout) {
        listener(index, this.lateYes(index), this.answers[index])
      }
    })
  }
}

/**
 * Call every node's promise, with the timeout on `time`'s timer, and tell
 * `decided` once the round is decided. Plain code, no fiber: attempts,
 * releases and waiting call it directly, effects from one asynchronous step
 * (`fanOut` below).
 */
export const send = <M extends NodeOperation, E extends NodeError>(
  nodes: ReadonlyArray<Node>,
  call: Call<M>,
  rules: Rules<Answer<M>, E>,
  time: Time,
  decided: (result: FanOutResult<Answer<M>, E>) => void
): void => {
  const round = new Round(nodes, rules, time.now())
  if (nodes.length === 0) return decided(round.result(round.start, false))
  let deciding = false
  let done = false
  // `at`: the time of the word that decided the round, which is when it was decided. The result is
  // taken a microtask later, so that answers that came at the same moment (in-memory nodes answer
  // every operation due at once together) count as answers, not as late ones.
  const finish = (at: number) => {
    if (deciding || !round.decided) return
    deciding = true
    time.defer(() => {
      done = true
      cancelTimeout()
      decided(round.result(at, true))
    })
  }
  const cancelTimeout = time.timeout(rules.timeoutMillis, () => {
    const at = time.now()
    round.timedOut(at)
    finish(at)
  })
  for (let index = 0; index < nodes.length; index++) {
    const node = nodes[index]
    const answered = (answer: Answer<M>) => {
      if (done) return round.late(index, answer)
      const at = time.now()
      round.answered(index, answer, at)
      finish(at)
    }
    const failed = (error: unknown) => {
      if (done) return round.late(index, undefined)
      const at = time.now()
      round.failed(index, rules.nodeError(node, error), at)
      finish(at)
    }
    const byCallback = callOf(node)
    if (byCallback !== undefined) {
      byCallback(call.method, call.args, answered as (answer: unknown) => void, failed)
      continue
    }
    const operation = node.promises[call.method] as unknown as (
      ...args: Parameters<NodePromises[M]>
    ) => Promise<Answer<M>>
    operation(...call.args).then(answered, failed)
  }
}

/** Every node's answer is awaited (each bounded by `timeoutMillis`). */
export const everyNode = <E extends NodeError>(
  nodes: ReadonlyArray<Node>,
  timeoutMillis: number,
  nodeError: Rules<unknown, E>["nodeError"]
): Rules<unknown, E> => ({
  isYes: () => true,
  isDecided: (ok, other) => ok + other === nodes.length,
  timeoutMillis,
  quarantineMillis: undefined,
  votes: false,
  nodeError
})

/**
 * Decided as soon as a quorum of nodes answered yes, or a quorum can no
 * longer be reached; votes are quarantined when `quarantineMillis` is given.
 */
export const atQuorum = <A, E extends NodeError>(
  nodes: ReadonlyArray<Node>,
  isYes: (answer: A) => boolean,
  timeoutMillis: number,
  quarantineMillis: number | undefined,
  nodeError: Rules<A, E>["nodeError"]
): Rules<A, E> => ({
  isYes,
  isDecided: (ok, other) => Algorithm.tally(nodes.length, ok, other) !== "open",
  timeoutMillis,
  quarantineMillis,
  votes: true,
  nodeError
})

/**
 * A deletion of our keys (a release, an undo): decided at quorum of nodes
 * that deleted them, with no quarantine and no vote: of nodes that are one
 * server, only the first to run it deletes the key.
 */
export const deletions = <E extends NodeError>(
  nodes: ReadonlyArray<Node>,
  timeoutMillis: number,
  nodeError: Rules<number, E>["nodeError"]
): Rules<number, E> => ({
  ...atQuorum(nodes, (deleted: number) => deleted > 0, timeoutMillis, undefined, nodeError),
  votes: false
})
