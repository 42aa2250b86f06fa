/**
 * A fleet of real Redis servers for tests, the demo, the fault suite and the
 * benchmark: N independent masters on free 127.0.0.1 ports, optionally with a
 * replica each, a Sentinel, one Redis Cluster or a cluster per server, TLS, a
 * password, persistence. Plain promises: each Effect line wraps it in a layer
 * of its own (effect3.ts here, the Effect 4 package's test/fleet.ts).
 *
 * Local path: `redis-server` binaries started as child processes and stopped
 * by their PID. Container path (containers.ts): testcontainers, used only
 * where a Docker engine answers.
 */
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import * as ClockShift from "./clockShift.js"
import { eventually, type ServerProcess, startAll, startServer } from "./servers.js"

export interface FleetOptions {
  /** Servers require this password (`requirepass`). */
  readonly password?: string | undefined
  /**
   * Append-only file with `appendfsync always`: a server killed with SIGKILL
   * keeps every acknowledged write across a restart. Default: no persistence.
   */
  readonly persistence?: boolean | undefined
  /** Start one replica of each server (`--replicaof`), for the nodes' `waitForReplicas` (`LocalFleet.replicas`). */
  readonly replicas?: boolean | undefined
  /**
   * Start one Sentinel (`redis-server --sentinel`) watching every server as
   * master `fleet-<index>` (quorum 1, down after 1 s), to fail over to its
   * replica (needs `replicas`).
   */
  readonly sentinels?: boolean | undefined
  /**
   * Make the servers one Redis Cluster (`cluster-enabled`, then `redis-cli
   * --cluster create`, no replicas): every server a master of a share of the
   * slots (`LocalFleet.cluster`). A killed server keeps its cluster identity
   * and slots when started again (its `nodes.conf`), not its keys.
   */
  readonly cluster?: boolean | undefined
  /** Make each server a Redis Cluster of its own: every hash slot on it (a cluster per lock node). */
  readonly clusterPerServer?: boolean | undefined
  /**
   * Servers that speak TLS only (`tls-port`), with the test certificate in
   * tls/ (signed by a CA of its own, for 127.0.0.1, clients not asked for one):
   * `LocalFleet.tlsCa` is what a client trusts, and `LocalFleet.nodes` carry
   * it. Without replicas, Sentinels or a cluster.
   */
  readonly tls?: boolean | undefined
  /**
   * Servers whose wall clocks a test shifts (`LocalFleet.shiftClock`): each
   * started with the clock shim of clockShift.ts, built by the machine's
   * `cc`. A restarted server keeps its shift.
   */
  readonly shiftableClocks?: boolean | undefined
}

/** How a client reaches one server of the fleet. */
export interface NodeAddress {
  readonly host: string
  readonly port: number
  readonly password?: string | undefined
  readonly tls?: { readonly ca: string } | undefined
}

export interface LocalFleet {
  readonly servers: ReadonlyArray<ServerProcess>
  /** One replica per server (`replicaof` it), in server order, when the fleet was made with `replicas`. */
  readonly replicas: ReadonlyArray<ServerProcess>
  /** Sentinels watching every server as master `fleet-<index>` ({@link masterName}), when made with `sentinels`. */
  readonly sentinels: ReadonlyArray<{ readonly port: number }>
  /** How a client reaches each server. */
  readonly nodes: ReadonlyArray<NodeAddress>
  /** The certificate a client of a TLS fleet trusts (PEM); `undefined` for a fleet without TLS. */
  readonly tlsCa: string | undefined
  /** The cluster's nodes for a node's `cluster` option, when the fleet was made with `cluster`. */
  readonly cluster: ReadonlyArray<{ readonly host: string; readonly port: number }>
  /** DBSIZE of every server. */
  readonly dbsizes: () => Promise<ReadonlyArray<number>>
  /** FLUSHALL on every server, and every server running and resumed. */
  readonly reset: () => Promise<void>
  /** Until every server has its replica connected and in sync (WAIT answers 1), at most 10 s; at once without replicas. */
  readonly replicasInSync: () => Promise<void>
  /** Until every server of a cluster says `cluster_state:ok` (after a restart: once it rejoined), at most 20 s. */
  readonly clusterOk: () => Promise<void>
  /** Every process stopped (paused ones too) and the fleet's folder removed. */
  readonly stop: () => Promise<void>
  /**
   * Server `index`'s wall clock runs `offsetMillis` ahead (behind, if
   * negative) from now on, and gains `rate` of each millisecond that passes
   * from now (0.005: 0.5% fast; negative: slow; default 0): its `TIME` and
   * its keys' expiry with it. Only for a fleet made with `shiftableClocks`.
   */
  readonly shiftClock: (index: number, offsetMillis: number, rate?: number) => void
}

