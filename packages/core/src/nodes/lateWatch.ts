/**
 * A watch of releases registered later (by a node written with effects,
 * whose `watchReleases` is an effect to run): each Effect line's
 * `RedisNode.fromEffects` makes its nodes' plain watches with it.
 *
 * @internal
 */
import type { ReleaseWatch } from "../engine/node.js"

/**
 * A watch that `register` sets up, calling back with the watch once it is
 * registered (`undefined`: it failed, and nothing will be heard). It is
 * ready when that watch is; a release until then may go unheard, as with
 * any watch not ready yet. Stopped before it is registered, it is stopped
 * as soon as it is.
 */
export const lateWatch = (register: (registered: (watch: ReleaseWatch | undefined) => void) => void): ReleaseWatch => {
  let watch: ReleaseWatch | undefined
  let stopped = false
  const ready = new Promise<void>((resolve) => {
    register((registered) => {
      if (registered === undefined) return resolve()
      watch = registered
      if (stopped) watch.stop()
      resolve(watch.ready)
    })
  })
  return {
    ready,
    stop: () => {
      stopped = true
      watch?.stop()
    }
  }
}
