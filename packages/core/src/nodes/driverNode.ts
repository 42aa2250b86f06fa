/**
 * A Redis node over one driver's connection, as the engine talks to it: the
 * lock operations as promises (EVALSHA of the scripts loaded on each
 * connection, a native SET NX PX for one free key), the server run for the
 * restart quarantine, and release announcements. Each driver (ioredis/,
 * nodeRedis/) hands in its connection (connection.ts) and its release
 * channels; each shell opens the node with its own error class and clock,
 * and closes it with the scope that opened it.
 *
 * @internal
 */
import type { MakeNodeError, Node, NodePromises, NodeRun, Turn, TurnAnswer } from "../engine/node.js"
import type { Connection } from "./connection.js"
import * as LoadedScripts from "./loadedScripts.js"
import * as NodeErrors from "./nodeErrors.js"
import type { ReleaseChannels } from "./releaseChannels.js"
import * as Scripts from "./scripts.js"
import { timeReply } from "./serverClock.js"
import * as ServerRun from "./serverRun.js"

/** What a node needs besides its connection (each shell checks the user's options into these). */
export interface NodeSettings {
  readonly name: string
  readonly maxPendingCommands: number
  /** Declared durable (see the shells' `durable` option). */
  readonly durable: boolean
  /** Whether the server's clock is read with each vote (see the shells' `watchClock` option). */
  readonly watchClock: boolean
  /** How long `open` waits for the first connection and the server's identity (ms). */
  readonly connectTimeoutMillis: number
  readonly makeError: MakeNodeError
  /** Monotonic ms on the shell's timeline (the server run's start is read on it). */
  readonly now: () => number
  /** Wait for this many replicas after each grant and extension, at most this long (the shells' `waitForReplicas`). */
  readonly replicas?: { readonly count: number; readonly timeoutMillis: number } | undefined
}

/** A node's release announcements, as its driver opened them. */
export interface Releases {
  readonly channels: ReleaseChannels
  readonly stop: () => void
}

/** An open node and how to close it (its connection is the caller's to close). */
export interface OpenNode {
  readonly node: Node
  /** Waits until no command of the node waits for its answer (at most 250 ms), then stops following the connection. */
  readonly close: () => Promise<void>
}

/**
 * The node over `connection`: follows its errors, loads the scripts each
 * time it connects, follows its server run and `openReleases`' announcements;
 * settles once the connection is ready and its server identified, the server
 * refused the connection, or `connectTimeoutMillis` passed: a node that is
 * down now is not an error.
 */
export const open = async (
  connection: Connection,
  settings: NodeSettings,
  openReleases: () => Releases
): Promise<OpenNode> => {
  const errors = watchErrors(connection)
  // First: on each new connection the scripts are loaded before anything else is sent.
  const scripts = LoadedScripts.watch(connection, Scripts.nodeScripts(timesVotes(connection, settings)))
  const run = ServerRun.watch(connection, settings.durable, settings.now, settings.watchClock)
  const releases = openReleases()
  await firstConnection(connection, run, scripts.loaded, settings.connectTimeoutMillis)
  const inFlight: InFlight = { count: 0 }
  const clock = clockReader(connection, settings, run, inFlight)
  await within(clock.first, settings.connectTimeoutMillis)
  const node = makeNode(
    connection,
    settings,
    errors.last,
    run.current,
    scripts.loaded,
    releases.channels,
    inFlight,
    clock
  )
  return {
    node,
    close: async () => {
      clock.stop()
      await settled(inFlight, 250)
      releases.stop()
      run.stop()
      scripts.stop()
      errors.stop()
    }
  }
}

// Ready and identified, or refused, or the timeout: whichever comes first.
const firstConnection = (
  connection: Connection,
  run: ServerRun.RunWatcher,
  scripts: LoadedScripts.LoadedScripts,
  timeoutMillis: number
): Promise<void> =>
  new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      unfollow()
      resolve()
    }
    // A server that refuses the connection (down, a wrong port or password) is not waited for: the node
    // joins when the server answers.
    const unfollow = connection.follow({ ready: () => {}, closed: () => {}, error: done })
    const timer = setTimeout(done, timeoutMillis)
    run.identified().then(() => scripts.settled()).then(done)
  })

/** Keeps the last connection error, so "not connected" can say why (refused, WRONGPASS ...). */
const watchErrors = (connection: Connection) => {
  let last: Error | undefined
  const stop = connection.follow({
    ready: () => void (last = undefined),
    closed: () => {},
    error: (error) => void (last = error)
  })
  return { last: () => last, stop }
}

