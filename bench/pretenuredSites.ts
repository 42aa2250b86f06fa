/**
 * Diagnostic: which allocation sites of the library (and of Effect) V8
 * pretenures under the contended permit workload, so that none of the
 * objects made per permit is allocated in the old generation, where, dead,
 * it would keep the younger objects it points to through every scavenge
 * (engine/attempt.ts, `AttemptFields`; bench/README.md, "Objects of one
 * permit kept by old garbage").
 *
 * It copies the compiled library (.bench-build/src) and Effect's ESM build
 * to .bench-probe/, wraps each object and array literal and each
 * array-producing call there in a function that asks V8 where the new
 * object landed (`%InYoungGeneration`), and runs the workload of
 * bench/permitEngine.ts (8 workers, 3 permits, in-memory nodes) in a process
 * of its own with `--allow-natives-syntax`: a warm-up, then a counted
 * second. Modes: `using` (promise code's `usingPermit`, the default),
 * `acquire` (`acquirePermit`, then `release`), `effect` (the Effect API:
 * `Semaphore.withPermit`, one `runPromise` per permit, as bench/semaphores.ts
 * runs it). Prints each site whose objects landed in the old
 * generation, with the share that did. The wrapping changes the timing, so
 * a site that V8 pretenures only now and then may not show.
 *
 * `npx tsc -p tsconfig.bench.json && node .bench-build/bench/pretenuredSites.js [using | acquire | effect] [warm-up seconds]`
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const [mode = "using", warmUpSeconds = "4"] = process.argv.slice(2)
const require = createRequire(import.meta.url)
const ts = require("typescript") as typeof import("typescript")

const root = fileURLToPath(new URL("../..", import.meta.url))
const probe = Path.join(root, ".bench-probe")

// Calls whose result is a new array (and so may come from an allocation site of its own).
const arrayMethods = new Set(["map", "filter", "slice", "concat", "flatMap", "from", "of", "split"])

const filesUnder = (folder: string): Array<string> =>
  Fs.readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(folder, entry.name)
    return entry.isDirectory() ? filesUnder(path) : entry.name.endsWith(".js") ? [path] : []
  })

/** A literal that is assigned to (`[a, b] = pair`, `for ([k] of m)`) is a pattern, not an allocation. */
const isAssignmentTarget = (node: import("typescript").Node): boolean => {
  let child = node
  let parent = node.parent
  while (
    ts.isArrayLiteralExpression(parent) || ts.isObjectLiteralExpression(parent) || ts.isPropertyAssignment(parent) ||
    ts.isShorthandPropertyAssignment(parent) || ts.isSpreadElement(parent) || ts.isSpreadAssignment(parent)
  ) {
    child = parent
    parent = parent.parent
  }
  return (ts.isBinaryExpression(parent) && parent.operatorToken.kind === ts.SyntaxKind.EqualsToken &&
    parent.left === child) ||
    ((ts.isForOfStatement(parent) || ts.isForInStatement(parent)) && parent.initializer === child)
}

const isAllocation = (node: import("typescript").Node): boolean =>
  ((ts.isObjectLiteralExpression(node) || ts.isArrayLiteralExpression(node)) && !isAssignmentTarget(node)) ||
  (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === "Array") ||
  (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) &&
    arrayMethods.has(node.expression.name.text))

