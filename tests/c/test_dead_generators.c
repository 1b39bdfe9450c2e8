/* Generators that vanish without a return event (3.13 closes a suspended
 * generator outside any try block without running it): fp_mark_dead and
 * fp_start close their parked frames where they parked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fp_profiler.h"

static int caller_key, gen_key;
static int frame_a; /* a generator frame's identity */

static void setup_thread(fp_profiler_t *p, fp_thread_t **t, fp_entry_t **caller, fp_entry_t **gen)
{
    fp_profiler_init(p, FP_SUBCALLS, 128, NULL, NULL);
    *t = fp_thread_get(p, 1);
    *caller = fp_entry_add(*t, &caller_key, NULL);
    *gen = fp_entry_add(*t, &gen_key, NULL);
}

static void test_dead_parked_frame_closes_where_it_parked(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_thread_t *t;
    fp_entry_t *caller, *gen;
    setup_thread(&p, &t, &caller, &gen);
    fp_enter(&p, t, caller, NULL, 0);
    fp_start(&p, t, gen, &frame_a, 10);
    fp_suspend(&p, t, &gen_key, &frame_a, 13); /* ran 3 ticks, parked at 13 */
    fp_mark_dead(t, &frame_a);                 /* gone at, say, 50 */
    fp_leave(&p, t, &caller_key, 100);
    fp_thread_flush(&p, t, 1000);
    assert_int_equal(gen->callcount, 1);
    assert_int_equal(gen->cumtime, 3); /* closed at 13, not at the flush */
    assert_int_equal(gen->owntime, 3);
    assert_int_equal(caller->cumtime, 100);
    assert_int_equal(caller->owntime, 97);
    fp_profiler_destroy(&p);
}

static void test_live_parked_frame_closes_at_flush(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_thread_t *t;
    fp_entry_t *caller, *gen;
    setup_thread(&p, &t, &caller, &gen);
    fp_start(&p, t, gen, &frame_a, 10);
    fp_suspend(&p, t, &gen_key, &frame_a, 13);
    fp_thread_flush(&p, t, 1000);
    assert_int_equal(gen->callcount, 1);
    assert_int_equal(gen->cumtime, 990); /* still alive: open until the flush */
    assert_int_equal(gen->owntime, 3);
    fp_profiler_destroy(&p);
}

static void test_fresh_start_under_a_parked_identity_closes_the_stale_frame(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_thread_t *t;
    fp_entry_t *caller, *gen;
    setup_thread(&p, &t, &caller, &gen);
    fp_start(&p, t, gen, &frame_a, 10);
    fp_suspend(&p, t, &gen_key, &frame_a, 12);
    /* the generator vanished silently; a new one reuses its frame's memory */
    fp_start(&p, t, gen, &frame_a, 40);
    fp_leave(&p, t, &gen_key, 45);
    assert_int_equal(gen->callcount, 2);
    assert_int_equal(gen->cumtime, 2 + 5);
    assert_int_equal(gen->owntime, 2 + 5);
    assert_null(fp_parked_find(t, &frame_a));
    assert_int_equal(t->depth, 0);
    fp_profiler_destroy(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dead_parked_frame_closes_where_it_parked),
        cmocka_unit_test(test_live_parked_frame_closes_at_flush),
        cmocka_unit_test(test_fresh_start_under_a_parked_identity_closes_the_stale_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
