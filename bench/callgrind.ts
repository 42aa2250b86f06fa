/**
 * Counting instructions with valgrind's callgrind, for the bench scripts
 * that run themselves under it (instructions.ts, permitInstructions.ts):
 * inside, `counting` turns the count on and off around the work; outside,
 * `run` starts the script under callgrind, counting nothing until asked, and
 * reads what it counted.
 */
import { execFile, execFileSync, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

/**
 * Inside: ask the running valgrind to count from now on (`on`) or to stop
 * (`off`); resolved once it had time to hear (callgrind_control takes a moment).
 */
export const counting = (on: "on" | "off"): Promise<void> =>
  new Promise((resolve) =>
    execFile("callgrind_control", ["-i", on, String(process.pid)], () => setTimeout(resolve, 2000))
  )

/**
 * Inside: `counting`, at once and with nothing else running meanwhile (the
 * event loop waits for callgrind_control's answer): a count that starts and
 * stops between the same two permits.
 */
export const countingNow = (on: "on" | "off"): void => {
  execFileSync("callgrind_control", ["-i", on, String(process.pid)], { stdio: "ignore" })
}

/**
 * What a run under callgrind counted: all threads, the main thread (where
 * JavaScript runs), the main thread without V8's optimizing compilers (which
 * run there under `--no-concurrent-recompilation`: code still tiering up,
 * not the work measured), the part of that spent collecting garbage on the
 * main thread (scavenges copy what survives: it comes in lumps, so a count
 * with it moves by ~30% between runs, one without it by ~5%), and its output.
 */
export interface Counted {
  readonly total: number
  readonly mainThread: number
  readonly mainThreadWithoutCompiler: number
  readonly garbageCollector: number
  readonly stdout: string
}

// The functions of V8's optimizing compilers (TurboFan, Turboshaft, Maglev), by namespace and name,
// and the zones they allocate in.
const compilerFunction = /compiler::|Compiler|Pipeline|turboshaft|[Mm]aglev|Zone/
// The functions of V8's garbage collectors: scavenges, marking, sweeping, and the visitors they walk objects with.
const collectorFunction =
  /Scaveng|MarkCompact|Marking|Sweep|Evacuat|Pretenuring|RememberedSet|SlotSet|BodyDescriptor|SizeFromMap/

/** A thread's counts (a callgrind output file), function by function: its instructions and its line. */
const functionCounts = (file: string): Array<{ readonly count: number; readonly line: string }> => {
  const annotated = spawnSync("callgrind_annotate", ["--threshold=100", "--auto=no", file], {
    encoding: "utf8",
    maxBuffer: 1 << 28
  })
  const counts: Array<{ readonly count: number; readonly line: string }> = []
  for (const line of annotated.stdout.split("\n")) {
    const count = /^\s*([\d,]+) \(/.exec(line)
    if (count !== null && !line.includes("PROGRAM TOTALS")) {
      counts.push({ count: Number(count[1].replaceAll(",", "")), line })
    }
  }
  return counts
}

const instructionsIn = (counts: ReturnType<typeof functionCounts>, pattern: RegExp): number => {
  let sum = 0
  for (const { count, line } of counts) if (pattern.test(line)) sum += count
  return sum
}

/** Outside: this process's script run again under callgrind with `args` (and `env` added, and `nodeFlags` given to node). */
export const run = (
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
  nodeFlags: ReadonlyArray<string> = []
): Counted => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "callgrind-"))
  const out = Path.join(dir, "out")
  const spawned = spawnSync("valgrind", [
    "--tool=callgrind",
    "--instr-atstart=no",
    "--separate-threads=yes",
    `--callgrind-out-file=${out}`,
    process.execPath,
    ...nodeFlags,
    process.argv[1],
    ...args
  ], { encoding: "utf8", env: { ...process.env, ...env } })
  // One file per thread, the main thread's first (`out-01`).
  const mainThread = Fs.existsSync(`${out}-01`) ? /^totals: (\d+)/m.exec(Fs.readFileSync(`${out}-01`, "utf8")) : null
  const counts = mainThread === null ? [] : functionCounts(`${out}-01`)
  const compiler = instructionsIn(counts, compilerFunction)
  const collector = instructionsIn(counts, collectorFunction)
  Fs.rmSync(dir, { recursive: true, force: true })
  const total = /refs:\s+([\d,]+)/.exec(spawned.stderr)
  if (spawned.status !== 0 || total === null || mainThread === null) {
    throw new Error(
      `valgrind failed (${args.join(" ")}):\n${spawned.stdout.slice(-1000)}\n${spawned.stderr.slice(-2000)}`
    )
  }
  return {
    total: Number(total[1].replaceAll(",", "")),
    mainThread: Number(mainThread[1]),
    mainThreadWithoutCompiler: Number(mainThread[1]) - compiler,
    garbageCollector: collector,
    stdout: spawned.stdout
  }
}
