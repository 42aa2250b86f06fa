/**
 * One `redis-server` process of a test fleet, as plain promises: started on
 * free ports of 127.0.0.1 in a folder of its own, with an admin connection and
 * fault controls (pause/resume with SIGSTOP/SIGCONT, kill, start again on the
 * same port). Processes are stopped by their PID, never by name: the machine
 * may run other Redis servers.
 */
import { Redis } from "ioredis"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { freePort } from "./freePort.js"

export interface ServerProcess {
  /** The server's place in its fleet (its replica has the same). */
  readonly index: number
  /** Its port, the same across restarts. */
  readonly port: number
  /** A cluster node's bus port (`cluster-port`), the same across restarts; `undefined` outside a cluster. */
  readonly busPort: number | undefined
  /** A connection for assertions and faults: it queues commands while the server is down or paused. */
  readonly admin: Redis
  /** The PID of the running process (changes on restart; `undefined` while killed). */
  readonly pid: () => number | undefined
  /** SIGSTOP: the server keeps its socket open and answers nothing, like a hung host. */
  readonly pause: () => Promise<void>
  /** SIGCONT: the server catches up with what it received while paused. */
  readonly resume: () => Promise<void>
  /** SIGKILL, resolved once the process has exited: what it held only in memory is lost. */
  readonly kill: () => Promise<void>
  /** Start again on the same port and folder after `kill` (nothing while it runs). */
  readonly start: () => Promise<void>
  /** An admin command, rejected if no answer comes within 40 s (it waits while the server is down or paused). */
  readonly call: (command: string, ...args: ReadonlyArray<string | number>) => Promise<unknown>
  /** Kill the process and close the admin connection, for good. */
  readonly stop: () => Promise<void>
}

export interface ServerSpec {
  /** Its place in its fleet ({@link ServerProcess.index}). */
  readonly index: number
  /** The folder its tries' folders are made in. */
  readonly parent: string
  /** The first part of its folder's name. */
  readonly name: string
  /** How many free ports it needs: its own first (a cluster node also takes a bus port). */
  readonly portCount: number
  /** `redis-server`'s arguments for its folder and ports. */
  readonly argsOf: (dir: string, ports: ReadonlyArray<number>) => ReadonlyArray<string>
  /** Done once it answers PING, before it counts as started (a Sentinel waits to know its masters). */
  readonly setUp?: ((admin: Redis) => Promise<unknown>) | undefined
  /** The servers' password (`requirepass`), for the admin connection. */
  readonly password?: string | undefined
  /** The certificate its admin connection trusts, for a server that speaks TLS only. */
  readonly tlsCa?: string | undefined
  /** Variables its process gets beside this process's (a shifted clock's, clockShift.ts). */
  readonly env?: Readonly<Record<string, string>> | undefined
}

const readyWithinMillis = 10_000
const callWithinMillis = 40_000

// PIDs this process started and has not stopped: killed when it exits even if
// no one stopped them (a test worker ended by a signal or a timeout).
const running = new Set<number>()
let exitHooksInstalled = false
const killRunning = () => {
  for (const pid of running) {
    signal(pid, "SIGCONT")
    signal(pid, "SIGKILL")
  }
  running.clear()
}
const installExitHooks = () => {
  if (exitHooksInstalled) return
  exitHooksInstalled = true
  process.once("exit", killRunning)
  for (const name of ["SIGINT", "SIGTERM"] as const) {
    // Once: after cleaning up, the same signal is raised again and ends the process as it would have.
    process.once(name, () => {
      killRunning()
      process.kill(process.pid, name)
    })
  }
}

export const signal = (pid: number | undefined, name: NodeJS.Signals): void => {
  if (pid === undefined) return
  try {
    process.kill(pid, name)
  } catch {
    // the process already exited
  }
}

