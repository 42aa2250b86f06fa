/**
 * Callbacks waiting for the release of a key, until their watch is stopped.
 * Each is given the message of the release: the lock value of the
 * waiter now first in line, or "".
 *
 * A waiter starts watching after its attempt was refused, so a release that
 * landed in between would go unheard: the last message of each key is kept
 * for a short while and replayed to a new watcher (a stale one costs it one
 * extra attempt at most). `subscribe` runs on every watch and returns a
 * promise when the key's releases are not heard yet (the ioredis node
 * subscribes there); the watch hands it on, so that the waiter knows earlier
 * releases were missed. `onLast` runs when a key loses its last watcher.
 *
 * @internal
 */
import type { ReleaseWatch } from "../engine/node.js"

/** Given the waiter now first in line ("" for none), or `null`: releases may have gone unheard. */
export type OnRelease = (next: string | null) => void

/** How long a release message is replayed to new watchers (ms). */
export const replayMillis = 20

/** How long an announcement told from one source waits for its copy from the other (ms); a later copy is told again. */
export const copyWaitMillis = 1000

// A watch of a key. Not a literal: it points at the younger callback (see engine/attempt.ts, AttemptFields).
class Watch implements ReleaseWatch {
  constructor(readonly ready: Promise<void> | undefined, readonly stop: () => void) {}
}

export class Watchers {
  private readonly byKey = new Map<string, Set<OnRelease>>()
  private readonly lastMessage = new Map<string, { readonly next: string; readonly at: number }>()

  constructor(
    private readonly subscribe: (key: string) => Promise<void> | undefined = () => undefined,
    private readonly onLast: (key: string) => void = () => {}
  ) {}

  /** Watch `key` until stopped. `now` is on the same timeline as `notify`'s. */
  watch(key: string, onRelease: OnRelease, now: number): ReleaseWatch {
    let watchers = this.byKey.get(key)
    if (watchers === undefined) {
      watchers = new Set()
      this.byKey.set(key, watchers)
    }
    // A Set holds a callback once: wrapped, two watches of the same callback stay two.
    const callback: OnRelease = (next) => onRelease(next)
    watchers.add(callback)
    const ready = this.subscribe(key)
    const last = this.lastMessage.get(key)
    if (ready === undefined && last !== undefined && now - last.at <= replayMillis) onRelease(last.next)
    const registered = watchers
    let stopped = false
    return new Watch(ready, () => {
      if (stopped) return
      stopped = true
      registered.delete(callback)
      if (registered.size > 0 || this.byKey.get(key) !== registered) return
      this.byKey.delete(key)
      this.lastMessage.delete(key)
      this.onLast(key)
    })
  }

  /**
   * A release's announcement: told to the key's watchers. A release of this
   * process is told twice, from its answer and from the channel, in either
   * order (`from`; none: a node with one source, told as it comes): the copy
   * that comes second is not told again. `copyMayCome`: whether to wait for
   * a copy of this one (an answer of a key watched or subscribed; a
   * channel's message while a release of ours is unanswered), for
   * `copyWaitMillis` at most, or until `forgetCopies`.
   */
  notify(key: string, next: string, now: number, from?: "answer" | "channel", copyMayCome = false): void {
    if (from !== undefined && this.isCopy(key, next, now, from)) return
    // Awaited with or without watchers: a copy that came after a watch began would be told to it, late.
    if (from !== undefined && copyMayCome) {
      let told = this.uncopied.get(key)
      if (told === undefined) this.uncopied.set(key, told = [])
      told.push({ next, from, at: now })
    }
    const watchers = this.byKey.get(key)
    if (watchers === undefined) return
    this.lastMessage.set(key, { next, at: now })
    watchers.forEach((onRelease) => onRelease(next))
  }

  /**
   * The channel of `key` (none: every channel) is gone: no copy will come.
   * Until then a copy is awaited with or without watchers: one that came
   * after the last watcher left would be told to the next one, late.
   */
  forgetCopies(key?: string): void {
    if (key === undefined) this.uncopied.clear()
    else this.uncopied.delete(key)
  }

  /** The announcements told whose copy from the other source has not come yet, by key, oldest first. */
  private readonly uncopied = new Map<
    string,
    Array<{ readonly next: string; readonly from: "answer" | "channel"; readonly at: number }>
  >()

  // Whether `next` is the copy of an announcement told from the other source (then taken off the list).
  private isCopy(key: string, next: string, now: number, from: "answer" | "channel"): boolean {
    const told = this.uncopied.get(key)
    if (told === undefined) return false
    while (told.length > 0 && now - told[0].at > copyWaitMillis) told.shift()
    const index = told.findIndex((announcement) => announcement.from !== from && announcement.next === next)
    if (index !== -1) told.splice(index, 1)
    if (told.length === 0) this.uncopied.delete(key)
    return index !== -1
  }

  /**
   * Releases of `key` may have gone unheard (the node listens again after a
   * reconnection): every watcher tries again. Nothing is replayed.
   */
  missed(key: string): void {
    this.byKey.get(key)?.forEach((onRelease) => onRelease(null))
  }

  has(key: string): boolean {
    return this.byKey.has(key)
  }

  /** The keys watched now. */
  keys(): IterableIterator<string> {
    return this.byKey.keys()
  }

  get size(): number {
    let count = 0
    for (const watchers of this.byKey.values()) count += watchers.size
    return count
  }
}
