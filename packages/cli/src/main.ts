#!/usr/bin/env node
/**
 * The `redlock` command line, on the plain lock manager of
 * `@effect-redlock/core` (no Effect: it installs with ioredis alone).
 *
 *   redlock run --resource R --ttl 30s [--wait 10s] [--limit N | --mode read|write] [--nodes redis://a,...] -- <command> [args...]
 *   redlock inspect R [--limit N | --max-readers N] [--nodes redis://a,...]
 *
 * Nodes come from `--nodes` or `REDLOCK_NODES` (comma-separated redis://
 * URLs); a password comes from the URL or `REDLOCK_PASSWORD` and is never
 * printed. Exit codes: see exitCodes.ts (and docs/command-line.md).
 */
import * as Algorithm from "@effect-redlock/core/engine/algorithm.js"
import {
  InvalidOptions,
  LockNotAcquired,
  makeRedlock,
  type PromiseLock,
  type PromiseRedlock
} from "@effect-redlock/core/Promise.js"
import { parseArgs } from "node:util"
import * as Child from "./child.js"
import * as ExitCodes from "./exitCodes.js"
import * as Help from "./help.js"
import * as Inspect from "./inspect.js"
import * as Retry from "./retry.js"
import * as Settings from "./settings.js"
import * as Signals from "./signals.js"
import { version } from "./version.js"

/** Every flag takes a value, checked by the code that reads it. */
const valueFlags = (names: ReadonlyArray<string>): Record<string, { readonly type: "string" }> =>
  Object.fromEntries([...names, ...Object.keys(Settings.settingFlags)].map((flag) => [flag, { type: "string" }]))

const runOptions = valueFlags(["resource", "ttl", "wait", "limit", "mode", "max-readers", "kill-after"])
const inspectOptions = valueFlags(["limit", "max-readers"])

type Flags = Record<string, string | undefined>

/** The flags of `args` (parseArgs's own errors, such as a flag without its value, as a UsageError). */
const flagsOf = (args: ReadonlyArray<string>, options: Record<string, { readonly type: "string" }>) => {
  try {
    const parsed = parseArgs({ args: [...args], options, allowPositionals: true, strict: true })
    return { values: parsed.values as Flags, positionals: parsed.positionals }
  } catch (error) {
    throw new Settings.UsageError(error instanceof Error ? error.message : String(error))
  }
}

/** `run`'s flags and its command: after `--`, or from the first word that is not a flag or a flag's value. */
const splitRun = (
  args: ReadonlyArray<string>
): { readonly flags: ReadonlyArray<string>; readonly command: ReadonlyArray<string> } => {
  const separator = args.indexOf("--")
  if (separator >= 0) return { flags: args.slice(0, separator), command: args.slice(separator + 1) }
  let index = 0
  while (index < args.length && args[index].startsWith("-")) index += args[index].includes("=") ? 1 : 2
  return { flags: args.slice(0, index), command: args.slice(index) }
}

const settingsOf = (flags: Flags) =>
  Settings.managerOf(
    Object.fromEntries(
      Object.keys(Settings.settingFlags).flatMap((flag) => flags[flag] === undefined ? [] : [[flag, flags[flag]]])
    ),
    process.env
  )

const optionalWhole = (flags: Flags, flag: string): number | undefined =>
  flags[flag] === undefined ? undefined : Settings.wholeNumberOf({ text: flags[flag], source: `--${flag}` })

const durationFlag = (flags: Flags, flag: string, defaultMillis: number): number =>
  flags[flag] === undefined ? defaultMillis : Settings.durationOf({ text: flags[flag], source: `--${flag}` })

/**
 * The per-node timeout of `run` when none is set: a tenth of the ttl, up to
 * 1 s, never below the library's default (1% of the ttl). A cron job on a
 * busy machine must not take one slow answer of a healthy server for a
 * node that is down; the time is taken from the lock's validity only when
 * a node is that slow.
 */
const cronNodeTimeoutMillis = (ttlMillis: number): number =>
  Math.max(Algorithm.defaultNodeTimeoutMillis(ttlMillis), Math.min(1000, Math.floor(ttlMillis / 10)))

/** Stops what redlock waits for when it receives a signal nobody else takes. */
const stopping = new AbortController()

/** The manager over the flags' (else the environment's) nodes and settings, closed after `use`. */
const withManager = async <A>(
  flags: Flags,
  use: (redlock: PromiseRedlock, nodeTimeoutSet: boolean) => Promise<A>
): Promise<A> => {
  const { nodes, nodeTimeoutSet, options } = settingsOf(flags)
  const redlock = await makeRedlock(nodes, options)
  try {
    return await use(redlock, nodeTimeoutSet)
  } finally {
    await redlock.close()
  }
}