/** Whether a process of this PID is running (signal 0 checks without sending anything). */
export const isRunning = (pid: number | undefined): boolean => {
  if (pid === undefined) return false
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** `work`, or a rejection after `millis`, or as soon as `exited` rejects: a dead server never answers. */
const within = <A>(work: Promise<A>, millis: number, what: string, exited?: Promise<never>): Promise<A> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${millis} ms`)), millis)
  })
  return Promise.race(exited === undefined ? [work, late] : [work, exited, late]).finally(() => clearTimeout(timer))
}

/** The last lines of the server's logs in `dir`, to say why it did not start. */
const logTail = (dir: string): string => {
  try {
    return Fs.readdirSync(dir).filter((file) => file.endsWith(".log"))
      .map((file) => Fs.readFileSync(Path.join(dir, file), "utf8").trim().split("\n").slice(-2).join(" / ")).join("")
  } catch {
    return ""
  }
}

/** A `redis-server` child, and a promise that rejects when it exits (never resolves). */
const spawn = (args: ReadonlyArray<string>, port: number, env: Readonly<Record<string, string>> | undefined) => {
  const child = ChildProcess.spawn("redis-server", args, {
    stdio: "ignore",
    env: env === undefined ? undefined : { ...process.env, ...env }
  })
  if (child.pid !== undefined) running.add(child.pid)
  const exitedAt = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const exited = new Promise<never>((_, reject) => {
    child.once("error", reject)
    child.once(
      "exit",
      (code, name) => reject(new Error(`redis-server on port ${port} exited (${code ?? name}) before it was ready`))
    )
  })
  exited.catch(() => {})
  const kill = async () => {
    signal(child.pid, "SIGCONT")
    signal(child.pid, "SIGKILL")
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) await exitedAt
    running.delete(child.pid ?? -1)
  }
  return { child, exited, kill }
}

/**
 * A server as `spec` says, once it answers PING and its `setUp` is done, each
 * within 10 s. A server that exits first (a port taken by another program
 * between its choice and the bind) or does not answer is stopped, its folder
 * removed, and started again on new ports: three tries in all.
 */
export const startServer = async (spec: ServerSpec): Promise<ServerProcess> => {
  installExitHooks()
  for (let tries = 1;; tries++) {
    const ports: Array<number> = []
    for (let index = 0; index < spec.portCount; index++) ports.push(await freePort())
    const port = ports[0]
    const dir = Fs.mkdtempSync(Path.join(spec.parent, `${spec.name}-`))
    const args = spec.argsOf(dir, ports)
    let current: ReturnType<typeof spawn> | undefined = spawn(args, port, spec.env)
    const admin = new Redis({
      host: "127.0.0.1",
      port,
      password: spec.password,
      tls: spec.tlsCa === undefined ? undefined : { ca: spec.tlsCa },
      retryStrategy: () => 50,
      maxRetriesPerRequest: null
    })
    admin.on("error", () => {}) // it reconnects on its own; errors surface on the commands
    const ready = async (exited: Promise<never>) => {
      await within(admin.ping(), readyWithinMillis, `redis-server on port ${port}: no answer`, exited)
      if (spec.setUp !== undefined) {
        await within(
          spec.setUp(admin),
          readyWithinMillis,
          `redis-server on port ${port}: its set-up did not end`,
          exited
        )
      }
    }
    try {
      await ready(current.exited)
    } catch (error) {
      const log = logTail(dir)
      admin.disconnect()
      await current.kill()
      Fs.rmSync(dir, { recursive: true, force: true })
      if (tries === 3) throw error
      // Said on stderr: a server started again is worth knowing of, even when the next try comes up.
      console.error(
        `test fleet, try ${tries}: ${(error as Error).message}${log === "" ? "" : `; its log ends: ${log}`}`
      )
      continue
    }
    const kill = async () => {
      const killed = current
      current = undefined
      await killed?.kill()
    }
    return {
      index: spec.index,
      port,
      busPort: ports[1],
      admin,
      pid: () => current?.child.pid,
      pause: async () => signal(current?.child.pid, "SIGSTOP"),
      resume: async () => signal(current?.child.pid, "SIGCONT"),
      kill,
      start: async () => {
        if (current !== undefined) return
        current = spawn(args, port, spec.env)
        await ready(current.exited)
      },
      call: (command, ...args) =>
        within(admin.call(command, ...args), callWithinMillis, "no answer").catch((cause) => {
          throw new Error(`server ${spec.index} (port ${port}): ${command} failed: ${(cause as Error).message}`, {
            cause
          })
        }),
      stop: async () => {
        await kill()
        admin.disconnect()
      }
    }
  }
}

/**
 * Each of `starts`, run together; if any fails, the ones that started are
 * stopped and the first failure is thrown.
 */
export const startAll = async <A extends { readonly stop: () => Promise<void> }>(
  starts: ReadonlyArray<() => Promise<A>>
): Promise<Array<A>> => {
  const settled = await Promise.allSettled(starts.map((start) => start()))
  const failed = settled.find((result) => result.status === "rejected")
  if (failed === undefined) return settled.map((result) => (result as PromiseFulfilledResult<A>).value)
  await Promise.all(settled.map((result) => result.status === "fulfilled" ? result.value.stop() : undefined))
  throw failed.reason
}

/** Until `check` resolves, tried every `everyMillis`, or its last failure after `withinMillis`. */
export const eventually = async <A>(check: () => Promise<A>, withinMillis: number, everyMillis = 100): Promise<A> => {
  const giveUpAt = Date.now() + withinMillis
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() >= giveUpAt) throw error
      await new Promise((resolve) => setTimeout(resolve, everyMillis))
    }
  }
}