/** Commands of one node sent and not answered yet. */
interface InFlight {
  count: number
}

/** `promise` settled, or `millis` passed: whichever comes first (never rejects). */
const within = (promise: Promise<unknown> | undefined, millis: number): Promise<void> => {
  if (promise === undefined) return Promise.resolve()
  let timer: ReturnType<typeof setTimeout> | undefined
  return Promise.race([
    promise.then(() => {}, () => {}),
    new Promise<void>((resolve) => void (timer = setTimeout(resolve, millis)))
  ]).finally(() => clearTimeout(timer))
}

/** How often the server's clock is read between votes. */
const clockReadingMillis = 1000

/**
 * Whether the node reads its server's clock with each vote itself: each
 * vote's script in its `timed` form (scripts.ts), whose reply brings the
 * server's clock, and a `TIME` behind a native SET NX PX; over a connection
 * that reads `TIME`, with the clock watched.
 */
const timesVotes = (connection: Connection, settings: NodeSettings): boolean =>
  settings.watchClock && connection.time !== undefined

/** The node's readings of its server's clock (serverClock.ts), each told to the server run before anything else. */
interface ClockReader {
  /** Whether votes are sent `timed` (see `timesVotes`). */
  readonly timesVotes: boolean
  /** The reply of a `timed` script sent at `sentAtMillis` (monotonic ms): its reading, told now. */
  readonly tell: (timedReply: ReadonlyArray<unknown>, sentAtMillis: number) => void
  /**
   * A `TIME` sent behind every vote sent in this turn so far (once, a
   * microtask later), settled once its reading was told (or it failed);
   * `undefined` where the node does not read so.
   */
  readonly behindVotes: () => Promise<void> | undefined
  /** The first reading, taken as the node opens: settled before the node takes commands. */
  readonly first: Promise<void> | undefined
  readonly stop: () => void
}

/**
 * Each vote's reading comes in its script's reply (`timed`), or from a
 * `TIME` sent behind it; another is sent each second between votes (at most
 * one in flight), so that a vote's reading is held against a recent one.
 * Readings count among the node's pending commands. A connection whose votes
 * bring their own readings (quietConnection.ts) is asked for one each
 * second; one with none (a cluster's) reads nothing.
 */
const clockReader = (
  connection: Connection,
  settings: NodeSettings,
  run: ServerRun.RunWatcher,
  inFlight: InFlight
): ClockReader => {
  const time = connection.time
  if (!settings.watchClock || (time === undefined && connection.readClock === undefined)) {
    return { timesVotes: false, tell: () => {}, behindVotes: () => undefined, first: undefined, stop: () => {} }
  }
  const tell = (timedReply: ReadonlyArray<unknown>, sentAtMillis: number) => {
    const serverMillis = timeReply(timedReply)
    if (serverMillis !== undefined) run.readClock({ serverMillis, sentAtMillis, answeredAtMillis: performance.now() })
  }
  // A TIME sent now, settled (never failing) once its reading was told.
  const read = (): Promise<void> | undefined => {
    if (time === undefined || inFlight.count >= settings.maxPendingCommands) return undefined
    inFlight.count++
    const sentAtMillis = performance.now()
    const done = () => void inFlight.count--
    try {
      return time().then((reply) => {
        done()
        if (Array.isArray(reply)) tell(reply, sentAtMillis)
      }, done)
    } catch {
      done()
      return undefined
    }
  }
  // Between votes: one at a time (a server that does not answer is not sent more).
  let pending = false
  const readNow = () => {
    if (pending) return undefined
    const reading = read()
    if (reading === undefined) return undefined
    pending = true
    return reading.then(() => void (pending = false))
  }
  let behind: Promise<void> | undefined
  const behindVotes = (): Promise<void> | undefined =>
    time === undefined ? undefined : behind ??= new Promise<void>((resolve) =>
      queueMicrotask(() => {
        behind = undefined
        const reading = read()
        if (reading === undefined) resolve()
        else void reading.then(resolve)
      })
    )
  const timer = setInterval(() => {
    if (!connection.isReady()) return
    if (time === undefined) connection.readClock?.()
    else readNow()
  }, clockReadingMillis)
  timer.unref?.()
  // The first reading, the one the first vote's is held against.
  let first: Promise<void> | undefined
  if (connection.isReady()) {
    if (time === undefined) connection.readClock?.()
    else first = readNow()
  }
  return { timesVotes: timesVotes(connection, settings), tell, behindVotes, first, stop: () => clearInterval(timer) }
}

