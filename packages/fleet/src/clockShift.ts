/**
 * A server's wall clock that jumps when a test says so: a shim preloaded
 * into `redis-server` (LD_PRELOAD) that adds an offset to `CLOCK_REALTIME`
 * (and its coarse variant), `gettimeofday` and `time`, the clocks the
 * server's key expiry and `TIME` read; its monotonic clocks are left alone,
 * as a real clock step leaves them. The offset may also grow at a rate (a
 * clock that runs fast, or slow). Offset, rate and the moment the rate runs
 * from are integers in a file the shim maps at start and the test rewrites
 * in place (under a sequence number, so that no reading mixes two settings),
 * and a running server sees a new setting at its next reading.
 *
 * Debian's libfaketime cannot do this for Debian's redis-server (its start
 * recurses into libfaketime through jemalloc and it never listens): the shim
 * calls the kernel by raw system calls, with no `dlsym` and no allocation.
 * It is compiled here, once per source, by the machine's `cc`.
 */
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

const source = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* sequence (odd while being written), offset (ms), rate (parts per billion), the rate's start (unshifted ms since the epoch) */
static const int64_t *setting;

__attribute__((constructor)) static void map_setting(void) {
  const char *path = getenv("CLOCK_SHIFT_FILE");
  if (path == NULL) return;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
  if (fd < 0) return;
  void *mapped = (void *)syscall(SYS_mmap, NULL, 32, PROT_READ, MAP_SHARED, fd, 0);
  syscall(SYS_close, fd);
  if (mapped != MAP_FAILED) setting = mapped;
}

static int64_t shift_nanos(const struct timespec *ts) {
  if (setting == NULL) return 0;
  int64_t sequence, offset, rate, since;
  do {
    sequence = __atomic_load_n(&setting[0], __ATOMIC_ACQUIRE);
    offset = __atomic_load_n(&setting[1], __ATOMIC_RELAXED);
    rate = __atomic_load_n(&setting[2], __ATOMIC_RELAXED);
    since = __atomic_load_n(&setting[3], __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
  } while ((sequence & 1) != 0 || sequence != __atomic_load_n(&setting[0], __ATOMIC_RELAXED));
  int64_t elapsed = ((int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec) - since * 1000000;
  return offset * 1000000 + (int64_t)((double)elapsed * (double)rate / 1e9);
}

static void shift(struct timespec *ts) {
  int64_t shifted = shift_nanos(ts);
  int64_t nanos = (int64_t)ts->tv_nsec + shifted % 1000000000;
  ts->tv_sec += shifted / 1000000000 + nanos / 1000000000;
  nanos %= 1000000000;
  if (nanos < 0) {
    nanos += 1000000000;
    ts->tv_sec -= 1;
  }
  ts->tv_nsec = nanos;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
  long result = syscall(SYS_clock_gettime, clock, ts);
  if (result == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) shift(ts);
  return (int)result;
}

int gettimeofday(struct timeval *tv, void *tz) {
  (void)tz;
  struct timespec ts;
  int result = clock_gettime(CLOCK_REALTIME, &ts);
  if (result == 0 && tv != NULL) {
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
  }
  return result;
}

time_t time(time_t *out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out != NULL) *out = ts.tv_sec;
  return ts.tv_sec;
}
`

let built: Promise<string> | undefined

/** The shim's shared object, compiled once per source into the machine's temporary folder. */
export const shim = (): Promise<string> =>
  built ??= (async () => {
    const hash = Crypto.createHash("sha256").update(source).digest("hex").slice(0, 16)
    const target = Path.join(Os.tmpdir(), `effect-redlock-clock-shift-${hash}.so`)
    if (Fs.existsSync(target)) return target
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-redlock-clock-shift-"))
    const file = Path.join(dir, "shift.c")
    Fs.writeFileSync(file, source)
    const output = Path.join(dir, "shift.so")
    await new Promise<void>((resolve, reject) =>
      ChildProcess.execFile("cc", ["-shared", "-fPIC", "-O2", "-o", output, file], (error, _stdout, stderr) =>
        error === null ? resolve() : reject(new Error(`cc could not build the clock shim: ${stderr || error.message}`)))
    )
    // Into place at once: another process building it meanwhile finds a whole file or none.
    Fs.renameSync(output, target)
    Fs.rmSync(dir, { recursive: true, force: true })
    return target
  })()

/** One server's clock offset: the environment its process starts with, and the offset's setter. */
export interface ShiftableClock {
  readonly env: Readonly<Record<string, string>>
  /**
   * The server's wall clock runs `offsetMillis` ahead (behind, if negative)
   * from now on, and gains `rate` of each millisecond that passes from now
   * (0.005: it runs 0.5% fast; negative: slow; 0 by default).
   */
  readonly set: (offsetMillis: number, rate?: number) => void
}

/** A clock whose offset lives in `file` (0 to begin with), for a server started with its `env`. */
export const shiftableClock = async (file: string): Promise<ShiftableClock> => {
  Fs.writeFileSync(file, Buffer.alloc(32))
  let sequence = 0n
  const set = (offsetMillis: number, rate = 0) => {
    const bytes = Buffer.alloc(32)
    bytes.writeBigInt64LE(BigInt(Math.round(offsetMillis)), 8)
    bytes.writeBigInt64LE(BigInt(Math.round(rate * 1e9)), 16)
    bytes.writeBigInt64LE(BigInt(Date.now()), 24)
    const fd = Fs.openSync(file, "r+")
    try {
      // Odd while the setting is being written: the shim reads again until it is even and unchanged.
      bytes.writeBigInt64LE(++sequence, 0)
      Fs.writeSync(fd, bytes, 0, 8, 0)
      Fs.writeSync(fd, bytes, 8, 24, 8)
      bytes.writeBigInt64LE(++sequence, 0)
      Fs.writeSync(fd, bytes, 0, 8, 0)
    } finally {
      Fs.closeSync(fd)
    }
  }
  return { env: { LD_PRELOAD: await shim(), CLOCK_SHIFT_FILE: file }, set }
}
