/**
 * Keys on a Redis Cluster node. A cluster runs a script only when every key
 * it names hashes to one slot, and keeps each slot on one master; a lock key
 * and the keys the scripts derive from it (its line, a semaphore's slots and
 * setting, the fence counter beside it) must share that slot. Redis hashes
 * only a key's hash tag (the text between its first `{` and the first `}`
 * after it) when it has a non-empty one, so on cluster nodes a key without
 * one gets its lock key as its tag: `redlock:order` becomes
 * `{redlock:order}`, its line `{redlock:order}\0queue`. Plain nodes keep
 * today's keys (nothing is wrapped there), so existing deployments are not
 * split; a key that has a tag already (a resource named `{order:7}:charge`)
 * is kept as it is.
 *
 * One operation's keys must then share one tag: the resources of a lock of
 * several on a cluster node need a common tag (`{order:7}:charge`,
 * `{order:7}:ship`), or the node refuses it (`CrossSlot`) without sending
 * anything.
 *
 * @internal
 */
import type { MakeNodeError, Node, NodePromises } from "../engine/node.js"

/** A key's hash tag as Redis reads it, or `undefined` when it has none (Redis then hashes the whole key). */
export const hashTag = (key: string): string | undefined => {
  const open = key.indexOf("{")
  if (open < 0) return undefined
  const close = key.indexOf("}", open + 1)
  return close > open + 1 ? key.slice(open + 1, close) : undefined
}

/**
 * The key a cluster node uses for `key`: as it is when it has a hash tag;
 * else its lock key (the part before the first NUL, which only the keys
 * derived from a lock key hold) in braces, then the rest.
 */
export const clusterKey = (key: string): string => {
  if (hashTag(key) !== undefined) return key
  const derived = key.indexOf("\u0000")
  return derived < 0 ? "{" + key + "}" : "{" + key.slice(0, derived) + "}" + key.slice(derived)
}

/** The tag every cluster key has (clusterKey). */
const tagOf = (key: string): string => hashTag(key)!

/** A fence counter's key beside the lock key `lockKey` (a cluster key): in its slot. */
const fenceKeyBeside = (lockKey: string, fenceKey: string): string => {
  const tag = tagOf(lockKey)
  return hashTag(fenceKey) === tag ? fenceKey : "{" + tag + "}" + fenceKey
}

/**
 * `node` as a cluster node: each operation's keys made cluster keys, and
 * refused as `CrossSlot` (nothing sent) when they do not share one tag.
 */
export const onCluster = (node: Node, makeError: MakeNodeError): Node => {
  const { promises } = node
  const crossSlot = (keys: ReadonlyArray<string>) =>
    Promise.reject(makeError({
      node: node.name,
      reason: "CrossSlot",
      detail: `a Redis Cluster node runs one operation on one hash slot: the keys ${
        keys.slice(0, 3).map((key) => JSON.stringify(key.replaceAll("\u0000", "\\0"))).join(", ")
      }${
        keys.length > 3 ? " ..." : ""
      } have different hash tags; give the resources of one lock a common tag ({order:7}:charge, {order:7}:ship)`
    }))
  // Cluster keys of `keys`, or `undefined` when they are not all in one slot.
  const inOneSlot = (keys: ReadonlyArray<string>): ReadonlyArray<string> | undefined => {
    const mapped = keys.map(clusterKey)
    const tag = tagOf(mapped[0])
    return mapped.every((key) => tagOf(key) === tag) ? mapped : undefined
  }
  const withKeys = <Rest extends ReadonlyArray<unknown>, A>(
    operation: (keys: ReadonlyArray<string>, ...rest: Rest) => Promise<A>
  ) =>
  (keys: ReadonlyArray<string>, ...rest: Rest): Promise<A> => {
    const mapped = inOneSlot(keys)
    return mapped === undefined ? crossSlot(keys) : operation(mapped, ...rest)
  }
  const withFences = <Rest extends ReadonlyArray<unknown>, A>(
    operation: (
      keys: ReadonlyArray<string>,
      value: string,
      fenceKeys: ReadonlyArray<string>,
      ...rest: Rest
    ) => Promise<A>
  ) =>
  (keys: ReadonlyArray<string>, value: string, fenceKeys: ReadonlyArray<string>, ...rest: Rest): Promise<A> => {
    const mapped = inOneSlot(keys)
    if (mapped === undefined) return crossSlot(keys)
    return operation(mapped, value, fenceKeys.map((fenceKey, i) => fenceKeyBeside(mapped[i], fenceKey)), ...rest)
  }
  const onClusterKeys: NodePromises = {
    acquire: withKeys(promises.acquire),
    acquireInTurn: withKeys(promises.acquireInTurn),
    acquireSlot: withKeys(promises.acquireSlot),
    release: withKeys(promises.release),
    extend: withKeys(promises.extend),
    inspect: (key) => promises.inspect(clusterKey(key)),
    incrementFences: withFences(promises.incrementFences),
    commitFences: withFences(promises.commitFences)
  }
  const { watchReleasesNow } = node
  return {
    ...node,
    promises: onClusterKeys,
    watchReleasesNow: watchReleasesNow === undefined
      ? undefined
      : (key, onRelease) => watchReleasesNow(clusterKey(key), onRelease)
  }
}
