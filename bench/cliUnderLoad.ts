/**
 * `npm run bench:cli-under-load [-- --runs N --spinners S --cli a.js,b.js]`:
 * how often `redlock run --resource r --ttl 5s -- true` against one healthy
 * local redis-server (durable: AOF, appendfsync always, so the restart
 * quarantine is not in play) exits 76 ("nodes unavailable") while every core
 * is busy (S spinning processes, default one per core). Each CLI given (built `main.js` files;
 * default this tree's packages/cli/dist/redlock.js) runs N times (default 200), the CLIs
 * alternating, on the same server and load. Prints the exit codes of each.
 * Every process it starts is stopped by its PID when it ends.
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort } from "@effect-redlock/fleet/freePort.js"

const flag = (name: string) => {
  const at = process.argv.indexOf(`--${name}`)
  return at >= 0 ? process.argv[at + 1] : undefined
}
const runs = Number(flag("runs") ?? 200)
const spinners = Number(flag("spinners") ?? Os.availableParallelism())
const clis = (flag("cli") ?? "packages/cli/dist/redlock.js").split(",").map((file) => Path.resolve(file))

const started: Array<ChildProcess.ChildProcess> = []
const stopAll = () => {
  for (const child of started.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  }
}
process.on("exit", stopAll)
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    stopAll()
    process.exit(130)
  })
}

const exitCode = (cli: string, port: number): Promise<number | null> =>
  new Promise((resolve) => {
    const child = ChildProcess.spawn(
      process.execPath,
      [cli, "run", "--resource", "r", "--ttl", "5s", "--nodes", `redis://127.0.0.1:${port}`, "--", "true"],
      { stdio: "ignore", env: { ...process.env, REDLOCK_NODE_TIMEOUT: undefined } }
    )
    const limit = setTimeout(() => child.kill("SIGKILL"), 30_000)
    child.once("exit", (code) => {
      clearTimeout(limit)
      resolve(code)
    })
  })

const main = async () => {
  const port = await freePort()
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "redlock-cli-load-"))
  const server = ChildProcess.spawn(
    "redis-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--dir",
      dir,
      "--appendonly",
      "yes",
      "--appendfsync",
      "always",
      "--save",
      ""
    ],
    { stdio: "ignore" }
  )
  started.push(server)
  await new Promise((resolve) => setTimeout(resolve, 500))
  for (let spinner = 0; spinner < spinners; spinner++) {
    started.push(ChildProcess.spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }))
  }
  const codes = clis.map(() => new Map<string, number>())
  for (let run = 0; run < runs; run++) {
    for (const [index, cli] of clis.entries()) {
      const code = String(await exitCode(cli, port))
      codes[index]!.set(code, (codes[index]!.get(code) ?? 0) + 1)
    }
    // A line every 20 runs: a long run shows where it is.
    if ((run + 1) % 20 === 0) console.error(`${run + 1} of ${runs} runs`)
  }
  stopAll()
  Fs.rmSync(dir, { recursive: true, force: true })
  for (const [index, cli] of clis.entries()) {
    const counts = [...codes[index]!].sort().map(([code, n]) => `exit ${code}: ${n}`).join(", ")
    console.log(
      `${
        Path.relative(process.cwd(), cli)
      }: ${runs} runs, ${spinners} spinning processes on ${Os.availableParallelism()} cores: ${counts}`
    )
  }
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
