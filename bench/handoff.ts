/**
 * What a fair handoff costs on the wire alone, for the contended rows of
 * `npm run bench` to be read against: `npm run bench:handoff [-- handoffs]`.
 *
 * Bare ioredis clients on 5 local redis-servers play it with the library's
 * own scripts and no library code: a holder's release (the script, which
 * hands the key to the first waiter and announces it), the waiter woken by
 * the first announcement that names it, and the waiter's attempt
 * (acquireInTurn) to a quorum. Three figures per handoff, from the moment the
 * release is sent: its quorum of answers, the first announcement, and the
 * waiter's quorum of grants (the handoff). A fair handoff cannot take less
 * than one release round trip, one announcement and one acquire round trip:
 * this measures them on this machine.
 */
import * as Effect from "effect/Effect"
import { Redis } from "ioredis"
import * as RedisFleet from "@effect-redlock/fleet/effect3.js"
import * as Scripts from "@effect-redlock/core/nodes/scripts.js"
import type { PromiseLock } from "effect-redlock/Promise"
import { makeRedlock } from "effect-redlock/Promise"
import * as Redlock from "effect-redlock/Redlock"
import { percentile } from "./scenarios.js"

const handoffs = Number(process.argv[2] ?? 2000)
const ttlMillis = 10_000
const leaseMillis = 5_000

const afterQuorum = <A>(promises: ReadonlyArray<Promise<A>>, quorum: number, isYes: (answer: A) => boolean) =>
  new Promise<number>((resolve) => {
    let yes = 0
    for (const promise of promises) {
      promise.then((answer) => {
        if (isYes(answer) && ++yes === quorum) resolve(performance.now())
      }, () => undefined)
    }
  })

const measure = async (ports: ReadonlyArray<number>) => {
  const connect = () => ports.map((port) => new Redis({ host: "127.0.0.1", port, maxRetriesPerRequest: 1 }))
  const holder = connect()
  const waiter = connect()
  const subscribers = connect()
  const quorum = Math.floor(ports.length / 2) + 1
  for (const script of [Scripts.releaseOwned, Scripts.acquireInTurn]) {
    await Promise.all([...holder, ...waiter].map((client) => client.script("LOAD", script.lua)))
  }
  const evalsha = (client: Redis, script: Scripts.Script, key: string, args: ReadonlyArray<string | number>) =>
    client.evalsha(script.sha, 1, key, ...args)
  const figures = { released: [] as Array<number>, announced: [] as Array<number>, handedOver: [] as Array<number> }
  let onAnnouncement: ((next: string) => void) | undefined
  for (const subscriber of subscribers) {
    await subscriber.psubscribe(`${Scripts.releaseChannelPrefix}bench:handoff:*`)
    subscriber.on("pmessage", (_pattern, _channel, next: string) => onAnnouncement?.(next))
  }
  for (let i = 0; i < handoffs + 200; i++) {
    const key = `bench:handoff:${i}`
    const [first, second] = [`holder-${i}`, `waiter-${i}`]
    // Set up, not measured: the holder holds the key, the waiter waits in its line.
    await Promise.all(holder.map((client) => client.set(key, first, "PX", ttlMillis)))
    const ticket = Date.now()
    await Promise.all(
      waiter.map((client) => evalsha(client, Scripts.acquireInTurn, key, [second, ttlMillis, ticket, leaseMillis]))
    )
    const start = performance.now()
    const announced = new Promise<number>((resolve) => {
      onAnnouncement = (next) => {
        if (next !== second) return
        onAnnouncement = undefined
        resolve(performance.now())
      }
    })
    // The release's reply: the keys deleted, then the announcements it made.
    const released = afterQuorum(
      holder.map((client) => evalsha(client, Scripts.releaseOwned, key, [first])),
      quorum,
      (reply) => (reply as Array<unknown>)[0] === 1
    )
    const handedOver = announced.then(() =>
      afterQuorum(
        waiter.map((client) => evalsha(client, Scripts.acquireInTurn, key, [second, ttlMillis, ticket, leaseMillis])),
        quorum,
        (reply) => (reply as Array<number>)[0] === 1
      )
    )
    const [releasedAt, announcedAt, handedOverAt] = await Promise.all([released, announced, handedOver])
    await Promise.all(waiter.map((client) => evalsha(client, Scripts.releaseOwned, key, [second])))
    if (i < 200) continue // warm-up
    figures.released.push(releasedAt - start)
    figures.announced.push(announcedAt - start)
    figures.handedOver.push(handedOverAt - start)
  }
  await Promise.all([...holder, ...waiter, ...subscribers].map((client) => client.quit()))
  return figures
}

/** The same handoff through the library: a holder's manager releases, a waiter's manager waits in line (promise facade). */
const measureLibrary = async (ports: ReadonlyArray<number>) => {
  const nodes = ports.map((port) => ({ host: "127.0.0.1", port }))
  const options = { restartQuarantine: false, retry: Redlock.defaultRetry }
  const [holder, waiter] = await Promise.all([makeRedlock(nodes, options), makeRedlock(nodes, options)])
  const handedOver: Array<number> = []
  const settle = () => new Promise((resolve) => setTimeout(resolve, 10))
  for (let i = 0; i < handoffs + 200; i++) {
    const key = `bench:handoff:library:${i}`
    const held = await holder.acquire(key, { ttl: ttlMillis })
    let grantedAt = 0
    const waiting = waiter.acquire(key, { ttl: ttlMillis }).then((lock: PromiseLock) => {
      grantedAt = performance.now()
      return lock
    })
    // The waiter's first attempt is refused and it waits in line (subscribed) before the release.
    await settle()
    const start = performance.now()
    await holder.release(held)
    await waiter.release(await waiting)
    if (i >= 200) handedOver.push(grantedAt - start)
  }
  await Promise.all([holder.close(), waiter.close()])
  return handedOver
}

const program = Effect.flatMap(RedisFleet.RedisFleet, (fleet) =>
  Effect.promise(async () => {
    const ports = fleet.servers.map((server) => server.port)
    return { ...await measure(ports), library: await measureLibrary(ports) }
  }))

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(RedisFleet.layerLocal(5)))).then((figures) => {
  const row = (label: string, values: ReadonlyArray<number>) =>
    `| ${label} | ${percentile(values, 50).toFixed(3)} | ${percentile(values, 99).toFixed(3)} |`
  console.log(
    `Fair handoff on the wire alone (bare ioredis, the library's scripts, 5 local servers, ${handoffs} handoffs), ms from the release's sending:\n`
  )
  console.log("| | p50 ms | p99 ms |\n|---|---|---|")
  console.log(row("release answered by a quorum", figures.released))
  console.log(row("first announcement naming the waiter", figures.announced))
  console.log(row("waiter's attempt granted by a quorum (the handoff)", figures.handedOver))
  console.log(row("the same handoff through effect-redlock/Promise (two managers)", figures.library))
  process.exit(0)
}, (error) => {
  console.error(error)
  process.exit(1)
})
