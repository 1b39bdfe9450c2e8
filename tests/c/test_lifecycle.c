/* Lifecycle (fp_profiler.c): fp_profiler_clear keeps the thread records but
 * empties them, fp_profiler_destroy frees everything; both hand every
 * non-NULL entry user pointer to the release callback exactly once, open
 * and parked frames included; a fork child's other threads are flushed at
 * their last event. */
#define _GNU_SOURCE
#include "fp_testlib.h"

static fp_entry_t *entry_u(fp_thread_t *t, const void *key, unsigned user)
{
    fp_entry_t *e = fp_entry_find(t, key);
    if (!e)
        e = fp_entry_add(t, key, user ? TL_USER(user) : NULL);
    assert_non_null(e);
    return e;
}

static void test_clear_keeps_threads_and_releases_once(void **state)
{
    (void)state;
    tl_release_log_t log = {0};
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS | FP_CALLPATHS, 8, tl_release, &log);
    fp_thread_t *t1 = fp_thread_get(&p, 11);
    fp_thread_t *t2 = fp_thread_get(&p, 22);
    assert_non_null(t1);
    assert_non_null(t2);

    /* t1: a (user 1) -> b (user 2) -> generator g (user 3) parked, then
     * c (no user) left open; t2: d (user 4) open. */
    fp_enter(&p, t1, entry_u(t1, KA, 1), NULL, 0);
    fp_enter(&p, t1, entry_u(t1, KB, 2), NULL, 1);
    fp_enter(&p, t1, entry_u(t1, KG, 3), G1, 2);
    fp_suspend(&p, t1, KG, G1, 3);
    fp_enter(&p, t1, entry_u(t1, KC, 0), NULL, 4);
    fp_enter(&p, t2, entry_u(t2, KD, 4), NULL, 5);
    assert_int_equal(tl_count_parked(t1), 1);
    assert_int_equal(t1->depth, 3);
    p.nomem = 1;       /* as if something had been dropped */
    t2->root_subt = 7; /* as if calls had returned to its empty stack */

    fp_profiler_clear(&p);
    assert_int_equal(t2->root_subt, 0);

    assert_int_equal(log.total, 4); /* c has no user pointer */
    for (unsigned u = 1; u <= 4; u++)
        assert_int_equal(log.calls[u], 1);
    assert_int_equal(log.bad, 0);
    assert_int_equal(p.nomem, 0);
    /* same records, emptied */
    assert_ptr_equal(fp_thread_find(&p, 11), t1);
    assert_ptr_equal(fp_thread_find(&p, 22), t2);
    assert_int_equal(HASH_COUNT(p.threads), 2);
    for (fp_thread_t *t = p.threads; t; t = t->hh.next) {
        assert_null(t->entries);
        assert_null(t->edges);
        assert_null(t->nodes);
        assert_null(t->parked);
        assert_int_equal(t->depth, 0);
        assert_int_equal(t->lost, 0);
        assert_int_equal(t->n_entries, 0);
        assert_int_equal(t->n_edges, 0);
        assert_int_equal(t->n_nodes, 0);
    }

    /* usable again, counting from zero; the old generator is gone */
    fp_enter(&p, t1, entry_u(t1, KA, 5), NULL, 100);
    fp_resume(&p, t1, entry_u(t1, KG, 6), G1, 101); /* a first start */
    fp_leave(&p, t1, KG, 103);
    fp_leave(&p, t1, KA, 104);
    assert_entry(t1, KA, 1, 0, 4, 2);
    assert_entry(t1, KG, 1, 0, 2, 2);
    assert_edge(t1, KA, KG, 1, 0, 2, 2);
    assert_int_equal(t1->n_nodes, 2);
    tl_assert_idle(t1);

    /* clearing twice releases nothing more than what exists */
    fp_profiler_clear(&p);
    assert_int_equal(log.total, 6);
    assert_int_equal(log.calls[5], 1);
    assert_int_equal(log.calls[6], 1);
    fp_profiler_clear(&p);
    assert_int_equal(log.total, 6);

    fp_profiler_destroy(&p);
    assert_int_equal(log.total, 6);
    assert_null(p.threads);
}

