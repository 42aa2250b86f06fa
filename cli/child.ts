/**
 * The command `redlock run` supervises: started with the terminal's stdio,
 * sent the signals `redlock` receives (signals.ts), stopped (SIGTERM, then SIGKILL after a
 * grace period) when the lock is lost or the scope closes early.
 */
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ChildProcess from "node:child_process"
import * as ExitCodes from "./exitCodes.js"
import * as Signals from "./signals.js"

export class CannotRun extends Data.TaggedError("CannotRun")<{ readonly command: string; readonly detail: string }> {}

export interface Child {
  /** The exit code: its own, or 128 + the signal that ended it. */
  readonly exited: Effect.Effect<number, CannotRun>
  /** SIGTERM now, SIGKILL after `grace` if it is still running; waits for its exit. */
  readonly stop: (grace: Duration.Duration) => Effect.Effect<number, CannotRun>
}

export const spawn = (command: string, args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<number, CannotRun>()
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = ChildProcess.spawn(command, args, { stdio: "inherit" })
        child.once("error", (error) =>
          Deferred.unsafeDone(done, Effect.fail(new CannotRun({ command, detail: error.message }))))
        child.once("exit", (code, signal) =>
          Deferred.unsafeDone(done, Effect.succeed(code ?? (signal === null ? 0 : ExitCodes.bySignal(signal)))))
        return child
      }),
      // If the supervisor ends first (interrupted, failed), the command does not outlive it.
      (child) => running(child) ? stopChild(child, done, Duration.seconds(10)).pipe(Effect.ignore) : Effect.void
    )
    yield* Signals.forwardTo((signal) => void (running(child) && child.kill(signal)))
    const supervised: Child = {
      exited: Deferred.await(done),
      stop: (grace) => stopChild(child, done, grace)
    }
    return supervised
  })

const running = (child: ChildProcess.ChildProcess) =>
  child.pid !== undefined && child.exitCode === null && child.signalCode === null

const stopChild = (child: ChildProcess.ChildProcess, done: Deferred.Deferred<number, CannotRun>, grace: Duration.Duration) =>
  Effect.suspend(() => {
    if (running(child)) child.kill("SIGTERM")
    return Deferred.await(done).pipe(
      Effect.timeoutTo({
        duration: grace,
        onTimeout: () =>
          Effect.suspend(() => {
            if (running(child)) child.kill("SIGKILL")
            return Deferred.await(done)
          }),
        onSuccess: Effect.succeed
      }),
      Effect.flatten
    )
  })
