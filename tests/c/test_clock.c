/* Clocks (fp_clock.{h,c}): TSC calibration and agreement with
 * CLOCK_MONOTONIC, the FASTPROF_NO_TSC switch, the per-thread CPU clock,
 * and the custom callback clock. These read real clocks: bounds are
 * generous where the machine's load can move a reading, strict where it
 * cannot. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "fp_clock.h"

static fp_time_t mono_ns(void)
{
    return fp_clock_ns(CLOCK_MONOTONIC);
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int tsc_or_skip(void)
{
    unsetenv("FASTPROF_NO_TSC");
    if (!fp_tsc_usable()) {
        print_message("no usable TSC here (or cpuid emulated): skipped\n");
        return 0;
    }
    return 1;
}

static void test_tsc_hz_sane(void **state)
{
    (void)state;
    if (!tsc_or_skip())
        skip();
    double hz = fp_tsc_hz();
    print_message("TSC: %.1f MHz\n", hz / 1e6);
    assert_true(hz > 100e6 && hz < 10e9);
    assert_true(fp_tsc_hz() == hz); /* cached */
    double again = fp_tsc_calibrate(10000000);
    assert_true(again > 100e6 && again < 10e9);
    assert_true(again > hz * 0.98 && again < hz * 1.02);
}

static void test_tsc_monotonic(void **state)
{
    (void)state;
    if (!tsc_or_skip())
        skip();
    fp_time_t prev = fp_tsc_read();
    long backwards = 0;
    for (int i = 0; i < 1000000; i++) {
        fp_time_t now = fp_tsc_read();
        if (now < prev)
            backwards++;
        prev = now;
    }
    assert_int_equal(backwards, 0);
}

/* A TSC interval over a ~20 ms sleep, converted with the calibrated rate,
 * agrees with CLOCK_MONOTONIC within 2%. Each counter read is bracketed by
 * monotonic reads; an attempt whose brackets are wide (the thread was
 * preempted between reads) says nothing about the clock and is redone. */
static void test_tsc_agrees_with_monotonic(void **state)
{
    (void)state;
    if (!tsc_or_skip())
        skip();
    fp_clock_t c;
    assert_int_equal(fp_clock_init_wall(&c, 1), 0);
    assert_int_equal(c.kind, FP_CLOCK_TSC);
    assert_string_equal(fp_clock_name(c.kind), "tsc");
    assert_true(c.ticks_per_second == fp_tsc_hz());
    for (int attempt = 0; attempt < 10; attempt++) {
        fp_time_t m0a = mono_ns(), t0 = fp_clock_now(&c), m0b = mono_ns();
        sleep_ns(20000000);
        fp_time_t m1a = mono_ns(), t1 = fp_clock_now(&c), m1b = mono_ns();
        if (m0b - m0a > 100000 || m1b - m1a > 100000)
            continue;
        double mono = ((double)m1a + (double)m1b) / 2 - ((double)m0a + (double)m0b) / 2;
        double tsc = (double)(t1 - t0) / c.ticks_per_second * 1e9;
        print_message("20 ms sleep: monotonic %.0f ns, tsc %.0f ns (%+.3f%%)\n", mono, tsc,
                      (tsc - mono) / mono * 100);
        assert_true(mono >= 20000000);
        assert_true(tsc > mono * 0.98 && tsc < mono * 1.02);
        return;
    }
    fail_msg("every attempt was preempted between clock reads");
}

static void test_no_tsc_env(void **state)
{
    (void)state;
    setenv("FASTPROF_NO_TSC", "1", 1);
    assert_int_equal(fp_tsc_usable(), 0);
    assert_true(fp_tsc_hz() == 0); /* contract: 0 when the TSC is not usable */
    fp_clock_t c;
    assert_int_equal(fp_clock_init_wall(&c, 1), 0);
    assert_int_equal(c.kind, FP_CLOCK_MONOTONIC);
    assert_true(c.ticks_per_second == 1e9);
    assert_string_equal(fp_clock_name(c.kind), "monotonic");
    fp_time_t a = mono_ns();
    fp_time_t now = fp_clock_now(&c);
    fp_time_t b = mono_ns();
    assert_true(a <= now && now <= b);

    unsetenv("FASTPROF_NO_TSC");
    /* allow_tsc = 0 asks for the monotonic clock whatever the CPU */
    assert_int_equal(fp_clock_init_wall(&c, 0), 0);
    assert_int_equal(c.kind, FP_CLOCK_MONOTONIC);
}

