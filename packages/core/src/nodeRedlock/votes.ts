/**
 * node-redlock's account of an operation: each attempt's votes (which
 * clients said yes, and the error of each that said no), and its errors,
 * with its messages. Made from the engine's outcomes, node by node, the
 * clients in the order they were given.
 *
 * @internal
 */
import { type Outcome, withoutStack } from "../manager/errors.js"

/** One attempt's votes: `votesFor` the clients that applied it, `votesAgainst` each other client's error. */
export interface ExecutionStats<Client> {
  readonly membershipSize: number
  readonly quorumSize: number
  readonly votesFor: Set<Client>
  readonly votesAgainst: Map<Client, Error>
}

/** Every attempt of an operation; each attempt's votes are known once its nodes answered. */
export interface ExecutionResult<Client> {
  readonly attempts: ReadonlyArray<Promise<ExecutionStats<Client>>>
}

/** A node-redlock 4.x lock error; node-redlock 5's `ExecutionError` is one. */
export class LockError extends Error {
  override get name(): string {
    return "LockError"
  }
}

/**
 * An operation that no quorum applied within its retries. `attempts` holds
 * every attempt's votes; `cause` is this library's own error, where it says
 * more (a `LockNotAcquired`, a `LockLost`).
 */
export class ExecutionError<Client = unknown> extends LockError {
  constructor(
    message: string,
    readonly attempts: ReadonlyArray<Promise<ExecutionStats<Client>>>,
    cause?: unknown
  ) {
    super(message, cause === undefined ? undefined : { cause })
  }
  override get name(): string {
    return "ExecutionError"
  }
}

/** A node's vote against: another lock holds a resource there. */
export class ResourceLockedError extends Error {
  override get name(): string {
    return "ResourceLockedError"
  }
}

export const noQuorum = "The operation was unable to achieve a quorum during its retry window."

/** The error a client's vote against carries. */
const againstOf = (outcome: Outcome, keys: number): Error | undefined => {
  switch (outcome._tag) {
    case "Ok":
    case "NotAwaited":
      return undefined
    case "Held":
      return new ResourceLockedError(`The operation was applied to: 0 of the ${keys} requested resources.`)
    case "Failed": {
      // The client's own error where it had one ("Connection is closed."), as node-redlock's votes carry.
      const { cause } = outcome.error
      return cause instanceof Error ? cause : outcome.error
    }
    case "TimedOut":
      return new Error(`${outcome.node}: no answer within ${Math.round(outcome.millis)} ms`)
    case "Abstained":
      return new Error(`${outcome.node}: its vote does not count (${outcome.detail})`)
  }
}

/**
 * The votes of one attempt's `outcomes` (one per client, in order; a node
 * the attempt was decided without is in neither set). `against` is told
 * each error, as node-redlock's "error" event is.
 */
export const statsOf = <Client>(
  clients: ReadonlyArray<Client>,
  quorumSize: number,
  outcomes: ReadonlyArray<Outcome>,
  keys: number,
  against: (error: Error) => void
): ExecutionStats<Client> => {
  const votesFor = new Set<Client>()
  const votesAgainst = new Map<Client, Error>()
  outcomes.forEach((outcome, index) => {
    const client = clients[index]!
    if (outcome._tag === "Ok") return void votesFor.add(client)
    // Made without a stack trace: a waiter's refused attempts make many, and few are read.
    const error = withoutStack(() => againstOf(outcome, keys))
    if (error === undefined) return
    votesAgainst.set(client, error)
    against(error)
  })
  return { membershipSize: clients.length, quorumSize, votesFor, votesAgainst }
}
