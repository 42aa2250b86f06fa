/**
 * V8's allocation-site pretenuring and Effect's runtime, without this library
 * or Redis: each operation is two `runPromise` calls around a `setImmediate`
 * (as a lock and an unlock are), the same steps in one fiber (one `runPromise`
 * for the whole loop, as an Effect program runs them), and the same loop in
 * plain async JavaScript.
 * For each, run under `--trace-gc-nvp` with and without
 * `--no-allocation-site-pretenuring`, and print what an average scavenge
 * after warm-up promoted and how long it paused.
 *
 * `npx tsc -p tsconfig.bench.json && node .bench-build/bench/pretenuring.js`
 *
 * Measured here (2026-11-22): plain JavaScript promotes ~115 KB per
 * scavenge with pretenuring on or off (0.4–0.6 ms pauses); the Effect loop
 * ~450 KB (pauses ~1.7–2.2 ms), and nothing with pretenuring off (1.3–1.6
 * ms); the same steps in one fiber nothing, with or without it (and 62
 * scavenges instead of 142: it allocates less than half as much). The lock
 * manager's sequential benchmark shows the same (~600 KB against 32 KB; see
 * bench/README.md): the cost comes with a `runPromise` per call under V8's
 * heuristic, and is worth a report upstream.
 */
import { spawnSync } from "node:child_process"
import { Effect, Layer, ManagedRuntime } from "effect"

const operations = 200_000
const io = () => new Promise<void>((resolve) => setImmediate(resolve))

const loops: Record<string, () => Promise<void>> = {
  javascript: async () => {
    for (let i = 0; i < operations; i++) {
      await io()
      await io()
    }
  },
  "effect, runPromise per step": async () => {
    const runtime = ManagedRuntime.make(Layer.empty)
    for (let i = 0; i < operations; i++) {
      await runtime.runPromise(Effect.promise(io))
      await runtime.runPromise(Effect.promise(io))
    }
    await runtime.dispose()
  },
  "effect, one fiber": async () => {
    const runtime = ManagedRuntime.make(Layer.empty)
    const step = Effect.promise(io)
    await runtime.runPromise(Effect.gen(function*() {
      for (let i = 0; i < operations; i++) {
        yield* step
        yield* step
      }
    }))
    await runtime.dispose()
  }
}

/** The scavenges of the last two thirds of a run: average promoted KB and pause ms. */
const scavenges = (trace: string) => {
  const rows = trace.split("\n").filter((line) => line.includes("gc=s "))
  const steady = rows.slice(Math.floor(rows.length / 3))
  const field = (line: string, name: string) => Number(new RegExp(`${name}=([\\d.]+)`).exec(line)?.[1] ?? 0)
  const mean = (values: Array<number>) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length)
  return {
    count: steady.length,
    promotedKB: mean(steady.map((line) => field(line, "promoted") / 1024)),
    pauseMs: mean(steady.map((line) => field(line, "pause")))
  }
}

const loop = process.argv[2]
if (loop !== undefined) {
  await loops[loop]!()
} else {
  for (const name of Object.keys(loops)) {
    for (const flags of [[], ["--no-allocation-site-pretenuring"]]) {
      const run = spawnSync(process.execPath, ["--trace-gc-nvp", ...flags, process.argv[1]!, name], {
        encoding: "utf8"
      })
      const { count, pauseMs, promotedKB } = scavenges(run.stdout)
      console.log(
        `${name}${flags.length > 0 ? " (pretenuring off)" : ""}: ${count} scavenges, ` +
          `${promotedKB.toFixed(0)} KB promoted and ${pauseMs.toFixed(2)} ms pause on average`
      )
    }
  }
}
