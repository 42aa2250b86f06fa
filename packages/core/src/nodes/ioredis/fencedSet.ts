/**
 * A write to Redis protected by a fencing token (each line's
 * `Fencing/Ioredis` module): `SET key value` in one atomic script, only if
 * the token is at least every token seen for the key.
 *
 * @internal
 */
import type { IoredisClient } from "./client.js"
import type { MakeNodeError, NodeError } from "../../engine/node.js"
import * as Scripts from "../scripts.js"
import * as NodeErrors from "../nodeErrors.js"
import { clientName } from "./node.js"

/**
 * `undefined` once written, or the refusal's fields (every front end's
 * `StaleFencingToken`: the highest token seen); rejects with the front
 * end's node error. The highest token seen is kept at `tokenKey`, by
 * default `${key}:fencing-token`.
 */
export const fencedSet = <E extends NodeError>(
  client: IoredisClient,
  makeError: (fields: Parameters<MakeNodeError>[0]) => E,
  write: {
    readonly key: string
    readonly tokenKey?: string | undefined
    readonly value: string
    readonly token: bigint
  }
): Promise<{ readonly key: string; readonly token: bigint; readonly highestSeen: bigint } | undefined> =>
  // The whole script each time (EVAL), never EVALSHA with EVAL again on NOSCRIPT: a write sent again after
  // that reply would land after the writes sent meanwhile, and an older value of the same holder (same token)
  // would overwrite a newer one.
  client.eval(
    Scripts.fencedSet.lua,
    2,
    write.key,
    write.tokenKey ?? `${write.key}:fencing-token`,
    write.value,
    write.token.toString()
  ).then(
    (reply) =>
      Array.isArray(reply) ? { key: write.key, token: write.token, highestSeen: BigInt(String(reply[0])) } : undefined,
    (cause) => Promise.reject(NodeErrors.toNodeError(makeError, clientName(client), cause, undefined))
  )
