/* fp_clock: the profiler's clocks, read once per event.
 *
 * Wall time comes from the CPU's time-stamp counter when it is invariant (a
 * read costs a few ns against ~15-20 ns for clock_gettime), calibrated once
 * against CLOCK_MONOTONIC; otherwise from CLOCK_MONOTONIC itself. CPU time
 * is the calling thread's CPU clock. A custom clock is a callback (the
 * binding uses it for Python timer callables). */
#ifndef FP_CLOCK_H
#define FP_CLOCK_H

#include <stdint.h>
#include <time.h>

typedef int64_t fp_time_t;

typedef enum {
    FP_CLOCK_TSC = 0,       /* invariant time-stamp counter */
    FP_CLOCK_MONOTONIC = 1, /* clock_gettime(CLOCK_MONOTONIC), ns */
    FP_CLOCK_CPU = 2,       /* clock_gettime(CLOCK_THREAD_CPUTIME_ID), ns */
    FP_CLOCK_CUSTOM = 3     /* the callback's units */
} fp_clock_kind;

typedef fp_time_t (*fp_clock_fn)(void *ctx);

typedef struct fp_clock {
    fp_clock_kind kind;
    double ticks_per_second; /* to convert readings to seconds */
    fp_clock_fn custom;      /* FP_CLOCK_CUSTOM only */
    void *custom_ctx;
} fp_clock_t;

/* Sets up `c` for wall time: TSC when fp_tsc_usable() and `allow_tsc`,
 * else CLOCK_MONOTONIC. The first TSC use calibrates (about 5 ms, once per
 * process). Returns 0. */
int fp_clock_init_wall(fp_clock_t *c, int allow_tsc);

/* Sets up `c` for the calling thread's CPU time. Returns 0, or -1 if the
 * platform has no per-thread CPU clock. */
int fp_clock_init_cpu(fp_clock_t *c);

/* Sets up `c` to call `fn(ctx)`; `ticks_per_second` converts its readings. */
void fp_clock_init_custom(fp_clock_t *c, fp_clock_fn fn, void *ctx, double ticks_per_second);

/* 1 if this CPU has a counter usable as a wall clock (x86-64 with invariant
 * TSC, or aarch64's virtual counter), else 0. FASTPROF_NO_TSC=1 in the
 * environment forces 0. */
int fp_tsc_usable(void);

/* Counter ticks per second, measured against CLOCK_MONOTONIC on first call
 * and cached (callers serialise the first call; the binding holds the GIL).
 * 0 if fp_tsc_usable() is 0. */
double fp_tsc_hz(void);

/* Measures the counter against CLOCK_MONOTONIC over `ns` nanoseconds. */
double fp_tsc_calibrate(int64_t ns);

/* Name of the kind: "tsc", "monotonic", "cpu", "custom". */
const char *fp_clock_name(fp_clock_kind kind);

static inline fp_time_t fp_clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (fp_time_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline fp_time_t fp_tsc_read(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return (fp_time_t)__builtin_ia32_rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return (fp_time_t)v;
#else
    return fp_clock_ns(CLOCK_MONOTONIC);
#endif
}

/* Reads `c` now. */
static inline fp_time_t fp_clock_now(const fp_clock_t *c)
{
    switch (c->kind) {
    case FP_CLOCK_TSC:
        return fp_tsc_read();
    case FP_CLOCK_MONOTONIC:
        return fp_clock_ns(CLOCK_MONOTONIC);
    case FP_CLOCK_CPU:
        return fp_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    default:
        return c->custom(c->custom_ctx);
    }
}

#endif
