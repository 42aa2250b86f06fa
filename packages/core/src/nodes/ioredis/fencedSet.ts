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

/** Written, or refused with the highest token seen; rejects with the shell's node error. */
export const fencedSet = <E extends NodeError>(
  client: IoredisClient,
  makeError: (fields: Parameters<MakeNodeError>[0]) => E,
  write: { readonly key: string; readonly tokenKey: string; readonly value: string; readonly token: bigint }
): Promise<{ readonly written: true } | { readonly written: false; readonly highestSeen: bigint }> =>
  // The whole script each time (EVAL), never EVALSHA with EVAL again on NOSCRIPT: a write sent again after
  // that reply would land after the writes sent meanwhile, and an older value of the same holder (same token)
  // would overwrite a newer one.
  client.eval(Scripts.fencedSet.lua, 2, write.key, write.tokenKey, write.value, write.token.toString()).then(
    (reply) =>
      Array.isArray(reply)
        ? { written: false, highestSeen: BigInt(String(reply[0])) } as const
        : { written: true } as const,
    (cause) => Promise.reject(NodeErrors.toNodeError(makeError, clientName(client), cause, undefined))
  )
