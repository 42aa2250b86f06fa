/**
 * The fleet from Redis containers through testcontainers, where a Docker (or
 * compatible) engine answers: the same servers and fault controls as the
 * local path (pause is the container's pause), without replicas, Sentinels,
 * clusters or TLS.
 */
import { Redis } from "ioredis"
import { type FleetOptions, type LocalFleet, makeFleet } from "./fleet.js"
import { freePort } from "./freePort.js"
import { eventually, type ServerProcess, startAll } from "./servers.js"

/** Whether a container engine answers; testcontainers needs one. */
export const containerEngineAvailable = (): Promise<boolean> =>
  import("testcontainers").then((tc) => tc.getContainerRuntimeClient()).then(() => true, () => false)

const startContainerServer = async (index: number, options: FleetOptions): Promise<ServerProcess> => {
  const tc = await import("testcontainers")
  const runtime = await tc.getContainerRuntimeClient()
  // A fixed host port on loopback, so that the port survives kill and start.
  const port = await freePort()
  const command = ["redis-server", "--save", "", "--appendonly", "no"]
  if (options.password !== undefined) command.push("--requirepass", options.password)
  const container = await new tc.GenericContainer("redis:7-alpine")
    .withCommand(command)
    .withExposedPorts({ container: 6379, host: port })
    .start()
  const handle = runtime.container.getById(container.getId())
  const admin = new Redis({
    host: "127.0.0.1",
    port,
    password: options.password,
    retryStrategy: () => 50,
    maxRetriesPerRequest: null
  })
  admin.on("error", () => {}) // it reconnects on its own; errors surface on the commands
  const ready = () => eventually(() => admin.ping(), 10_000, 50)
  await ready()
  const ignore = (work: Promise<unknown>) => work.then(() => undefined, () => undefined)
  return {
    index,
    port,
    busPort: undefined,
    admin,
    pid: () => undefined,
    pause: () => ignore(handle.pause()),
    resume: () => ignore(handle.unpause()),
    kill: () => ignore(handle.kill()),
    start: async () => {
      await handle.start()
      await ready()
    },
    call: (command, ...args) => admin.call(command, ...args),
    stop: async () => {
      admin.disconnect()
      await ignore(container.stop({ timeout: 0 }))
    }
  }
}

/** `n` Redis containers; rejects when no container engine answers (check {@link containerEngineAvailable} first). */
export const startContainerFleet = async (n: number, options: FleetOptions = {}): Promise<LocalFleet> => {
  const servers = await startAll(Array.from({ length: n }, (_, index) => () => startContainerServer(index, options)))
  const plain = { ...options, cluster: false, clusterPerServer: false, tls: false }
  return makeFleet(
    servers,
    [],
    [],
    plain,
    undefined,
    () => Promise.all(servers.map((server) => server.stop())).then(() => undefined)
  )
}
