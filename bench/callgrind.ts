/**
 * Counting instructions with valgrind's callgrind, for the bench scripts
 * that run themselves under it (instructions.ts, permitInstructions.ts):
 * inside, `counting` turns the count on and off around the work; outside,
 * `run` starts the script under callgrind, counting nothing until asked, and
 * reads what it counted.
 */
import { execFile, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

/**
 * Inside: ask the running valgrind to count from now on (`on`) or to stop
 * (`off`); resolved once it had time to hear (callgrind_control takes a moment).
 */
export const counting = (on: "on" | "off"): Promise<void> =>
  new Promise((resolve) => execFile("callgrind_control", ["-i", on, String(process.pid)], () => setTimeout(resolve, 2000)))

/** What a run under callgrind counted: all threads, the main thread (where JavaScript runs), and its output. */
export interface Counted {
  readonly total: number
  readonly mainThread: number
  readonly stdout: string
}

/** Outside: this process's script run again under callgrind with `args` (and `env` added). */
export const run = (args: ReadonlyArray<string>, env: Record<string, string> = {}): Counted => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "callgrind-"))
  const out = Path.join(dir, "out")
  const spawned = spawnSync("valgrind", [
    "--tool=callgrind",
    "--instr-atstart=no",
    "--separate-threads=yes",
    `--callgrind-out-file=${out}`,
    process.execPath,
    process.argv[1],
    ...args
  ], { encoding: "utf8", env: { ...process.env, ...env } })
  // One file per thread, the main thread's first (`out-01`).
  const mainThread = Fs.existsSync(`${out}-01`) ? /^totals: (\d+)/m.exec(Fs.readFileSync(`${out}-01`, "utf8")) : null
  Fs.rmSync(dir, { recursive: true, force: true })
  const total = /refs:\s+([\d,]+)/.exec(spawned.stderr)
  if (spawned.status !== 0 || total === null || mainThread === null) {
    throw new Error(`valgrind failed (${args.join(" ")}):\n${spawned.stdout.slice(-1000)}\n${spawned.stderr.slice(-2000)}`)
  }
  return { total: Number(total[1].replaceAll(",", "")), mainThread: Number(mainThread[1]), stdout: spawned.stdout }
}
