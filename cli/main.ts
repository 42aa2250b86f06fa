#!/usr/bin/env node
/**
 * The `redlock` command line.
 *
 *   redlock run --resource R --ttl 30s [--wait 10s] [--limit N | --mode read|write] [--nodes redis://a,...] -- <command> [args...]
 *   redlock inspect R [--limit N | --max-readers N] [--nodes redis://a,...]
 *
 * Nodes come from `--nodes` or `REDLOCK_NODES` (comma-separated redis://
 * URLs); a password comes from the URL or `REDLOCK_PASSWORD` and is never
 * printed. Exit codes: see exitCodes.ts (and docs/command-line.md).
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Redlock from "effect-redlock/Redlock"
import * as ReadWriteLock from "effect-redlock/ReadWriteLock"
import * as Semaphore from "effect-redlock/Semaphore"
import * as Ioredis from "effect-redlock/RedisNode/Ioredis"
import { InvalidOptions, type LockNotAcquired } from "effect-redlock/RedlockError"
import * as Algorithm from "@effect-redlock/core/engine/algorithm.js"
import * as Child from "./child.js"
import * as ExitCodes from "./exitCodes.js"
import * as Help from "./help.js"
import * as Signals from "./signals.js"
import { version } from "./version.js"

/** A duration flag, read by the library's own parser (the one its layerConfig reads REDLOCK_* durations with). */
const durationText = (name: string) =>
  Options.text(name).pipe(
    Options.withPseudoName("DURATION"),
    Options.mapEffect((text) =>
      Option.isSome(Redlock.parseDuration(text))
        ? Effect.succeed(text)
        : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: not a duration: "${text}" (e.g. 500ms, 30s, 2m)`)))
    )
  )

// The text was checked by durationText: it parses.
const duration = (name: string) =>
  durationText(name).pipe(Options.map((text) => Option.getOrThrow(Redlock.parseDuration(text))))

/**
 * The lock manager's settings: each flag stands in for the variable that
 * `Ioredis.layerConfig` or `Redlock.layerConfig` reads, so that the flags,
 * the environment and the library's defaults are read by the library's own
 * code, alike for the CLI and for an application sharing its locks.
 */
const setting = (flag: string, variable: string, description: string, value: Options.Options<string> = Options.text(flag)) =>
  value.pipe(
    Options.withDescription(`${description} (default: $${variable}, else the library's default)`),
    Options.optional,
    Options.map((text) => Option.map(text, (set) => [variable, set] as const))
  )

const managerSettings = {
  nodes: setting("nodes", "REDLOCK_NODES", "Comma-separated redis:// URLs of the independent masters"),
  keyPrefix: setting("key-prefix", "REDLOCK_KEY_PREFIX", "Prefix of the lock keys; the same as the applications sharing these locks"),
  maxTtl: setting(
    "max-ttl",
    "REDLOCK_MAX_TTL",
    "Longest ttl of any client of these resources; a restarted node sits out this long",
    durationText("max-ttl")
  ),
  nodeTimeout: setting("node-timeout", "REDLOCK_NODE_TIMEOUT", "Per-node timeout", durationText("node-timeout")),
  driftFactor: setting("drift-factor", "REDLOCK_DRIFT_FACTOR", "Clock drift allowance as a fraction of the ttl"),
  maxExtensions: setting("max-extensions", "REDLOCK_MAX_EXTENSIONS", "How many times the lock may be extended"),
  fencePrefix: setting("fence-prefix", "REDLOCK_FENCE_PREFIX", "Prefix of the fencing counters"),
  restartQuarantine: setting(
    "restart-quarantine",
    "REDLOCK_RESTART_QUARANTINE",
    "A server that restarted (or just started) sits out --max-ttl unless it keeps its keys (AOF with appendfsync always, " +
      "detected on connect); off only for a throw-away development server",
    Options.choice("restart-quarantine", ["on", "off"]).pipe(Options.map((choice) => choice === "on" ? "true" : "false"))
  )
}

type ManagerFlags = { readonly [K in keyof typeof managerSettings]: Option.Option<readonly [string, string]> }

/** The lock manager over the nodes and settings of the flags, else of the environment. */
const manager = (flags: ManagerFlags) => {
  const given = (Object.keys(managerSettings) as Array<keyof typeof managerSettings>).flatMap((key) => Option.toArray(flags[key]))
  const provider = ConfigProvider.fromMap(new Map(given)).pipe(ConfigProvider.orElse(ConfigProvider.fromEnv))
  return Redlock.layerConfig().pipe(
    Layer.provide(Ioredis.layerConfig()),
    Layer.provide(Layer.setConfigProvider(provider))
  )
}

const isInvalidOptions = (u: unknown): u is InvalidOptions => u instanceof InvalidOptions

const fail = (code: number, message: string) =>
  Effect.zipRight(Console.error(`redlock: ${message}`), Effect.sync(() => void (process.exitCode = code)))

type ConfigLeaf = { readonly missing: boolean; readonly variable: string; readonly message: string }

/** The first thing a configuration error found wrong (both sides of an "or" name the same variable). */
const firstLeaf = (error: ConfigError.ConfigError): ConfigLeaf | undefined => {
  switch (error._op) {
    case "And":
    case "Or":
      return firstLeaf(error.left) ?? firstLeaf(error.right)
    case "MissingData":
    case "InvalidData":
    case "SourceUnavailable":
    case "Unsupported":
      return { missing: error._op === "MissingData", variable: error.path.join("."), message: error.message }
  }
}

/**
 * Errors every subcommand can meet before it does anything: no nodes,
 * invalid options. Each names what was wrong as the user gave it: the flag
 * where one was given, else the variable.
 */
const setupErrors = (flags: ManagerFlags) =>
<A, E, R>(self: Effect.Effect<A, E | ConfigError.ConfigError | InvalidOptions, R>) =>
  self.pipe(
    Effect.catchIf(ConfigError.isConfigError, (error) => {
      const leaf = firstLeaf(error)
      if (leaf === undefined) return fail(ExitCodes.usage, `configuration: ${error}`)
      if (leaf.missing && leaf.variable === "REDLOCK_NODES") {
        return fail(ExitCodes.usage, "no nodes: pass --nodes redis://host:port,... or set REDLOCK_NODES (see --help)")
      }
      const key = (Object.keys(managerSettings) as Array<keyof typeof managerSettings>).find((name) =>
        Option.exists(flags[name], ([variable]) => variable === leaf.variable)
      )
      const source = key === undefined ? leaf.variable : `--${key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`
      return fail(ExitCodes.usage, `${source}: ${leaf.message}`)
    }),
    Effect.catchIf(isInvalidOptions, (error) => fail(ExitCodes.usage, error.message))
  )

/** A whole-number flag; its range is the library's to check (it names the option). */
const wholeNumber = (name: string) =>
  Options.text(name).pipe(
    Options.withPseudoName("N"),
    Options.mapEffect((text) =>
      /^-?\d+$/.test(text)
        ? Effect.succeed(Number(text))
        : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: not a whole number: "${text}"`)))
    ),
    Options.optional
  )

/**
 * The per-node timeout of `run` when none is set: a tenth of the ttl, up to
 * 1 s, never below the library's default (1% of the ttl). A cron job on a
 * busy machine must not take one slow answer of a healthy server for a
 * node that is down; the time is taken from the lock's validity only when
 * a node is that slow.
 */
const cronNodeTimeoutMillis = (ttlMillis: number): number =>
  Math.max(Algorithm.defaultNodeTimeoutMillis(ttlMillis), Math.min(1000, Math.floor(ttlMillis / 10)))

/**
 * `run` without `--wait`: a resource someone holds (or waits for ahead of
 * us) is refused at once (exit 75), but nodes that could not decide (slow,
 * unreachable, or sitting out their quarantine) are asked again for up to
 * 2 s, so that exit 76 means they are really unavailable, not that one
 * answer came late.
 */
const busyNodesRetry: Redlock.RetrySchedule = Schedule.spaced("200 millis").pipe(
  Schedule.jittered,
  Schedule.whileInput((refusal: LockNotAcquired) => refusal.reason === "NoQuorum" || refusal.reason === "ValidityExpired"),
  Schedule.upTo("2 seconds")
)

const permitLimit = wholeNumber("limit")
const maxReaders = wholeNumber("max-readers")

const run = Command.make(
  "run",
  {
    resource: Options.text("resource").pipe(Options.withDescription("The resource to lock")),
    ttl: duration("ttl").pipe(
      Options.withDescription("Time to live of the lock; it is extended while the command runs"),
      Options.withDefault(Duration.seconds(30))
    ),
    wait: duration("wait").pipe(
      Options.withDescription("How long to wait for the lock (default: try once)"),
      Options.optional
    ),
    limit: permitLimit.pipe(
      Options.withDescription(
        "Hold one of N permits of the resource instead of its lock: at most N copies of the command run at once"
      )
    ),
    mode: Options.choice("mode", ["lock", "read", "write"]).pipe(
      Options.withDescription(
        "read: hold the resource with other readers (a read-write lock); write: alone, no reader; lock (default): its lock"
      ),
      Options.withDefault("lock" as const)
    ),
    maxReaders: maxReaders.pipe(
      Options.withDescription("With --mode read or write: readers at once (the library's default: 16); the same for every client")
    ),
    killAfter: duration("kill-after").pipe(
      Options.withDescription("After a lost lock, SIGKILL the command if SIGTERM did not stop it within this"),
      Options.withDefault(Duration.seconds(10))
    ),
    ...managerSettings,
    command: Args.text({ name: "command" }).pipe(Args.atLeast(1))
  },
  (flags) =>
    Effect.gen(function*() {
      const redlock = yield* Redlock.Redlock
      const retry = Option.match(flags.wait, {
        onNone: () => busyNodesRetry,
        onSome: (wait) => Schedule.spaced("100 millis").pipe(Schedule.jittered, Schedule.upTo(wait))
      })
      const nodeTimeout = Option.isNone(flags.nodeTimeout) && process.env.REDLOCK_NODE_TIMEOUT === undefined
        ? { nodeTimeout: cronNodeTimeoutMillis(Duration.toMillis(flags.ttl)) }
        : {}
      const options = { ttl: flags.ttl, retry, autoExtend: true, ...nodeTimeout }
      const readWrite = { ...options, maxReaders: Option.getOrUndefined(flags.maxReaders) }
      if (Option.isSome(flags.limit) && flags.mode !== "lock") {
        return yield* fail(ExitCodes.usage, "--limit holds a permit; it does not go with --mode read or write")
      }
      const lock = yield* (Option.isSome(flags.limit)
        ? redlock.acquirePermit(flags.resource, { ...options, limit: flags.limit.value })
        : flags.mode === "read"
        ? redlock.acquireRead(flags.resource, readWrite)
        : flags.mode === "write"
        ? redlock.acquireWrite(flags.resource, readWrite)
        : redlock.acquire(flags.resource, options))
      const [command, ...args] = flags.command
      const child = yield* Child.spawn(command, args)
      const ended = yield* Effect.raceFirst(
        Effect.map(child.exited, (code) => ({ _tag: "Exited" as const, code })),
        Effect.map(lock.lost, (lost) => ({ _tag: "Lost" as const, lost }))
      )
      if (ended._tag === "Exited") return yield* Effect.sync(() => void (process.exitCode = ended.code))
      const held = Option.isSome(flags.limit) ? "permit of" : flags.mode === "lock" ? "lock on" : `${flags.mode} hold of`
      yield* Console.error(`redlock: ${held} ${flags.resource} lost (${ended.lost.message}); stopping the command`)
      yield* child.stop(flags.killAfter)
      process.exitCode = ExitCodes.lockLost
    }).pipe(
      Effect.scoped,
      Effect.catchTags({
        LockNotAcquired: (error) =>
          error.reason === "Held" || error.reason === "NotYourTurn"
            ? fail(ExitCodes.notAcquired, error.message)
            : fail(ExitCodes.nodesUnavailable, error.message),
        CannotRun: (error) => fail(ExitCodes.cannotRun, `cannot run ${error.command}: ${error.detail}`)
      }),
      Effect.provide(manager(flags)),
      setupErrors(flags)
    )
).pipe(Command.withDescription("Run a command while holding a lock; release it when the command exits"))

const seconds = (ttl: Option.Option<Duration.Duration>) =>
  Option.match(ttl, { onNone: () => "no expiry", onSome: (d) => `${(Duration.toMillis(d) / 1000).toFixed(1)} s left` })

/** One line per node: what it holds for the resource (`label` names a semaphore's slot). */
const nodeLines = (view: Redlock.InspectResult, label: string) =>
  Effect.forEach(view.nodes, (node) => {
    if (node._tag === "Unreadable") {
      const outcome = node.outcome
      return Console.log(`${outcome.node}\t${label}unreadable: ${outcome._tag === "Failed" ? outcome.error.message : outcome._tag}`)
    }
    const line = Option.match(node.state.value, {
      onNone: () => "free",
      onSome: (value) => `held by ${value}, ${seconds(node.state.ttl)}`
    })
    return Console.log(`${node.node}\t${label}${line}`)
  }, { discard: true })

/** How many permit slots `inspect` looks at without `--limit`, for a resource used as a semaphore. */
const slotsProbed = 64

const showLock = (resource: string) =>
  Effect.gen(function*() {
    const view = yield* Redlock.inspect(resource)
    yield* nodeLines(view, "")
    if (Option.isSome(view.holder)) {
      return yield* Console.log(`${view.resource}: locked by ${view.holder.value} on a majority, ${seconds(view.ttl)}`)
    }
    // Not locked: it may be a semaphore's resource, whose permits are other keys.
    const permits = yield* Semaphore.inspect(resource, slotsProbed)
    const held = permits.slots.flatMap((slot, index) => Option.isSome(slot.holder) ? [index] : [])
    yield* Console.log(
      held.length === 0
        ? `${view.resource}: not locked (no majority of nodes holds it), and no semaphore permit held`
        : `${view.resource}: not locked, but ${held.length} semaphore permit(s) held on a majority (slots ${
          held.join(", ")
        }): see them with --limit N`
    )
  })

const showPermits = (resource: string, limit: number) =>
  Effect.gen(function*() {
    const view = yield* Semaphore.inspect(resource, limit)
    yield* Effect.forEach(view.slots, (slot, index) => nodeLines(slot, `permit ${index}: `), { discard: true })
    yield* Console.log(`${view.resource}: ${view.held} of ${view.limit} permits held on a majority`)
    yield* Effect.forEach(view.slots, (slot, index) =>
      Option.match(slot.holder, {
        onNone: () => Effect.void,
        onSome: (holder) => Console.log(`  permit ${index}: ${holder}, ${seconds(slot.ttl)}`)
      }), { discard: true })
  })

const showReadWrite = (resource: string, maxReaders: number) =>
  Effect.gen(function*() {
    const view = yield* ReadWriteLock.inspect(resource, maxReaders)
    yield* Effect.forEach(view.slots, (slot, index) => nodeLines(slot, `read slot ${index}: `), { discard: true })
    yield* Console.log(Option.match(view.writer, {
      onNone: () => `${view.resource}: ${view.readers} of ${view.maxReaders} readers hold it on a majority`,
      onSome: (writer) => `${view.resource}: held for writing by ${writer} on a majority`
    }))
  })

const inspect = Command.make(
  "inspect",
  {
    resource: Args.text({ name: "resource" }),
    limit: permitLimit.pipe(Options.withDescription("Show the N permits of a semaphore on the resource instead of its lock")),
    maxReaders: maxReaders.pipe(
      Options.withDescription("Show the read-write lock of N readers on the resource instead of its lock")
    ),
    ...managerSettings
  },
  (flags) =>
    (Option.isSome(flags.maxReaders)
      ? showReadWrite(flags.resource, flags.maxReaders.value)
      : Option.isSome(flags.limit)
      ? showPermits(flags.resource, flags.limit.value)
      : showLock(flags.resource)).pipe(Effect.provide(manager(flags)), setupErrors(flags))
).pipe(Command.withDescription("Show who holds a resource on each node"))

const redlock = Command.make("redlock").pipe(
  Command.withDescription("Distributed locks over Redis (Redlock) for shell commands"),
  Command.withSubcommands([run, inspect])
)

const cli = Command.run(redlock, { name: "redlock", version: version() })

// The library's log lines (release warnings) go to stderr: stdout is the command's.
const LogsToStderr = Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))

const args = process.argv.slice(2)
const subcommandHelp = args[0] === "run" ? Help.run : args[0] === "inspect" ? Help.inspect : Help.top
const asked = Help.preParse(args)

const main = args.length === 0
  // No subcommand: the usage, as for any other bad usage (@effect/cli would print a bare "$ redlock").
  ? Effect.zipRight(Console.error(Help.top), Effect.sync(() => void (process.exitCode = ExitCodes.usage)))
  : asked?._tag === "Help"
  ? Console.log(asked.text)
  : asked?._tag === "Unknown"
  ? fail(ExitCodes.usage, `unknown flag ${asked.flag} (see redlock ${args[0]} --help)`)
  : cli(process.argv).pipe(
    // @effect/cli has printed what was wrong; the usage follows it.
    Effect.catchIf(ValidationError.isValidationError, () =>
      Effect.zipRight(
        Console.error(subcommandHelp),
        Effect.sync(() => void (process.exitCode = ExitCodes.usage))
      )),
    Effect.provide(NodeContext.layer),
    Effect.provide(LogsToStderr)
  )

let stoppedBy: NodeJS.Signals | undefined
const fiber = Effect.runFork(main)
Signals.install((signal) => {
  stoppedBy = signal
  fiber.unsafeInterruptAsFork(FiberId.none)
})
fiber.addObserver((exit) => {
  if (Exit.isFailure(exit) && stoppedBy === undefined) {
    console.error(`redlock: ${String(exit.cause)}`)
    process.exitCode = 70
  }
  process.exit(stoppedBy !== undefined ? ExitCodes.bySignal(stoppedBy) : process.exitCode ?? 0)
})
