/**
 * What every worker process of the fault suite does alike, whatever API it
 * takes its locks with (worker.ts, nodeRedlockWorker.ts): its settings from
 * its first argument, its events on stdout, the parent's go, and the fenced
 * writes of its critical sections.
 */
import { Effect } from "effect"
import type { Redis } from "ioredis"
import * as Fenced from "effect-redlock/Fencing/Ioredis"
import type { WorkerConfig, WorkerEvent } from "./protocol.js"

export const config = JSON.parse(process.argv[2] ?? "{}") as WorkerConfig

export const emit = (event: WorkerEvent) => process.stdout.write(JSON.stringify(event) + "\n")
process.on("unhandledRejection", (reason) => emit({ type: "unhandled", id: config.id, detail: String(reason) }))
process.on("uncaughtException", (error) => emit({ type: "unhandled", id: config.id, detail: String(error) }))

/**
 * SIGUSR2: the parent's go, once every worker is ready (and a brand-new
 * cluster started); listened to from the start, so it cannot come first.
 */
export const startSignal = new Promise<void>((resolve) => process.once("SIGUSR2", () => resolve()))

/** A write to the fenced storage: one key per lock (a semaphore's slots each order their own holders). */
export const fencedWrite = (storage: Redis) => (slot: string, value: string, token: bigint) =>
  Fenced.set(storage, { key: `fault-suite:data:${slot}`, value, token }).pipe(
    Effect.as("accepted" as const),
    Effect.catchTag("StaleFencingToken", () => Effect.succeed("stale" as const)),
    Effect.catchAll(() => Effect.succeed("failed" as const))
  )