/**
 * Until no command of the node waits for its answer, twice in a row a turn
 * apart (an answer may send another command: a late grant's undo), at most
 * `withinMillis`. The node's connection closes after: a key set by an
 * attempt that was refused without waiting for this node is deleted before
 * the process exits (a command line run would otherwise leave it for its ttl).
 */
const settled = (inFlight: InFlight, withinMillis: number): Promise<void> =>
  new Promise((resolve) => {
    const giveUpAt = performance.now() + withinMillis
    let idleBefore = false
    const check = () => {
      const idle = inFlight.count === 0
      if ((idle && idleBefore) || performance.now() >= giveUpAt) return resolve()
      idleBefore = idle
      setTimeout(check, idle ? 0 : 2)
    }
    check()
  })

const granted: TurnAnswer = { _tag: "Granted" }
const notYourTurn: TurnAnswer = { _tag: "NotYourTurn" }

/** The acquireInTurn and acquireSlot scripts' ARGV (see scripts.ts): the ticket's age and the setting only when given. */
const turnArguments = (value: string, ttlMillis: number, turn: Turn): Array<string | number> => {
  const args: Array<string | number> = [value, ttlMillis, turn.ticket, turn.leaseMillis]
  if (turn.ageMillis === undefined && turn.setting === undefined) return args
  args.push(turn.ageMillis === undefined ? "" : Math.max(0, Math.floor(turn.ageMillis)))
  if (turn.setting !== undefined) args.push(turn.setting)
  return args
}

/**
 * An integer of a script's reply as a number: a client made with ioredis's
 * `stringNumbers` reads every integer as a string ("1").
 */
const integer = (reply: unknown): number => typeof reply === "number" ? reply : Number(reply)

/** The reply of the acquireInTurn and acquireSlot scripts (see scripts.ts): acquireSlot's grant names its slot. */
const turnAnswer = (reply: unknown): TurnAnswer => {
  const [code, detail] = reply as [unknown, unknown]
  switch (integer(code)) {
    case 1:
      return detail === undefined ? granted : { _tag: "Granted", slot: integer(detail) }
    case 3:
      return notYourTurn
    case 4:
      return { _tag: "SettingConflict", recorded: String(detail) }
  }
  const pttl = detail === undefined ? undefined : integer(detail)
  return { _tag: "Held", ttlMillis: pttl === undefined || pttl < 0 ? undefined : pttl }
}

/** A script's reply of 1 (done) or 0. */
const isOne = (reply: unknown): boolean => integer(reply) === 1

/**
 * Sending a node's commands over one connection: each command and its reply in
 * one promise step, every failure as the shell's node error (a synchronous
 * throw of the driver too), NOSCRIPT reloading the scripts, and no command
 * sent while too many wait for an answer (see the shells'
 * maxPendingCommands).
 */
interface Sender {
  /**
   * One command. `settled`, if given, is called once whichever way the call
   * ends, before the reply is parsed (in the same step: no promise beside the
   * caller's). A vote that brings no reading of its own (`readsClock`) is
   * answered once the TIME sent behind it was.
   */
  readonly call: <R, A>(
    send: () => Promise<R>,
    parse: (reply: R) => A,
    settled?: () => void,
    readsClock?: boolean
  ) => Promise<A>
  /**
   * One script. A vote's script goes `timed` where the node reads its
   * server's clock so: the reading is told to the run before the vote's
   * answer is.
   */
  readonly evalScript: <A>(
    script: Scripts.Script,
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string | number>,
    parse: (reply: unknown) => A,
    settled?: () => void
  ) => Promise<A>
}

