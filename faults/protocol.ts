/**
 * What the fault suite's parent and its worker processes say to each other.
 */

/** A worker's settings, passed as JSON in its first argument. */
export interface WorkerConfig {
  readonly id: number
  readonly nodePorts: ReadonlyArray<number>
  readonly storagePort: number
  readonly resource: string
  readonly ttlMillis: number
  readonly maxTtlMillis: number
  readonly holdMillis: readonly [min: number, max: number]
  readonly restartQuarantine: boolean
  readonly durationMillis: number
  readonly seed: number
  /** Take permits of a semaphore of this many instead of the lock. */
  readonly limit?: number | undefined
  /** Hold a read-write lock of this many readers instead of the lock: a third of the holds write. */
  readonly maxReaders?: number | undefined
  /** The client library of the lock nodes (default ioredis). */
  readonly client?: "ioredis" | "node-redis" | "glide" | undefined
}

/** What a worker prints, one JSON object per line. Tokens are decimal strings. */
export type WorkerEvent =
  | { readonly type: "ready"; readonly id: number }
  | {
    readonly type: "enter"
    readonly id: number
    readonly token: string
    readonly at: number
    readonly validUntil: number
    /** The lock's resource (a semaphore's slot; a writer's first slot). */
    readonly slot: string
    /** A read-write lock's write hold. */
    readonly write: boolean
  }
  | {
    readonly type: "leave"
    readonly id: number
    readonly at: number
    readonly lateWrite: "accepted" | "stale" | "failed"
  }
  | { readonly type: "error"; readonly id: number; readonly detail: string }
  | { readonly type: "unhandled"; readonly id: number; readonly detail: string }
  | { readonly type: "done"; readonly id: number; readonly acquisitions: number; readonly gaveUp: number }

/** Milliseconds on the machine-wide monotonic clock (CLOCK_MONOTONIC, the same in every process). */
export const hrMillis = () => Number(process.hrtime.bigint()) / 1e6
