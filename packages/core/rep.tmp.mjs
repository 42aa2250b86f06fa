import { Redis } from "ioredis"
import { spawn } from "node:child_process"
import Redlock from "./dist/esm/NodeRedlock.js"
const origins = new WeakMap()
process.on("unhandledRejection", (reason, promise) => { console.log("UNHANDLED", String(reason), origins.get(promise) ?? "(origin unknown)") })
const port = 17311
const start = () => spawn("redis-server", ["--port", String(port), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"], { stdio: "ignore" })
let server = start()
await new Promise((r) => setTimeout(r, 300))
const client = new Redis({ port, host: "127.0.0.1" })
client.on("error", () => {})
const send = client.sendCommand.bind(client)
client.sendCommand = (command, stream) => { const p = send(command, stream); origins.set(p, command.name + " " + new Error().stack.split("\n").slice(2, 9).join(" | ")); return p }
const redlock = new Redlock([client], { retryCount: 3, retryDelay: 50 })
const l = await redlock.acquire(["x"], 2000); await l.release()
server.kill("SIGKILL")
const until = Date.now() + 14000
while (Date.now() < until) {
  try { const lock = await redlock.acquire(["x"], 2000); await lock.fencingToken().catch((e) => console.log("token", e._tag ?? e.message)); await lock.release().catch((e) => console.log("rel", e.name)) }
  catch (e) { if (e.name !== "ExecutionError") console.log("acquire raw", e.name, e.message) }
  await new Promise((r) => setTimeout(r, 20))
}
server = start()
await new Promise((r) => setTimeout(r, 1500))
try { const lock = await redlock.acquire(["x"], 2000); console.log("after restart ok", await lock.fencingToken()); await lock.release() } catch (e) { console.log("after restart", e.name, e.message) }
await redlock.quit().catch((e) => console.log("quit", e.message))
server.kill("SIGKILL")
setTimeout(() => process.exit(0), 500)