const makeSender = (
  connection: Connection,
  settings: NodeSettings,
  lastConnectionError: () => Error | undefined,
  scripts: LoadedScripts.LoadedScripts,
  inFlight: InFlight,
  clock: ClockReader
): Sender => {
  const { makeError, maxPendingCommands, name } = settings
  const answered = <A>(reply: A): A => {
    inFlight.count--
    return reply
  }
  const failed = (cause: unknown) => {
    // The command did not run; it is not sent again (see loadedScripts.ts).
    if (NodeErrors.isNoScript(cause)) scripts.reload()
    return Promise.reject(NodeErrors.toNodeError(makeError, name, cause, lastConnectionError()))
  }
  const unanswered = (cause: unknown) => {
    inFlight.count--
    return failed(cause)
  }
  const call: Sender["call"] = (send, parse, settled, readsClock = false) => {
    if (inFlight.count >= maxPendingCommands) {
      settled?.()
      return Promise.reject(makeError({
        node: name,
        reason: "Unavailable",
        detail:
          `${inFlight.count} commands wait for an answer: the server does not answer (paused, overloaded or cut off)`
      }))
    }
    try {
      connection.beforeSend()
      const sent = send()
      inFlight.count++
      const reading = readsClock ? clock.behindVotes() : undefined
      if (reading !== undefined) {
        return Promise.all([sent.then(answered, unanswered), reading]).then(([reply]) => {
          settled?.()
          return parse(reply)
        }, (cause) => {
          settled?.()
          return Promise.reject(cause)
        })
      }
      if (settled === undefined) return sent.then((reply) => parse(answered(reply)), unanswered)
      return sent.then((reply) => {
        settled()
        return parse(answered(reply))
      }, (cause) => {
        settled()
        return unanswered(cause)
      })
    } catch (cause) {
      settled?.()
      return failed(cause)
    }
  }
  const evalScript: Sender["evalScript"] = (script, keys, args, parse, settled) => {
    const timed = clock.timesVotes ? Scripts.timedForm(script) : undefined
    const sent = timed ?? script
    const send = scripts.bySha() ? () => connection.evalsha(sent, keys, args) : () => connection.eval(sent, keys, args)
    if (timed === undefined) return call(send, parse, settled)
    const sentAtMillis = performance.now()
    return call(send, (reply) => {
      const timedReply = reply as ReadonlyArray<unknown>
      clock.tell(timedReply, sentAtMillis)
      return parse(timedReply[2])
    }, settled)
  }
  return { call, evalScript }
}

/**
 * Waiting for replicas: a grant or an extension counts on this node only once
 * `count` replicas acknowledged it (WAIT, after the script's answer, on the
 * same connection: it covers every write sent before it). Otherwise the
 * operation fails as Unavailable, so the engine counts the node as no, and a
 * refused attempt deletes what it set there, as on any failed node. Without
 * the option, the operation itself: nothing is added to the path.
 */
const replicatedBy =
  (connection: Connection, settings: NodeSettings, { call }: Sender) =>
  <Args extends ReadonlyArray<unknown>, A>(
    operation: (...args: Args) => Promise<A>,
    granted: (answer: A) => boolean
  ): (...args: Args) => Promise<A> => {
    const { makeError, name, replicas } = settings
    if (replicas === undefined) return operation
    const { count, timeoutMillis } = replicas
    const confirmed = (answer: A): A | Promise<A> =>
      !granted(answer) ?
        answer :
        call(() => connection.waitForReplicas(count, timeoutMillis), Number).then((acknowledged) =>
          acknowledged >= count ? answer : Promise.reject(makeError({
            node: name,
            reason: "Unavailable",
            detail:
              `WAIT: ${acknowledged} of ${count} replicas acknowledged within ${timeoutMillis} ms: the write does not count`
          }))
        )
    return (...args) => operation(...args).then(confirmed)
  }

/**
 * A release script's answer, as the count of keys deleted (1 or 0 for a
 * plain key). The announcements the release made are told to this process's
 * waiters now (see ReleaseChannels.announced), before the release's caller
 * hears of it: a waiter of this process takes its turn without waiting for
 * the channel's message, which may only be read after whatever the releasing
 * caller does next.
 */
const releaseAnswer = (releases: ReleaseChannels, keys: ReadonlyArray<string>, reply: unknown): number => {
  // A number: the release of one plain key nobody waited for in line (scripts.ts, plainRelease).
  if (!Array.isArray(reply)) {
    const code = integer(reply)
    if (code >= Scripts.plainReleaseAnnounced) {
      releases.announcedFree(keys[0], code === Scripts.plainReleasePublished)
    }
    return code === 0 ? 0 : 1
  }
  // The keys deleted, then each announcement as key, message and whether it was published.
  const answer = reply as ReadonlyArray<unknown>
  for (let index = 1; index + 2 < answer.length; index += 3) {
    releases.announced(String(answer[index]), String(answer[index + 1]), isOne(answer[index + 2]))
  }
  return integer(answer[0])
}

