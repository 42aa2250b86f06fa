/**
 * The command `redlock run` supervises: started with the terminal's stdio,
 * sent the signals `redlock` receives (signals.ts), stopped (SIGTERM, then
 * SIGKILL after a grace period) when the lock is lost.
 */
import * as ChildProcess from "node:child_process"
import * as ExitCodes from "./exitCodes.js"
import * as Signals from "./signals.js"

/** The command could not be started (not found, not executable). */
export class CannotRun extends Error {
  constructor(readonly command: string, readonly detail: string) {
    super(`cannot run ${command}: ${detail}`)
  }
}

export interface Child {
  /** The exit code: its own, or 128 + the signal that ended it; rejects with CannotRun. */
  readonly exited: Promise<number>
  /** SIGTERM now, SIGKILL after `graceMillis` if it is still running; resolves with its exit code. */
  readonly stop: (graceMillis: number) => Promise<number>
}

const running = (child: ChildProcess.ChildProcess) =>
  child.pid !== undefined && child.exitCode === null && child.signalCode === null

export const spawn = (command: string, args: ReadonlyArray<string>): Child => {
  const child = ChildProcess.spawn(command, args, { stdio: "inherit" })
  const stopForwarding = Signals.forwardTo((signal) => void (running(child) && child.kill(signal)))
  const exited = new Promise<number>((resolve, reject) => {
    child.once("error", (error) => reject(new CannotRun(command, error.message)))
    child.once("exit", (code, signal) => resolve(code ?? (signal === null ? 0 : ExitCodes.bySignal(signal))))
  })
  // Once it ended (or never started), signals are redlock's own again.
  exited.then(stopForwarding, stopForwarding)
  const stop = (graceMillis: number): Promise<number> => {
    if (running(child)) child.kill("SIGTERM")
    const timer = setTimeout(() => void (running(child) && child.kill("SIGKILL")), graceMillis)
    return exited.finally(() => clearTimeout(timer))
  }
  return { exited, stop }
}