static void test_destroy_releases_once(void **state)
{
    (void)state;
    tl_release_log_t log = {0};
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS | FP_CALLPATHS, 8, tl_release, &log);
    const void *keys[] = {KA, KB, KC, KD, KE, KF};
    unsigned user = 1;
    for (uint64_t id = 1; id <= 3; id++) {
        fp_thread_t *t = fp_thread_get(&p, id);
        assert_non_null(t);
        for (int i = 0; i < 6; i++)
            fp_enter(&p, t, entry_u(t, keys[i], user++), NULL, i);
        fp_suspend(&p, t, KF, G1, 10); /* one parked */
        for (int i = 4; i >= 2; i--)
            fp_leave(&p, t, keys[i], 20 - i); /* two left open */
    }
    assert_int_equal(log.total, 0);
    assert_true(fp_profiler_memory(&p) > 0);

    fp_profiler_destroy(&p);
    assert_int_equal(log.total, 18);
    for (unsigned u = 1; u <= 18; u++)
        assert_int_equal(log.calls[u], 1);
    assert_int_equal(log.bad, 0);
    assert_null(p.threads);
    assert_int_equal(fp_profiler_memory(&p), 0);

    /* still usable after destroy, as after init */
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    fp_enter(&p, t, entry_u(t, KA, 19), NULL, 0);
    fp_leave(&p, t, KA, 1);
    assert_entry(t, KA, 1, 0, 1, 1);
    fp_profiler_destroy(&p);
    fp_profiler_destroy(&p); /* idempotent */
    assert_int_equal(log.total, 19);
    assert_int_equal(log.calls[19], 1);
}

/* With no release callback, entries with user pointers are just dropped. */
static void test_no_release_callback(void **state)
{
    (void)state;
    fp_profiler_t p;
    fp_profiler_init(&p, 0, 0, NULL, NULL);
    assert_int_equal(p.max_depth, 1); /* bound forced to >= 1 */
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    fp_enter(&p, t, entry_u(t, KA, 7), NULL, 0);
    fp_profiler_clear(&p);
    fp_profiler_destroy(&p);
}

/* A thread record outside any profiler: fp_thread_free releases each user
 * once when given a callback. */
static void test_thread_free_releases(void **state)
{
    (void)state;
    tl_release_log_t log = {0};
    fp_thread_t *t = fp_thread_new(5);
    assert_non_null(t);
    assert_int_equal(t->id, 5);
    entry_u(t, KA, 1);
    entry_u(t, KB, 2);
    entry_u(t, KC, 0);
    assert_int_equal(t->n_entries, 3);
    fp_thread_free(t, tl_release, &log);
    assert_int_equal(log.total, 2);
    assert_int_equal(log.calls[1], 1);
    assert_int_equal(log.calls[2], 1);
    fp_thread_free(NULL, tl_release, &log);
}

/* A fork child's record of a thread it did not inherit is flushed at that
 * thread's last event (fpy_module.c after_fork_child): a recursive call that
 * finished inside the still open outer one keeps its own time, and the
 * outer call's cumulative time covers it (dropping the open frames instead
 * left owntime > cumtime). Levels are back to zero, so the record counts
 * exactly when used again. */
static void test_flush_at_last_event_after_fork(void **state)
{
    (void)state;
    tl_release_log_t log = {0};
    fp_profiler_t p;
    fp_profiler_init(&p, FP_SUBCALLS | FP_CALLPATHS, 8, tl_release, &log);
    fp_thread_t *t = fp_thread_get(&p, 1);
    assert_non_null(t);
    fp_enter(&p, t, entry_u(t, KA, 1), NULL, 0); /* outer a, open at the fork */
    fp_enter(&p, t, entry_u(t, KA, 1), NULL, 1); /* recursive a */
    fp_enter(&p, t, entry_u(t, KB, 2), NULL, 2);
    fp_leave(&p, t, KB, 3);
    fp_leave(&p, t, KA, 6); /* inner a: cum 5, own 4 */
    assert_int_equal(t->depth, 1);
    assert_true(t->last_now == 6);

    fp_thread_flush(&p, t, t->last_now);

    assert_int_equal(t->depth, 0);
    tl_assert_idle(t); /* every reclevel back to 0 */
    /* a: 2 calls, 1 recursive; cum 0..6 (outermost only) covers own 4 + 1 */
    assert_entry(t, KA, 2, 1, 6, 5);
    assert_entry(t, KB, 1, 0, 1, 1);

    /* the record is usable: a fresh a -> b counts exactly, not recursively */
    tl_call(&p, t, KA, 100);
    tl_call(&p, t, KB, 101);
    tl_ret(&p, t, KB, 104);
    tl_ret(&p, t, KA, 105);
    assert_entry(t, KA, 3, 1, 11, 7);
    assert_entry(t, KB, 2, 0, 4, 4);
    tl_assert_idle(t);
    fp_profiler_destroy(&p);
    assert_int_equal(log.total, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clear_keeps_threads_and_releases_once),
        cmocka_unit_test(test_destroy_releases_once),
        cmocka_unit_test(test_no_release_callback),
        cmocka_unit_test(test_thread_free_releases),
        cmocka_unit_test(test_flush_at_last_event_after_fork),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
