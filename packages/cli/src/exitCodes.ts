/**
 * Exit codes of the `redlock` command line. `run` otherwise exits with its
 * command's own code (or 128 + the signal number when a signal ended it), so
 * these follow sysexits.h, away from the codes commands usually use.
 */
import * as Os from "node:os"

/** Bad flags, a missing node list, an invalid option such as a ttl above `--max-ttl`. */
export const usage = 64
/** The lock was lost while the command ran; the command was stopped. */
export const lockLost = 69
/** The lock was not acquired within `--wait` (or at once, without `--wait`): someone else holds it, or waits ahead. */
export const notAcquired = 75
/**
 * The lock was not acquired because the nodes could not decide: too many are
 * unreachable, refuse us (a wrong password), or sit out their restart
 * quarantine. Not "busy": a cron job should alert on it, not skip quietly.
 */
export const nodesUnavailable = 76
/** Something redlock did not expect (a bug of its own, or a setting conflict it does not name): its message is printed. */
export const internal = 70
/** The command could not be started (not found, not executable). */
export const cannotRun = 127
/** Exit code of a process ended by `signal`, as shells report it. */
export const bySignal = (signal: NodeJS.Signals): number => 128 + (Os.constants.signals[signal] ?? 0)