/** The master name the fleet's Sentinel knows server `index` by. */
export const masterName = (index: number): string => `fleet-${index}`

/**
 * The fleet's TLS files (tls/ of this package, valid until 2126): a CA of its
 * own and the servers' certificate for 127.0.0.1 it signed, as a managed
 * service's are (Rust's TLS, GLIDE's, takes no CA's certificate for a server's).
 */
const tlsFiles = (() => {
  const root = Path.dirname(createRequire(import.meta.url).resolve("@effect-redlock/fleet/package.json"))
  return {
    ca: Path.join(root, "tls", "ca.pem"),
    cert: Path.join(root, "tls", "cert.pem"),
    key: Path.join(root, "tls", "key.pem")
  }
})()

/** The CA a client of a TLS fleet trusts. */
const tlsCaOf = (options: FleetOptions): string | undefined =>
  options.tls === true ? Fs.readFileSync(tlsFiles.ca, "utf8") : undefined

/** `redis-server`'s arguments for one server of the fleet. */
const serverArgs =
  (options: FleetOptions, replicaOf: number | undefined) =>
  (dir: string, [port, busPort]: ReadonlyArray<number>): ReadonlyArray<string> => {
    const args = [
      ...(options.tls === true
        ? [
          "--port",
          "0",
          "--tls-port",
          String(port),
          "--tls-cert-file",
          tlsFiles.cert,
          "--tls-key-file",
          tlsFiles.key,
          "--tls-ca-cert-file",
          tlsFiles.ca,
          "--tls-auth-clients",
          "no"
        ]
        : ["--port", String(port)]),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--dir",
      dir,
      "--logfile",
      Path.join(dir, "redis.log"),
      ...(options.persistence === true ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"])
    ]
    if (options.password !== undefined) args.push("--requirepass", options.password)
    if (options.password !== undefined && replicaOf !== undefined) args.push("--masterauth", options.password)
    // A cluster's replica is made one by the cluster (CLUSTER REPLICATE, createCluster).
    if (replicaOf !== undefined && !clustered(options)) args.push("--replicaof", "127.0.0.1", String(replicaOf))
    if (clustered(options)) {
      // Its bus port of its own choosing, not `port` + 10000, which may be taken; and the address it
      // announces, which a cluster that never met another node would otherwise not know.
      args.push(
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        Path.join(dir, "nodes.conf"),
        "--cluster-node-timeout",
        "1000",
        "--cluster-port",
        String(busPort),
        "--cluster-announce-ip",
        "127.0.0.1"
      )
    }
    return args
  }

const clustered = (options: FleetOptions) => options.cluster === true || options.clusterPerServer === true

/** Until `CLUSTER INFO` of `server` says the cluster is ok. */
const clusterStateOk = (server: ServerProcess, withinMillis: number) =>
  eventually(
    async () => {
      if (!String(await server.call("CLUSTER", "INFO")).includes("cluster_state:ok")) {
        throw new Error(
          "cluster_state is not ok yet"
        )
      }
    },
    withinMillis,
    50
  )

/** One Sentinel watching `masters`; its configuration file is its own to rewrite (Sentinel records what it learns there). */
const startSentinel = (parent: string, masters: ReadonlyArray<ServerProcess>, options: FleetOptions) =>
  startServer({
    index: 0,
    parent,
    name: "sentinel",
    portCount: 1,
    argsOf: (dir, [port]) => {
      const lines = [`port ${port}`, "bind 127.0.0.1", `dir ${dir}`, `logfile ${Path.join(dir, "sentinel.log")}`]
      for (const master of masters) {
        const name = masterName(master.index)
        lines.push(
          `sentinel monitor ${name} 127.0.0.1 ${master.port} 1`,
          `sentinel down-after-milliseconds ${name} 1000`,
          `sentinel failover-timeout ${name} 5000`
        )
        if (options.password !== undefined) lines.push(`sentinel auth-pass ${name} ${options.password}`)
      }
      const file = Path.join(dir, "sentinel.conf")
      Fs.writeFileSync(file, lines.join("\n") + "\n")
      return [file, "--sentinel"]
    },
    // Ready once it knows every master.
    setUp: (admin) =>
      eventually(
        async () => {
          const known = await admin.call("SENTINEL", "MASTERS") as ReadonlyArray<unknown>
          if (known.length !== masters.length) throw new Error("the Sentinel does not know every master yet")
        },
        10_000,
        50
      )
  })

/**
 * `redis-cli --cluster create` over `servers`: each a master of an equal
 * share of the slots; then `replicas[i]` joins as the replica of `servers[i]`.
 */
const createCluster = async (
  servers: ReadonlyArray<ServerProcess>,
  replicas: ReadonlyArray<ServerProcess>,
  options: FleetOptions
) => {
  const args = ["--cluster", "create", ...servers.map((server) => `127.0.0.1:${server.port}`), "--cluster-yes"]
  if (options.password !== undefined) args.push("-a", options.password, "--no-auth-warning")
  // Bounded: it waits for the nodes to agree as long as it takes (forever when one cannot be reached).
  await new Promise<void>((resolve, reject) =>
    execFile(
      "redis-cli",
      args,
      { timeout: 15_000 },
      (error) =>
        error === null
          ? resolve()
          : reject(new Error(`redis-cli --cluster create failed: ${error.message}`, { cause: error }))
    )
  )
  await Promise.all(replicas.map(async (replica, i) => {
    const master = servers[i]
    const masterId = String(await master.call("CLUSTER", "MYID"))
    await replica.call("CLUSTER", "MEET", "127.0.0.1", master.port, master.busPort!)
    // Once the replica knows the master (the handshake takes a moment).
    await eventually(() => replica.call("CLUSTER", "REPLICATE", masterId), 10_000)
  }))
}

/**
 * `n` local `redis-server` processes on free ports (and what `options` adds),
 * in a temporary folder of their own. A cluster that does not come up is
 * stopped and made again on new ports, three tries in all.
 */
export const startLocalFleet = async (n: number, options: FleetOptions = {}): Promise<LocalFleet> => {
  if (options.tls === true && (options.replicas === true || options.sentinels === true || clustered(options))) {
    throw new Error("a TLS fleet has no replicas, Sentinels or cluster")
  }
  const parent = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-redlock-fleet-"))
  for (let tries = 1;; tries++) {
    try {
      return await startIn(
        Fs.mkdtempSync(Path.join(parent, `try-${tries}-`)),
        n,
        options,
        () => Fs.rmSync(parent, { recursive: true, force: true })
      )
    } catch (error) {
      if (tries === 3) {
        Fs.rmSync(parent, { recursive: true, force: true })
        throw error
      }
      console.error(`test fleet, try ${tries}: ${(error as Error).message}`)
    }
  }
}

// One try of `startLocalFleet` in `dir`: its processes stopped if it fails.
const startIn = async (
  dir: string,
  n: number,
  options: FleetOptions,
  removeFolder: () => void
): Promise<LocalFleet> => {
  const tlsCa = tlsCaOf(options)
  const common = { parent: dir, portCount: clustered(options) ? 2 : 1, password: options.password, tlsCa }
  const clocks = options.shiftableClocks !== true
    ? []
    : await Promise.all(
      Array.from({ length: n }, (_, index) => ClockShift.shiftableClock(Path.join(dir, `clock-${index}`)))
    )
  const servers = await startAll(Array.from({ length: n }, (_, index) => () =>
    startServer({
      ...common,
      index,
      name: `node-${index}`,
      env: clocks[index]?.env,
      argsOf: serverArgs(options, undefined),
      setUp: options.clusterPerServer !== true ? undefined : async (admin) => {
        await admin.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
      }
    })))
  const started: Array<{ readonly stop: () => Promise<void> }> = [...servers]
  const stop = async () => {
    await Promise.all(started.map((process) => process.stop()))
    removeFolder()
  }
  try {
    const replicas = options.replicas !== true ?
      [] :
      await startAll(servers.map((server) => () =>
        startServer({
          ...common,
          index: server.index,
          name: `node-${server.index}-replica`,
          argsOf: serverArgs(options, server.port)
        })
      ))
    started.push(...replicas)
    const sentinels = options.sentinels !== true ? [] : [await startSentinel(dir, servers, options)]
    started.push(...sentinels)
    const fleet = makeFleet(servers, replicas, sentinels.map(({ port }) => ({ port })), options, tlsCa, stop, clocks)
    if (options.cluster === true) {
      await createCluster(servers, replicas, options)
      await fleet.clusterOk()
    }
    if (options.clusterPerServer === true) await Promise.all(servers.map((server) => clusterStateOk(server, 10_000)))
    return fleet
  } catch (error) {
    await Promise.all(started.map((process) => process.stop()))
    throw error
  }
}

/** The fleet's operations over its started servers (the container path's too). */
export const makeFleet = (
  servers: ReadonlyArray<ServerProcess>,
  replicas: ReadonlyArray<ServerProcess>,
  sentinels: ReadonlyArray<{ readonly port: number }>,
  options: FleetOptions,
  tlsCa: string | undefined,
  stop: () => Promise<void>,
  clocks: ReadonlyArray<ClockShift.ShiftableClock> = []
): LocalFleet => ({
  shiftClock: (index, offsetMillis, rate) => {
    const clock = clocks[index]
    if (clock === undefined) {
      throw new Error(`server ${index}'s clock cannot be shifted: make the fleet with shiftableClocks`)
    }
    clock.set(offsetMillis, rate)
  },
  servers,
  replicas,
  sentinels,
  nodes: servers.map((server) => ({
    host: "127.0.0.1",
    port: server.port,
    ...(options.password === undefined ? {} : { password: options.password }),
    ...(tlsCa === undefined ? {} : { tls: { ca: tlsCa } })
  })),
  tlsCa,
  cluster: options.cluster !== true ? [] : servers.map((server) => ({ host: "127.0.0.1", port: server.port })),
  dbsizes: () => Promise.all(servers.map(async (server) => Number(await server.call("DBSIZE")))),
  // Replicas are running and resumed first: a master's FLUSHALL reaches them.
  reset: async () => {
    await Promise.all(replicas.map(async (replica) => {
      await replica.resume()
      await replica.start()
    }))
    await Promise.all(servers.map(async (server) => {
      await server.resume()
      await server.start()
      await server.call("FLUSHALL")
    }))
  },
  replicasInSync: () =>
    Promise.all(
      servers.slice(0, replicas.length).map((server) =>
        eventually(async () => {
          if (Number(await server.call("WAIT", 1, 100)) < 1) {
            throw new Error(`server ${server.index}'s replica is not in sync yet`)
          }
        }, 10_000)
      )
    ).then(() => undefined),
  clusterOk: () =>
    Promise.all(clustered(options) ? servers.map((server) => clusterStateOk(server, 20_000)) : []).then(() =>
      undefined
    ),
  stop
})