/** The node operations over one connection. */
const makeNode = (
  connection: Connection,
  settings: NodeSettings,
  lastConnectionError: () => Error | undefined,
  serverRun: () => NodeRun,
  scripts: LoadedScripts.LoadedScripts,
  releases: ReleaseChannels,
  inFlight: InFlight,
  clock: ClockReader
): Node => {
  const { name, replicas } = settings
  const sender = makeSender(connection, settings, lastConnectionError, scripts, inFlight, clock)
  const { call, evalScript } = sender
  const replicated = replicatedBy(connection, settings, sender)
  const isTrue = (answer: boolean) => answer
  const isGranted = (answer: TurnAnswer) => answer._tag === "Granted"

  const acquireAll = (keys: ReadonlyArray<string>, value: string, ttlMillis: number) =>
    evalScript(Scripts.acquireAll, keys, [value, ttlMillis], isOne)
  // The one-key acquire is two commands, the second sent once the first is
  // answered: any later operation on the same key and value (the caller's
  // undo, leaving, release, next attempt) may have been sent meanwhile, and
  // the second command would land after it, setting the key again behind a
  // caller that has moved on (found by the Effect 4 package's contract
  // test: a key left for its whole ttl after every acquirer was
  // interrupted). A later operation marks the pending acquire superseded:
  // it then answers "not acquired" without its second command.
  // By the value (one acquisition's, drawn for it): a lock value is already a
  // string of its own, whose hash the map computes once, where a key and value
  // joined made a new one for every operation of every node.
  const probing = new Map<string, { readonly key: string; superseded: boolean }>()
  const supersede = (keys: ReadonlyArray<string>, value: string) => {
    if (probing.size === 0) return
    const probe = probing.get(value)
    if (probe !== undefined && keys.includes(probe.key)) probe.superseded = true
  }
  const acquireOne = (key: string, value: string, ttlMillis: number): Promise<boolean> => {
    const probe = { key, superseded: false }
    probing.set(value, probe)
    const settle = <A>(answer: A): A => {
      if (probing.get(value) === probe) probing.delete(value)
      return answer
    }
    return call(
      () => connection.setIfAbsent(key, value, Math.ceil(ttlMillis)),
      (reply) => reply === "OK",
      undefined,
      true
    ).then(
      (set) => settle(set || probe.superseded ? set : acquireAll([key], value, ttlMillis)),
      (error) => Promise.reject(settle(error))
    )
  }
  const promises: NodePromises = {
    // One key: a native SET NX PX (about half a script's server time), and
    // the script only when the key exists: it may hold our own value (a late
    // answer of an earlier attempt, which is ours) or another type (WRONGTYPE
    // named by the script). Whole milliseconds, as the scripts round.
    acquire: replicated((keys, value, ttlMillis) => {
      supersede(keys, value)
      return keys.length !== 1 ? acquireAll(keys, value, ttlMillis) : acquireOne(keys[0], value, ttlMillis)
    }, isTrue),
    acquireInTurn: replicated((keys, value, ttlMillis, turn) => {
      supersede(keys, value)
      return evalScript(Scripts.acquireInTurn, keys, turnArguments(value, ttlMillis, turn), turnAnswer)
    }, isGranted),
    acquireSlot: replicated((keys, value, ttlMillis, turn) => {
      supersede(keys, value)
      return evalScript(Scripts.acquireSlot, keys, turnArguments(value, ttlMillis, turn), turnAnswer)
    }, isGranted),
    release: (keys, value, announce, keepPlace) => {
      supersede(keys, value)
      // An undo (keepPlace) announces nothing.
      const parse = (reply: unknown) => releaseAnswer(releases, keys, reply)
      if (keepPlace === true) return evalScript(Scripts.releaseOwned, keys, [value, announce ? 1 : 0, 1], parse)
      const args: Array<string | number> = [value, announce ? 1 : 0, 0]
      const ownSubscribers = releases.ownSubscribers(keys)
      if (ownSubscribers !== undefined) args.push(ownSubscribers)
      // Answered or failed (a failure's answer tells nothing), before the answer is told.
      return evalScript(Scripts.releaseOwned, keys, args, parse, releases.releasing())
    },
    extend: replicated((keys, value, ttlMillis) => {
      supersede(keys, value)
      return evalScript(Scripts.extendOwned, keys, [value, ttlMillis], isOne)
    }, isTrue),
    incrementFences: (keys, value, fenceKeys) =>
      evalScript(
        Scripts.incrementFences,
        [...keys, ...fenceKeys],
        [value],
        (reply) => Array.isArray(reply) ? reply.map((count) => BigInt(String(count))) : undefined
      ),
    commitFences: (keys, value, fenceKeys, tokens) =>
      evalScript(Scripts.commitFences, [...keys, ...fenceKeys], [value, ...tokens.map(String)], isOne),
    inspect: (key) =>
      evalScript(Scripts.inspectKey, [key], [], (reply) => {
        const [answeredPttl, value] = reply as [unknown, string | undefined]
        const pttl = integer(answeredPttl)
        return { value: value ?? undefined, ttlMillis: pttl >= 0 ? pttl : undefined }
      })
  }
  return {
    name,
    run: serverRun,
    promises,
    watchReleasesNow: releases.watch,
    hearsReleases: releases.hears,
    countsHandOvers: replicas === undefined
  }
}