static void test_no_tsc_env_zero_means_on(void **state)
{
    (void)state;
    unsetenv("FASTPROF_NO_TSC");
    int usable = fp_tsc_usable();
    setenv("FASTPROF_NO_TSC", "0", 1);
    assert_int_equal(fp_tsc_usable(), usable);
    setenv("FASTPROF_NO_TSC", "", 1);
    assert_int_equal(fp_tsc_usable(), usable);
    unsetenv("FASTPROF_NO_TSC");
}

static void test_cpu_clock(void **state)
{
    (void)state;
    fp_clock_t c;
    assert_int_equal(fp_clock_init_cpu(&c), 0);
    assert_int_equal(c.kind, FP_CLOCK_CPU);
    assert_true(c.ticks_per_second == 1e9);
    assert_string_equal(fp_clock_name(c.kind), "cpu");

    /* asleep: barely moves */
    fp_time_t c0 = fp_clock_now(&c);
    fp_time_t w0 = mono_ns();
    sleep_ns(50000000);
    fp_time_t c1 = fp_clock_now(&c);
    fp_time_t w1 = mono_ns();
    print_message("50 ms sleep: cpu %.3f ms over %.3f ms of wall\n", (c1 - c0) / 1e6, (w1 - w0) / 1e6);
    assert_true(w1 - w0 >= 50000000);
    assert_true(c1 >= c0);
    assert_true(c1 - c0 < 5000000);

    /* spinning: advances, by no more than the wall time. The spin lasts
     * until 50 ms of CPU time have passed (a loaded machine only makes the
     * wall time longer), with a wall-clock bound against a clock that never
     * moves. */
    volatile uint64_t sink = 0;
    fp_time_t c2 = fp_clock_now(&c), w2 = mono_ns(), c3, w3;
    do {
        for (int i = 0; i < 10000; i++)
            sink += (uint64_t)i;
        c3 = fp_clock_now(&c);
        w3 = mono_ns();
    } while (c3 - c2 < 50000000 && w3 - w2 < 10000000000);
    print_message("spin: cpu %.3f ms over %.3f ms of wall\n", (c3 - c2) / 1e6, (w3 - w2) / 1e6);
    assert_true(c3 - c2 >= 50000000);
    assert_true(c3 - c2 <= w3 - w2 + 1000000);
    (void)sink;
}

typedef struct {
    int calls;
    fp_time_t script[3];
} fake_timer_t;

static fp_time_t fake_timer(void *ctx)
{
    fake_timer_t *f = ctx;
    return f->script[f->calls++ % 3];
}

static void test_custom_clock(void **state)
{
    (void)state;
    fake_timer_t f = {0, {7, 1000, -5}};
    fp_clock_t c;
    fp_clock_init_custom(&c, fake_timer, &f, 1000.0);
    assert_int_equal(c.kind, FP_CLOCK_CUSTOM);
    assert_true(c.ticks_per_second == 1000.0);
    assert_ptr_equal(c.custom_ctx, &f);
    assert_string_equal(fp_clock_name(c.kind), "custom");
    assert_int_equal(fp_clock_now(&c), 7);
    assert_int_equal(fp_clock_now(&c), 1000);
    assert_int_equal(fp_clock_now(&c), -5);
    assert_int_equal(f.calls, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tsc_hz_sane),
        cmocka_unit_test(test_tsc_monotonic),
        cmocka_unit_test(test_tsc_agrees_with_monotonic),
        cmocka_unit_test(test_no_tsc_env),
        cmocka_unit_test(test_no_tsc_env_zero_means_on),
        cmocka_unit_test(test_cpu_clock),
        cmocka_unit_test(test_custom_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
