/**
 * Sending commands on an ioredis client cheaply: EVALSHA's wire form built
 * once per fan-out, and one turn's writes gathered into one.
 *
 * @internal
 */
import type { Script } from "../scripts.js"
import type { CommandClass, IoredisClient } from "./client.js"

/**
 * EVALSHA sent as bytes encoded once per fan-out. ioredis builds each
 * command's wire form from its arguments on every call (flattening,
 * stringifying, a string concatenation per argument); a fan-out sends the
 * same script with the same keys and arguments to every node, so the wire
 * form is built for the first node and reused for the others (the last one
 * is kept, compared by its parts). Only for clients that change nothing in a
 * command (no key prefix, no friendly error stacks, no auto-pipelining):
 * `usable` tells. A command of the client's library (`Command`, ioredis's
 * or iovalkey's), whose wire form is the one built here.
 */
export const encodedEvalsha = {
  usable: (client: IoredisClient): boolean =>
    !client.options.keyPrefix && !client.options.showFriendlyErrorStack && !client.options.enableAutoPipelining,
  command: (
    Command: CommandClass,
    script: Script,
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string | number>
  ): InstanceType<CommandClass> => new (encodedCommandOf(Command))(wireForm(script, keys, args))
}

/** Each library's command class whose wire form is given, made once. */
const encodedCommands = new WeakMap<CommandClass, new(wire: string) => InstanceType<CommandClass>>()

const encodedCommandOf = (Command: CommandClass) => {
  let Encoded = encodedCommands.get(Command)
  if (Encoded === undefined) {
    Encoded = class extends Command {
      constructor(private readonly wire: string) {
        super("evalsha", [], { replyEncoding: "utf8" })
      }
      override toWritable(): string {
        return this.wire
      }
    }
    encodedCommands.set(Command, Encoded)
  }
  return Encoded
}

let last: {
  readonly script: Script
  readonly keys: ReadonlyArray<string>
  readonly args: ReadonlyArray<string | number>
  readonly wire: string
} | undefined

const wireForm = (script: Script, keys: ReadonlyArray<string>, args: ReadonlyArray<string | number>): string => {
  if (last !== undefined && last.script === script && last.keys === keys && sameArgs(last.args, args)) return last.wire
  let wire = "*" + (3 + keys.length + args.length) + "\r\n$7\r\nevalsha\r\n" + bulk(script.sha) +
    bulk(String(keys.length))
  for (const key of keys) wire += bulk(key)
  for (const arg of args) wire += bulk(typeof arg === "string" ? arg : String(arg))
  last = { script, keys, args, wire }
  return wire
}

const sameArgs = (some: ReadonlyArray<string | number>, others: ReadonlyArray<string | number>): boolean => {
  if (some.length !== others.length) return false
  for (let index = 0; index < some.length; index++) if (some[index] !== others[index]) return false
  return true
}

// One bulk string of the wire form: its length in bytes, then the text.
const bulk = (text: string): string => "$" + Buffer.byteLength(text) + "\r\n" + text + "\r\n"

/**
 * Batch the writes of one turn of the event loop into one write to the socket.
 * Commands of many concurrent locks are sent to a node one after another
 * within the same turn (their callers resume together when a reply arrives);
 * corking the socket until the turn's synchronous work and promise callbacks
 * are done turns them into one system call instead of one per command. A lone
 * command waits for nothing: the socket is uncorked before the event loop
 * goes on. Call it before sending each command.
 */
export const writeBatcher = (client: IoredisClient): () => void => {
  let corked = false
  return () => {
    const stream = client.stream
    if (corked || stream === undefined || !stream.writable) return
    corked = true
    stream.cork()
    process.nextTick(() => {
      corked = false
      stream.uncork()
    })
  }
}