/** `redlock run`: the command's exit code, or one of redlock's own. */
const run = async (args: ReadonlyArray<string>): Promise<number> => {
  const split = splitRun(args)
  const { values: flags } = flagsOf(split.flags, runOptions)
  const [command, ...commandArgs] = split.command
  if (flags.resource === undefined) throw new Settings.UsageError("--resource: required (the resource to lock)")
  if (command === undefined) {
    throw new Settings.UsageError("no command to run: redlock run --resource NAME -- COMMAND [ARGS...]")
  }
  const mode = flags.mode ?? "lock"
  if (mode !== "lock" && mode !== "read" && mode !== "write") {
    throw new Settings.UsageError(`--mode: expected lock, read or write, got "${mode}"`)
  }
  const ttlMillis = durationFlag(flags, "ttl", 30_000)
  const waitMillis = flags.wait === undefined ? undefined : durationFlag(flags, "wait", 0)
  const killAfterMillis = durationFlag(flags, "kill-after", 10_000)
  const limit = optionalWhole(flags, "limit")
  const maxReaders = optionalWhole(flags, "max-readers")
  if (limit !== undefined && mode !== "lock") {
    throw new Settings.UsageError("--limit holds a permit; it does not go with --mode read or write")
  }
  return withManager(flags, async (redlock, nodeTimeoutSet) => {
    const options = {
      ttl: ttlMillis,
      retry: waitMillis === undefined ? Retry.busyNodes : Retry.waiting(waitMillis),
      autoExtend: true,
      signal: stopping.signal,
      ...(nodeTimeoutSet ? {} : { nodeTimeout: cronNodeTimeoutMillis(ttlMillis) })
    }
    const held = limit !== undefined ? "permit of" : mode === "lock" ? "lock on" : `${mode} hold of`
    // The command, until it exits or the lock is lost (then it is stopped, and redlock exits 69).
    const body = async (_lock: PromiseLock, lost: AbortSignal): Promise<number> => {
      // Stopped by a signal as the lock came: the command is not started (redlock exits 128 + the signal).
      if (stopping.signal.aborted) return 0
      const child = Child.spawn(command, commandArgs)
      const onLost = new Promise<"lost">((resolve) =>
        lost.addEventListener("abort", () => resolve("lost"), { once: true })
      )
      const ended = await Promise.race([child.exited, onLost])
      if (ended !== "lost") return ended
      const reason = lost.reason instanceof Error ? lost.reason.message : String(lost.reason)
      process.stderr.write(`redlock: ${held} ${flags.resource} lost (${reason}); stopping the command\n`)
      await child.stop(killAfterMillis)
      return ExitCodes.lockLost
    }
    const resource = flags.resource!
    return limit !== undefined
      ? redlock.usingPermit(resource, { ...options, limit }, body)
      : mode === "read"
      ? redlock.usingRead(resource, { ...options, maxReaders }, body)
      : mode === "write"
      ? redlock.usingWrite(resource, { ...options, maxReaders }, body)
      : redlock.using(resource, options, body)
  })
}

/** `redlock inspect`: prints who holds the resource; 0. */
const inspect = async (args: ReadonlyArray<string>): Promise<number> => {
  const { positionals, values: flags } = flagsOf(args, inspectOptions)
  if (positionals.length !== 1) throw new Settings.UsageError("expected one resource: redlock inspect NAME [flags]")
  const resource = positionals[0]
  const limit = optionalWhole(flags, "limit")
  const maxReaders = optionalWhole(flags, "max-readers")
  const lines = await withManager(flags, (redlock) =>
    maxReaders !== undefined
      ? Inspect.readWrite(redlock, resource, maxReaders)
      : limit !== undefined
      ? Inspect.permits(redlock, resource, limit)
      : Inspect.lock(redlock, resource))
  process.stdout.write(lines.map((line) => `${line}\n`).join(""))
  return 0
}

/** What an error means to a caller of redlock: an exit code, and a line on stderr. */
const exitFor = (error: unknown, usage: string): number => {
  const say = (message: string) => process.stderr.write(`redlock: ${message}\n`)
  if (stopping.signal.aborted && error === stopping.signal.reason) return 0
  if (error instanceof Settings.UsageError) {
    say(error.message)
    if (error.showUsage) process.stderr.write(`\n${usage}`)
    return ExitCodes.usage
  }
  if (error instanceof InvalidOptions) {
    say(error.message)
    return ExitCodes.usage
  }
  if (error instanceof LockNotAcquired) {
    say(error.message)
    return error.reason === "Held" || error.reason === "NotYourTurn"
      ? ExitCodes.notAcquired
      : ExitCodes.nodesUnavailable
  }
  if (error instanceof Child.CannotRun) {
    say(error.message)
    return ExitCodes.cannotRun
  }
  say(error instanceof Error ? error.message : String(error))
  return ExitCodes.internal
}

const main = async (args: ReadonlyArray<string>): Promise<number> => {
  if (args.length === 0) {
    // No subcommand: the usage, as for any other bad usage.
    process.stderr.write(Help.top)
    return ExitCodes.usage
  }
  if (args.length === 1 && args[0] === "--version") {
    process.stdout.write(`${version()}\n`)
    return 0
  }
  const asked = Help.preParse(args)
  if (asked?._tag === "Help") {
    process.stdout.write(asked.text)
    return 0
  }
  if (asked?._tag === "Unknown") {
    process.stderr.write(`redlock: unknown flag ${asked.flag} (see redlock ${args[0]} --help)\n`)
    return ExitCodes.usage
  }
  const [subcommand, ...rest] = args
  const usage = subcommand === "run" ? Help.run : subcommand === "inspect" ? Help.inspect : Help.top
  try {
    if (subcommand === "run") return await run(rest)
    if (subcommand === "inspect") return await inspect(rest)
    throw new Settings.UsageError(`unknown command ${JSON.stringify(subcommand)}: run or inspect`)
  } catch (error) {
    return exitFor(error, usage)
  }
}

let stoppedBy: NodeJS.Signals | undefined
Signals.install((signal) => {
  stoppedBy = signal
  stopping.abort(new Error(`stopped by ${signal}`))
})
main(process.argv.slice(2)).then((code) => process.exit(stoppedBy !== undefined ? ExitCodes.bySignal(stoppedBy) : code))
