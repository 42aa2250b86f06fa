/**
 * `npm run clock-drift`: no false clock jump over a long run. Three durable
 * servers (AOF, appendfsync always: the restart quarantine is not in play)
 * started with the test fleet's clock shim: the first one's wall clock runs
 * 0.5% fast, the second's 0.5% slow (`--rate 0.005`), the third's right. Two managers of the
 * promise API, one over ioredis nodes and one over Valkey GLIDE clients, take
 * and release a lock in bursts of 20, with pauses of up to 3 s between them
 * (so that votes are held against readings of every age), for `--minutes M`
 * (default 10). Every vote of a server whose clock was taken for a jump would
 * be an `Abstained` outcome: there must be none. Then, as a control, the
 * third server's clock leaps 5 s: both managers must see it at their next
 * vote. Prints one line per manager, and exits 1 if a jump was seen where
 * there was none or missed where there was one.
 */
import { GlideClient, Logger } from "@valkey/valkey-glide"
import {
  LockNotAcquired,
  makeRedlock,
  noRetry,
  type PromiseLock,
  type PromiseRedlock
} from "@effect-redlock/core/Promise.js"
import { startLocalFleet } from "@effect-redlock/fleet/fleet.js"

const flag = (name: string): string | undefined => {
  const index = process.argv.indexOf(`--${name}`)
  return index >= 0 ? process.argv[index + 1] : undefined
}

const minutes = Number(flag("minutes") ?? 10)
const rate = Number(flag("rate") ?? 0.005)
const rates = [rate, -rate, 0]
const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

Logger.setLoggerConfig("off")
const fleet = await startLocalFleet(3, { persistence: true, shiftableClocks: true })
const glideClients: Array<GlideClient> = []
let failed = false
try {
  rates.forEach((rate, index) => fleet.shiftClock(index, 0, rate))
  const warnings: Array<string> = []
  const logger = { warn: (line: string) => void warnings.push(line) }
  for (const { host, port } of fleet.nodes) {
    glideClients.push(await GlideClient.createClient({ addresses: [{ host, port }], requestTimeout: 1_000 }))
  }
  const managers: ReadonlyArray<readonly [string, PromiseRedlock]> = [
    ["ioredis", await makeRedlock(fleet.nodes, { logger })],
    ["Valkey GLIDE", await makeRedlock(glideClients.map((client) => ({ client })), { logger })]
  ]
  const tally = managers.map(() => ({ acquisitions: 0, abstentions: [] as Array<string> }))
  const endAt = performance.now() + minutes * 60_000
  while (performance.now() < endAt) {
    await Promise.all(managers.map(async ([, manager], index) => {
      for (let i = 0; i < 20; i++) {
        const lock = await manager.acquire(`drift-${index}`, { ttl: 5_000, retry: noRetry })
        for (const outcome of lock.outcomes) {
          if (outcome._tag === "Abstained") tally[index].abstentions.push(`${outcome.node}: ${outcome.detail}`)
        }
        tally[index].acquisitions++
        await manager.release(lock)
      }
    }))
    await sleep(Math.random() * 3_000)
  }
  // The control: a real leap, seen by the next vote of each manager.
  fleet.shiftClock(2, 5_000)
  const seen = await Promise.all(managers.map(async ([, manager], index) => {
    // Two of three still grant it.
    const result: PromiseLock | LockNotAcquired = await manager.acquire(`drift-${index}`, {
      ttl: 5_000,
      retry: noRetry
    })
      .catch((error: unknown) => error as LockNotAcquired)
    if (!(result instanceof LockNotAcquired)) await manager.release(result)
    const third = result.outcomes[2]
    return third?._tag === "Abstained" && /clock jumped forward 5\.\d s/.test(third.detail)
  }))
  for (const [index, [name]] of managers.entries()) {
    const { acquisitions, abstentions } = tally[index]
    console.log(
      `${name}: ${acquisitions.toLocaleString("en")} acquisitions in ${minutes} min on servers ${rate * 100}% fast, ` +
        `${rate * 100}% slow and right: ` +
        `${abstentions.length} votes not counted${abstentions.length > 0 ? ` (first: ${abstentions[0]})` : ""}; ` +
        `the 5 s leap after: ${seen[index] ? "seen at the next vote" : "MISSED"}`
    )
    if (abstentions.length > 0 || !seen[index]) failed = true
  }
  await Promise.all(managers.map(([, manager]) => manager.close()))
} finally {
  await Promise.all(glideClients.map((client) => client.close()))
  await fleet.stop()
}
process.exit(failed ? 1 : 0)
