/**
 * Callbacks waiting for the release of a key, for as long as their scope is
 * open. `onFirst` and `onLast` run when a key gains its first watcher and
 * loses its last one (the ioredis node subscribes and unsubscribes there).
 *
 * @internal
 */
import * as Effect from "effect/Effect"

export class Watchers {
  private readonly byKey = new Map<string, Set<() => void>>()

  constructor(
    private readonly onFirst: (key: string) => void = () => {},
    private readonly onLast: (key: string) => void = () => {}
  ) {}

  watch(key: string, onRelease: () => void) {
    return Effect.acquireRelease(
      Effect.sync(() => {
        let watchers = this.byKey.get(key)
        if (watchers === undefined) {
          watchers = new Set()
          this.byKey.set(key, watchers)
          this.onFirst(key)
        }
        watchers.add(onRelease)
        return watchers
      }),
      (watchers) =>
        Effect.sync(() => {
          watchers.delete(onRelease)
          if (watchers.size > 0 || this.byKey.get(key) !== watchers) return
          this.byKey.delete(key)
          this.onLast(key)
        })
    ).pipe(Effect.asVoid)
  }

  notify(key: string): void {
    this.byKey.get(key)?.forEach((onRelease) => onRelease())
  }

  get size(): number {
    let count = 0
    for (const watchers of this.byKey.values()) count += watchers.size
    return count
  }
}
