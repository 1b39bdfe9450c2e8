/* The profiler's own time taken out (fp_program_time, fp_charge): each
 * scripted event reads the clock at `raw` when it starts and at `done` when
 * it ends; with `extra` per event (the calibrated delivery cost) charged
 * too. Raw clock ticks in, the program's exact times out. */
#define _GNU_SOURCE
#include "fp_testlib.h"

typedef struct {
    fp_profiler_t p;
    fp_thread_t *t;
    fp_time_t extra;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    fp_profiler_init(&f->p, FP_SUBCALLS, 1, NULL, NULL);
    f->t = fp_thread_get(&f->p, 1);
    if (!f->t)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    fp_profiler_destroy(&f->p);
    free(f);
    return 0;
}

#define FIX                                                                                             \
    fixture_t *fx = *state;                                                                             \
    fp_profiler_t *p = &fx->p;                                                                          \
    (void)p;                                                                                            \
    fp_thread_t *t = fx->t

/* An event as the binding records one: program time of the first read,
 * the accounting, then the charge up to the last read. */
static void call(fixture_t *fx, const void *key, fp_time_t raw, fp_time_t done)
{
    tl_call(&fx->p, fx->t, key, fp_program_time(fx->t, raw));
    fp_charge(fx->t, raw, done, fx->extra);
}

static void ret(fixture_t *fx, const void *key, fp_time_t raw, fp_time_t done)
{
    tl_ret(&fx->p, fx->t, key, fp_program_time(fx->t, raw));
    fp_charge(fx->t, raw, done, fx->extra);
}

static void yield(fixture_t *fx, const void *key, const void *ident, fp_time_t raw, fp_time_t done)
{
    tl_yield(&fx->p, fx->t, key, ident, fp_program_time(fx->t, raw));
    fp_charge(fx->t, raw, done, fx->extra);
}

static void resume(fixture_t *fx, const void *key, const void *ident, fp_time_t raw, fp_time_t done)
{
    tl_resume(&fx->p, fx->t, key, ident, fp_program_time(fx->t, raw));
    fp_charge(fx->t, raw, done, fx->extra);
}

/* a calls b: every event costs 3 ticks between its reads; the work is
 * a 10, b 20, a 5. */
static void test_callback_time_removed(void **state)
{
    FIX;
    call(fx, KA, 100, 103); /* offset 3 */
    call(fx, KB, 113, 116); /* a ran 113-103 = 10; offset 6 */
    ret(fx, KB, 136, 139);  /* b ran 20; offset 9 */
    ret(fx, KA, 144, 147);  /* a ran 5 more */
    assert_entry(t, KB, 1, 0, 20, 20);
    assert_entry(t, KA, 1, 0, 35, 15);
    assert_edge(t, KA, KB, 1, 0, 20, 20);
    assert_int_equal(t->offset, 12);
    assert_int_equal(t->last_now, 144 - 9);
    assert_int_equal(p->nomem, 0);
}

/* The delivery cost (2 per event) comes off the interval after each event. */
static void test_delivery_cost_removed(void **state)
{
    FIX;
    fx->extra = 2;
    call(fx, KA, 0, 1);   /* offset 3 */
    call(fx, KB, 14, 15); /* a: 14 - 3 = 11 */
    ret(fx, KB, 38, 39);  /* b: (38 - 6) - 11 = 21 */
    ret(fx, KA, 45, 46);  /* a: (45 - 9) - 32 = 4 more */
    assert_entry(t, KB, 1, 0, 21, 21);
    assert_entry(t, KA, 1, 0, 36, 15);
    assert_int_equal(t->offset, 12);
}

/* Recursion: a -> a -> a, 1 tick of work per frame each way, 4 ticks per event. */
static void test_recursion(void **state)
{
    FIX;
    fp_time_t now = 0;
    for (int i = 0; i < 3; i++) {
        call(fx, KA, now, now + 4);
        now += 5; /* 4 in the callback, 1 of work */
    }
    for (int i = 0; i < 3; i++) {
        ret(fx, KA, now, now + 4);
        now += 5;
    }
    /* the frames' work: outer 1+1, middle 1+1, inner 1 (after its call,
     * before its return: 1); cumtime of the outermost: 1+1+1+1+1 = 5 */
    assert_entry(t, KA, 3, 2, 5, 5);
    assert_edge(t, KA, KA, 2, 1, 3, 3);
    assert_int_equal(t->offset, 24);
}

/* A generator in wall mode: its suspension is neither own time nor lost,
 * the callbacks of yield and resume are taken out of both sides. */
static void test_generator_wall_mode(void **state)
{
    FIX;
    call(fx, KA, 0, 2);         /* offset 2 */
    call(fx, KG, 5, 7);         /* a: 3; offset 4 */
    yield(fx, KG, G1, 17, 19);  /* g: 10; offset 6 */
    resume(fx, KG, G1, 26, 28); /* a: 7 while g parked; offset 8 */
    ret(fx, KG, 30, 32);        /* g: 2 more; offset 10 */
    ret(fx, KA, 40, 42);        /* a: 8 more */
    /* g: own 12, cumtime 12 + 7 suspended = 19; a: own 3 + 7 + 8 = 18,
     * cumtime 3 + 19 + 8 = 30 */
    assert_entry(t, KG, 1, 0, 19, 12);
    assert_entry(t, KA, 1, 0, 30, 18);
}

/* Charged more than really passed: the time stands still (no negative
 * interval) and the surplus is taken from the next intervals. */
static void test_surplus_is_owed_never_negative(void **state)
{
    FIX;
    fx->extra = 10;     /* far more than the 1 tick between events */
    call(fx, KA, 0, 1); /* offset 11 */
    call(fx, KB, 2, 3); /* 2 - 11 < 0: stands at 0; offset 22 */
    ret(fx, KB, 4, 5);  /* 4 - 22: stands at 0; offset 33 */
    assert_entry(t, KB, 1, 0, 0, 0);
    ret(fx, KA, 100, 101); /* 100 - 33 = 67 */
    assert_entry(t, KA, 1, 0, 67, 67);
    assert_int_equal(t->last_now, 67);
}

/* clear() empties the account with the stats: the next readings are
 * program time again from a clean start. */
static void test_clear_resets(void **state)
{
    FIX;
    call(fx, KA, 0, 50);
    ret(fx, KA, 60, 70);
    assert_entry(t, KA, 1, 0, 10, 10);
    fp_profiler_clear(p);
    assert_int_equal(t->offset, 0);
    call(fx, KB, 80, 81);
    ret(fx, KB, 90, 91);
    assert_entry(t, KB, 1, 0, 9, 9);
}

/* Raw times: nothing charged, the readings are the times. */
static void test_raw(void **state)
{
    FIX;
    tl_call(p, t, KA, fp_program_time(t, 10));
    tl_ret(p, t, KA, fp_program_time(t, 25));
    assert_entry(t, KA, 1, 0, 15, 15);
    assert_int_equal(t->offset, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_callback_time_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delivery_cost_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recursion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_generator_wall_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_surplus_is_owed_never_negative, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clear_resets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
