/**
 * What `redlock --help` prints, and the flags each subcommand takes: checked
 * before the arguments reach the parser, so that a mistyped flag is an error
 * (exit 64) instead of the start of the command to run.
 */
import * as ExitCodes from "./exitCodes.js"

/** Flags of the lock manager, each standing in for its REDLOCK_* variable. */
const settingFlags = [
  ["--nodes", "URLS", "comma-separated redis:// or rediss:// URLs of the independent masters (REDLOCK_NODES)"],
  [
    "--key-prefix",
    "PREFIX",
    "prefix of the lock keys: your application's, to share its locks (REDLOCK_KEY_PREFIX, default redlock:)"
  ],
  [
    "--max-ttl",
    "DURATION",
    "longest ttl of any client of these resources; a restarted server sits out this long (REDLOCK_MAX_TTL, default 30s)"
  ],
  [
    "--node-timeout",
    "DURATION",
    "per-node timeout of each command (REDLOCK_NODE_TIMEOUT; run's default: a tenth of the ttl, up to 1s)"
  ],
  ["--drift-factor", "NUMBER", "clock drift allowance, a fraction of the ttl (REDLOCK_DRIFT_FACTOR, default 0.01)"],
  ["--max-extensions", "N", "how many times a lock may be extended (REDLOCK_MAX_EXTENSIONS)"],
  ["--fence-prefix", "PREFIX", "prefix of the fencing counters (REDLOCK_FENCE_PREFIX, default redlock-fence:)"],
  [
    "--restart-quarantine",
    "on|off",
    "a server started less than --max-ttl ago votes only if it keeps its keys (AOF, appendfsync always); " +
    "off only for a throw-away development server (REDLOCK_RESTART_QUARANTINE, default on)"
  ]
] as const

const runFlags = [
  ["--resource", "NAME", "the resource to lock (required)"],
  ["--ttl", "DURATION", "time to live of the lock, extended while the command runs (default 30s)"],
  [
    "--wait",
    "DURATION",
    "how long to wait for the lock (default: no wait; nodes that could not decide are asked again for 2s)"
  ],
  ["--limit", "N", "hold one of N permits of the resource instead of its lock: at most N copies run at once"],
  ["--mode", "lock|read|write", "read: with other readers; write: alone; lock (default): the resource's lock"],
  ["--max-readers", "N", "with --mode read or write: readers at once, the same for every client (default 16)"],
  [
    "--kill-after",
    "DURATION",
    "after a lost lock, SIGKILL the command if SIGTERM did not stop it within this (default 10s)"
  ],
  ...settingFlags
] as const

const inspectFlags = [
  ["--limit", "N", "show the N permits of a semaphore on the resource instead of its lock"],
  ["--max-readers", "N", "show the read-write lock of N readers on the resource instead of its lock"],
  ...settingFlags
] as const

const flagLines = (flags: ReadonlyArray<readonly [string, string, string]>) =>
  flags.map(([flag, value, what]) => `  ${`${flag} ${value}`.padEnd(32)} ${what}`).join("\n")

const exitCodes = `Exit codes:
  (the command's own)  run: the command ran; its exit code, or 128 + the signal that ended it
  ${ExitCodes.usage}                   bad usage: an unknown or invalid flag, no nodes, an invalid option
  ${ExitCodes.lockLost}                   the lock (or permit) was lost while the command ran; the command was stopped
  ${ExitCodes.notAcquired}                   not acquired: someone else holds the resource, or waits ahead (within --wait)
  ${ExitCodes.nodesUnavailable}                   not acquired: the nodes could not decide (unreachable, wrong password, or
                       sitting out their restart quarantine): alert on it, do not skip quietly
  ${ExitCodes.cannotRun}                  the command could not be started`

const environment =
  `Nodes come from --nodes or REDLOCK_NODES; a password from the URL or REDLOCK_PASSWORD (never printed).
Every other setting comes from its flag, else its REDLOCK_* variable, else the library's default.
Durations: 500ms, 30s, 2m, 1h.`

export const top = `redlock: run a shell command under a distributed lock (Redlock over N Redis masters)

Usage:
  redlock run --resource NAME [flags] -- COMMAND [ARGS...]
  redlock inspect NAME [flags]
  redlock run --help | redlock inspect --help | redlock --version

Example:
  export REDLOCK_NODES=redis://10.0.0.11:6379,redis://10.0.0.12:6379,redis://10.0.0.13:6379
  redlock run --resource reports:nightly --ttl 30s --wait 10s -- ./nightly-report --full

${environment}

${exitCodes}

Built on effect-redlock's core (bundled, no Effect): the locks it takes are the same on the wire as those of
programs on either Effect line or the promise API.
`

export const run = `redlock run: hold a lock while a command runs; release it when the command exits

Usage:
  redlock run --resource NAME [flags] -- COMMAND [ARGS...]

Flags:
${flagLines(runFlags)}

The lock is extended while the command runs. SIGINT, SIGTERM and SIGHUP go to the command.

Examples:
  redlock run --resource reports:nightly --ttl 30s --wait 10s -- ./nightly-report --full
  redlock run --resource thumbnails --limit 3 --wait 5m -- ./make-thumbnails
  redlock run --resource report-db --mode write --wait 5m -- ./migrate

${environment}

${exitCodes}
`

export const inspect = `redlock inspect: show who holds a resource on each node

Usage:
  redlock inspect NAME [flags]

Flags:
${flagLines(inspectFlags)}

Examples:
  redlock inspect reports:nightly
  redlock inspect thumbnails --limit 3

${environment}

Exit codes: 0 shown; ${ExitCodes.usage} bad usage.
`

/** The flags of each subcommand that take a value. */
const valueFlags: Record<"run" | "inspect", ReadonlySet<string>> = {
  run: new Set(runFlags.map(([flag]) => flag)),
  inspect: new Set(inspectFlags.map(([flag]) => flag))
}

const helpFlags = new Set(["--help", "-h"])

/**
 * What the arguments (after `node redlock`) ask before any parsing: help, or
 * a flag the subcommand does not take (anywhere before `--`, or before the
 * command when there is no `--`).
 */
export const preParse = (
  args: ReadonlyArray<string>
):
  | { readonly _tag: "Help"; readonly text: string }
  | { readonly _tag: "Unknown"; readonly flag: string }
  | undefined =>
{
  const subcommand = args[0] === "run" || args[0] === "inspect" ? args[0] : undefined
  const separator = args.indexOf("--")
  const before = separator < 0 ? args : args.slice(0, separator)
  if (subcommand === undefined) {
    return before.some((arg) => helpFlags.has(arg))
      ? { _tag: "Help", text: top }
      : undefined
  }
  for (let index = 1; index < before.length; index++) {
    const arg = before[index]
    if (helpFlags.has(arg)) return { _tag: "Help", text: subcommand === "run" ? run : inspect }
    if (!arg.startsWith("-")) {
      // Without "--", the command starts at its first word (inspect's one word is its resource).
      if (separator < 0 && subcommand === "run") return undefined
      continue
    }
    const flag = arg.includes("=") ? arg.slice(0, arg.indexOf("=")) : arg
    if (!valueFlags[subcommand].has(flag)) return { _tag: "Unknown", flag }
    if (!arg.includes("=")) index++ // its value
  }
  return undefined
}
