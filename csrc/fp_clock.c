#include "fp_clock.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* 0 until calibrated. Process-wide (the counter's rate is the machine's);
 * read and written atomically, since interpreters with their own GIL may
 * calibrate at once (both then store about the same value). */
static double tsc_hz_cached;

#if defined(__x86_64__) || defined(__i386__)
/* Whether the CPU has an invariant TSC, asked once: CPUID traps into the
 * hypervisor under a VM (~10 us each), and a profiler made per test
 * (pytest --fastprof-per-test) asked four times. -1: not asked yet. */
static int invariant_tsc = -1;

static int has_invariant_tsc(void)
{
    int known = __atomic_load_n(&invariant_tsc, __ATOMIC_RELAXED);
    if (known >= 0)
        return known;
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) {
        known = 0;
    } else {
        __get_cpuid(0x80000007u, &a, &b, &c, &d);
        known = (d >> 8) & 1u; /* invariant TSC: constant rate, runs in all C-states */
    }
    __atomic_store_n(&invariant_tsc, known, __ATOMIC_RELAXED);
    return known;
}
#endif

int fp_tsc_usable(void)
{
    const char *off = getenv("FASTPROF_NO_TSC");
    if (off && *off && strcmp(off, "0") != 0)
        return 0;
#if defined(__x86_64__) || defined(__i386__)
    return has_invariant_tsc();
#elif defined(__aarch64__)
    return 1;
#else
    return 0;
#endif
}

/* A counter reading and the monotonic time it was taken at: the midpoint
 * of the narrowest of a few brackets (monotonic, counter, monotonic), so a
 * preemption between the reads, which widens its bracket, is left out
 * instead of skewing the pairing by half the preemption. */
static void tsc_pair(double *mono, fp_time_t *tsc)
{
    fp_time_t best = INT64_MAX;
    for (int i = 0; i < 8; i++) {
        fp_time_t a = fp_clock_ns(CLOCK_MONOTONIC);
        fp_time_t t = fp_tsc_read();
        fp_time_t b = fp_clock_ns(CLOCK_MONOTONIC);
        if (b - a < best) {
            best = b - a;
            *mono = ((double)a + (double)b) / 2;
            *tsc = t;
        }
    }
}

double fp_tsc_calibrate(int64_t ns)
{
    double m0 = 0, m1 = 0;
    fp_time_t t0 = 0, t1 = 0;
    tsc_pair(&m0, &t0);
    do {
        tsc_pair(&m1, &t1);
    } while (m1 - m0 < (double)ns);
    double elapsed_ns = m1 - m0;
    if (elapsed_ns <= 0 || t1 <= t0)
        return 0;
    return (double)(t1 - t0) * 1e9 / elapsed_ns;
}

double fp_tsc_hz(void)
{
    if (!fp_tsc_usable())
        return 0; /* even if calibrated before FASTPROF_NO_TSC was set */
    double hz;
    __atomic_load(&tsc_hz_cached, &hz, __ATOMIC_RELAXED);
    if (hz > 0)
        return hz;
#if defined(__aarch64__)
    uint64_t f;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
    hz = (double)f;
#else
    hz = fp_tsc_calibrate(5000000);
#endif
    __atomic_store(&tsc_hz_cached, &hz, __ATOMIC_RELAXED);
    return hz;
}

int fp_clock_init_wall(fp_clock_t *c, int allow_tsc)
{
    memset(c, 0, sizeof *c);
    double hz = allow_tsc && fp_tsc_usable() ? fp_tsc_hz() : 0;
    if (hz > 0) {
        c->kind = FP_CLOCK_TSC;
        c->ticks_per_second = hz;
    } else {
        c->kind = FP_CLOCK_MONOTONIC;
        c->ticks_per_second = 1e9;
    }
    return 0;
}

int fp_clock_init_cpu(fp_clock_t *c)
{
    struct timespec ts;
    memset(c, 0, sizeof *c);
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return -1;
    c->kind = FP_CLOCK_CPU;
    c->ticks_per_second = 1e9;
    return 0;
}

void fp_clock_init_custom(fp_clock_t *c, fp_clock_fn fn, void *ctx, double ticks_per_second)
{
    memset(c, 0, sizeof *c);
    c->kind = FP_CLOCK_CUSTOM;
    c->custom = fn;
    c->custom_ctx = ctx;
    c->ticks_per_second = ticks_per_second;
}

const char *fp_clock_name(fp_clock_kind kind)
{
    switch (kind) {
    case FP_CLOCK_TSC:
        return "tsc";
    case FP_CLOCK_MONOTONIC:
        return "monotonic";
    case FP_CLOCK_CPU:
        return "cpu";
    default:
        return "custom";
    }
}