/** Wraps every allocation of `file` as `globalThis.__landed("file:line:column", allocation)`. */
const instrument = (file: string, namedFrom: string): number => {
  const text = Fs.readFileSync(file, "utf8")
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS)
  const edits: Array<{ readonly at: number; readonly text: string; readonly opens: boolean; readonly rank: number }> =
    []
  const visit = (node: import("typescript").Node): void => {
    if (isAllocation(node)) {
      const start = node.getStart(source)
      const { character, line } = source.getLineAndCharacterOfPosition(start)
      const site = `${Path.relative(namedFrom, file)}:${line + 1}:${character + 1}`
      // Where edits meet: closings before openings, an inner closing before an outer one, an outer opening first.
      edits.push({ at: start, text: `globalThis.__landed(${JSON.stringify(site)}, `, opens: true, rank: -node.end })
      edits.push({ at: node.end, text: ")", opens: false, rank: -start })
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  edits.sort((a, b) => a.at - b.at || Number(a.opens) - Number(b.opens) || a.rank - b.rank)
  let out = ""
  let from = 0
  for (const edit of edits) {
    out += text.slice(from, edit.at) + edit.text
    from = edit.at
  }
  Fs.writeFileSync(file, out + text.slice(from))
  return edits.length / 2
}

// The workload, as plain JavaScript: the natives syntax is accepted only in code compiled with the flag.
const runner = `
const landed = new Map()
let counting = false
globalThis.__landed = (site, made) => {
  if (counting && made !== null && typeof made === "object") {
    let count = landed.get(site)
    if (count === undefined) landed.set(site, count = { young: 0, old: 0 })
    if (%InYoungGeneration(made)) count.young++
    else count.old++
  }
  return made
}
const { makeRedlock, retry } = await import("./src/Promise.js")
const RedisNode = await import("./src/RedisNode.js")
const Duration = await import("effect/Duration")
const redlock = await makeRedlock(RedisNode.layerMemory(1), { restartQuarantine: false })
const options = { limit: 3, ttl: 10_000, retry: retry({ delay: Duration.millis(10), times: 1000 }) }
const body = () => new Promise((resolve) => setImmediate(resolve))
const { Effect, Layer, ManagedRuntime } = await import("effect")
const Redlock = await import("./src/Redlock.js")
const Semaphore = await import("./src/Semaphore.js")
const runtime = ManagedRuntime.make(
  Redlock.layer({ restartQuarantine: false }).pipe(Layer.provide(RedisNode.layerMemory(1)))
)
const effectOptions = { limit: 3, ttl: Duration.millis(10_000), retry: Redlock.retry({ delay: Duration.millis(10), times: 1000 }) }
const run = async (millis) => {
  let permits = 0
  const end = performance.now() + millis
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (performance.now() < end) {
      if (process.argv[2] === "effect") {
        await runtime.runPromise(Effect.promise(() => { permits++; return body() }).pipe(Semaphore.withPermit("probe", effectOptions)))
      } else if (process.argv[2] === "acquire") {
        const permit = await redlock.acquirePermit("probe", options)
        permits++
        await body()
        await redlock.release(permit)
      } else {
        await redlock.usingPermit("probe", options, () => { permits++; return body() })
      }
    }
  }))
  return permits
}
await run(Number(process.argv[3]) * 1000)
counting = true
const permits = await run(1000)
counting = false
console.log(\`\${permits} permits counted (\${process.argv[2]}); sites whose objects landed in the old generation:\`)
const old = [...landed].filter(([, count]) => count.old > 0).sort((a, b) => b[1].old - a[1].old)
for (const [site, { old: inOld, young }] of old) {
  console.log(\`\${(100 * inOld / (inOld + young)).toFixed(0).padStart(4)}%  \${(inOld / permits).toFixed(2)} per permit  \${site}\`)
}
if (old.length === 0) console.log("  none")
await redlock.close()
await runtime.dispose()
process.exit(0)
`

Fs.rmSync(probe, { recursive: true, force: true })
Fs.cpSync(Path.join(root, ".bench-build", "src"), Path.join(probe, "src"), { recursive: true })
const effect = Path.join(probe, "node_modules", "effect")
Fs.cpSync(Path.join(root, "node_modules", "effect"), effect, { recursive: true })
let wrapped = 0
for (const file of filesUnder(Path.join(probe, "src"))) wrapped += instrument(file, probe)
for (const file of filesUnder(Path.join(effect, "dist", "esm"))) {
  wrapped += instrument(file, Path.join(probe, "node_modules"))
}
Fs.writeFileSync(Path.join(probe, "run.mjs"), runner)
console.log(`${wrapped} allocations wrapped in ${probe}`)
const ran = spawnSync(process.execPath, ["--allow-natives-syntax", Path.join(probe, "run.mjs"), mode, warmUpSeconds], {
  stdio: "inherit"
})
process.exit(ran.status ?? 1)
