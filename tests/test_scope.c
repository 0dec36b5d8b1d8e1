/* Scopes: tensors made in a scope are released at its end; ct_keep moves one to the
 * enclosing scope or to the caller; ct_release inside a scope is safe; functions that return
 * their argument as a new reference (ct_to, ct_cast, ct_contiguous) are owned by the scope
 * like any new tensor. Live tensor counts tell what was released. */
#include <pthread.h>
#include <stdlib.h>

#include "core/tensor_impl.h"
#include "ct_ref.h"

static ct_tensor *small(double value) {
    int64_t shape[1] = {3};
    return ct_full(1, shape, value, CT_F32, CT_CPU);
}

/* Whether t holds value in every element (t must be alive). */
static bool holds(const ct_tensor *t, double value) {
    double *v = ref_read(t);
    bool ok = v != NULL;
    for (int64_t i = 0; ok && i < ct_numel(t); i++) ok = v[i] == value;
    free(v);
    return ok;
}

TEST(test_scope_releases_tensors_at_end) {
    long live = ct__live_tensors();
    CHECK_OK(ct_scope_begin());
    CHECK(ct_scope_depth() == 1);
    for (int i = 0; i < 200; i++) CHECK_NOT_NULL(small(i)); /* past the first growth */
    CHECK(ct__live_tensors() == live + 200);
    CHECK_OK(ct_scope_end());
    CHECK(ct_scope_depth() == 0);
    CHECK(ct__live_tensors() == live);
}

TEST(test_scope_end_without_begin) {
    CHECK(ct_scope_depth() == 0);
    CHECK(ct_scope_end() == CT_ERR_STATE);
    CHECK_ERROR(CT_ERR_STATE, "ct_scope_end: no scope is open");
}

TEST(test_scope_nested) {
    long live = ct__live_tensors();
    CHECK_OK(ct_scope_begin());
    ct_tensor *outer = small(1);
    CHECK_OK(ct_scope_begin());
    CHECK(ct_scope_depth() == 2);
    CHECK_NOT_NULL(small(2));
    CHECK_NOT_NULL(small(3));
    CHECK_OK(ct_scope_end());
    CHECK(ct__live_tensors() == live + 1);
    CHECK(holds(outer, 1)); /* the outer scope's tensor is untouched */
    CHECK_OK(ct_scope_end());
    CHECK(ct__live_tensors() == live);
}

TEST(test_scope_keep_moves_to_parent) {
    long live = ct__live_tensors();
    CHECK_OK(ct_scope_begin());
    CHECK_OK(ct_scope_begin());
    ct_tensor *t = small(5);
    CHECK(ct_keep(t) == t);
    CHECK_OK(ct_scope_end());
    CHECK(ct__live_tensors() == live + 1);
    CHECK(holds(t, 5));
    CHECK_OK(ct_scope_end()); /* the parent releases it */
    CHECK(ct__live_tensors() == live);
}

TEST(test_scope_keep_at_outermost_goes_to_caller) {
    long live = ct__live_tensors();
    CHECK_OK(ct_scope_begin());
    ct_tensor *t = ct_keep(small(7));
    CHECK_NOT_NULL(t);
    CHECK_OK(ct_scope_end());
    bool alive = ct__live_tensors() == live + 1 && holds(t, 7);
    ct_release(t); /* the caller's to release */
    CHECK(alive);
    CHECK(ct__live_tensors() == live);
    CHECK(ct_keep(NULL) == NULL);
    CHECK(ct_last_status() == CT_OK);
}

TEST(test_scope_keep_twice_moves_two_levels) {
    long live = ct__live_tensors();
    CHECK_OK(ct_scope_begin());
    CHECK_OK(ct_scope_begin());
    CHECK_OK(ct_scope_begin());
    ct_tensor *t = ct_keep(small(1));
    CHECK_OK(ct_scope_end());
    CHECK(ct_keep(t) == t);
    CHECK_OK(ct_scope_end());
    CHECK(ct__live_tensors() == live + 1);
    CHECK_OK(ct_scope_end());
    CHECK(ct__live_tensors() == live);
}

TEST(test_scope_keep_of_outer_tensor_is_a_no_op) {
    long live = ct__live_tensors();
    CHECK_OK(ct_scope_begin());
    ct_tensor *outer = small(2);
    CHECK_OK(ct_scope_begin());
    CHECK(ct_keep(outer) == outer); /* not in the current scope: stays where it is */
    CHECK_OK(ct_scope_end());
    CHECK(holds(outer, 2));
    CHECK_OK(ct_scope_end());
    CHECK(ct__live_tensors() == live); /* released by its own scope, not handed out */
}

TEST(test_scope_release_inside_is_safe) {
    long live = ct__live_tensors();
    CHECK_OK(ct_scope_begin());
    ct_tensor *a = small(1);
    ct_tensor *b = small(2);
    ct_release(a); /* released now; the scope must not release it again */
    CHECK(ct__live_tensors() == live + 1);
    CHECK(holds(b, 2));
    CHECK_OK(ct_scope_end());
    CHECK(ct__live_tensors() == live);
}

TEST(test_scope_release_keeps_other_owners) {
    long live = ct__live_tensors();
    CHECK_OK(ct_scope_begin());
    ct_tensor *t = small(4);
    ct_retain(t);  /* another owner, e.g. a module holding it */
    ct_release(t); /* gives back the scope's reference */
    CHECK_OK(ct_scope_end());
    bool alive = ct__live_tensors() == live + 1 && holds(t, 4);
    ct_release(t);
    CHECK(alive);
    CHECK(ct__live_tensors() == live);
}

TEST(test_scope_retain_survives_scope) {
    long live = ct__live_tensors();
    CHECK_OK(ct_scope_begin());
    ct_tensor *t = ct_retain(small(6));
    CHECK_OK(ct_scope_end());
    bool alive = ct__live_tensors() == live + 1 && holds(t, 6);
    ct_release(t);
    CHECK(alive);
    CHECK(ct__live_tensors() == live);
}

TEST(test_scope_owns_returned_same_references) {
    long live = ct__live_tensors();
    ct_tensor *outside = small(3); /* made outside any scope: the caller's */
    CHECK_NOT_NULL(outside);
    CHECK_OK(ct_scope_begin());
    ct_tensor *inside = small(8);
    /* Each of these returns its argument as a new reference, which the scope owns. */
    CHECK(ct_to(inside, CT_CPU) == inside);
    CHECK(ct_cast(inside, CT_F32) == inside);
    CHECK(ct_contiguous(inside) == inside);
    CHECK(ct_to(outside, CT_CPU) == outside);
    CHECK(ct_cast(outside, CT_F32) == outside);
    CHECK_OK(ct_scope_end());
    bool outside_alive = ct__live_tensors() == live + 1 && holds(outside, 3);
    ct_release(outside);
    CHECK(outside_alive);
    CHECK(ct__live_tensors() == live);
}

TEST(test_scope_release_of_same_reference_keeps_tensor_in_scope) {
    long live = ct__live_tensors();
    CHECK_OK(ct_scope_begin());
    ct_tensor *t = small(9);
    ct_tensor *same = ct_to(t, CT_CPU);
    ct_release(same); /* gives back the second reference only */
    float host[3];
    CHECK_OK(ct_copy_to_host(t, host, sizeof host)); /* takes and gives back one inside */
    CHECK(host[0] == 9.0f);
    CHECK(holds(t, 9));
    CHECK_OK(ct_scope_end());
    CHECK(ct__live_tensors() == live); /* still owned and released by the scope */
}

TEST(test_scope_keep_of_same_reference) {
    long live = ct__live_tensors();
    CHECK_OK(ct_scope_begin());
    ct_tensor *x = small(1);
    CHECK_OK(ct_scope_begin());
    ct_tensor *y = ct_keep(ct_to(x, CT_CPU)); /* y is x: one more reference for the parent */
    CHECK(y == x);
    CHECK_OK(ct_scope_end());
    CHECK(holds(x, 1));
    ct_release(y); /* gives one back; the parent still holds the other */
    CHECK(holds(x, 1));
    CHECK_OK(ct_scope_end());
    CHECK(ct__live_tensors() == live);
}

TEST(test_scope_same_reference_across_nested_scopes) {
    long live = ct__live_tensors();
    CHECK_OK(ct_scope_begin());
    ct_tensor *x = small(2);
    CHECK_OK(ct_scope_begin());
    ct_tensor *y = ct_to(x, CT_CPU); /* held by the inner scope too */
    ct_release(y);                   /* the inner scope's reference, not the outer's */
    ct_tensor *z = ct_cast(x, CT_F32);
    CHECK(z == x);
    CHECK_OK(ct_scope_end()); /* releases z's reference */
    CHECK(holds(x, 2));
    CHECK(ct__live_tensors() == live + 1);
    CHECK_OK(ct_scope_end());
    CHECK(ct__live_tensors() == live);
}

TEST(test_scope_release_of_same_reference_to_outside_tensor) {
    long live = ct__live_tensors();
    ct_tensor *outside = small(5);
    CHECK_NOT_NULL(outside);
    CHECK_OK(ct_scope_begin());
    ct_tensor *same = ct_to(outside, CT_CPU);
    ct_release(same);                                    /* gives back the scope's reference only */
    ct_tensor *kept = ct_keep(ct_cast(outside, CT_F32)); /* handed to the caller */
    CHECK_OK(ct_scope_end());
    bool alive = kept == outside && ct__live_tensors() == live + 1 && holds(outside, 5);
    ct_release(kept);
    bool still_alive = holds(outside, 5);
    ct_release(outside);
    CHECK(alive && still_alive);
    CHECK(ct__live_tensors() == live);
}

/* Many new references to a tensor shared between threads, each thread in its own scope. */
static void *use_shared(void *arg) {
    ct_tensor *shared = arg;
    for (int i = 0; i < 2000; i++) {
        if (ct_scope_begin() != CT_OK) return NULL;
        ct_tensor *a = ct_to(shared, CT_CPU);
        ct_tensor *b = ct_cast(shared, CT_F32);
        ct_release(a);
        (void)b; /* released by the scope */
        ct_scope_end();
    }
    return NULL;
}

TEST(test_scope_shared_tensor_across_threads) {
    long live = ct__live_tensors();
    ct_tensor *shared = small(3);
    CHECK_NOT_NULL(shared);
    pthread_t threads[4];
    int created = 0;
    for (; created < 4; created++)
        if (pthread_create(&threads[created], NULL, use_shared, shared) != 0) break;
    for (int i = 0; i < created; i++) pthread_join(threads[i], NULL);
    bool alive = holds(shared, 3);
    ct_release(shared);
    CHECK(created == 4);
    CHECK(alive);
    CHECK(ct__live_tensors() == live);
}

static void *depth_in_thread(void *arg) {
    *(int *)arg = ct_scope_depth();
    return NULL;
}

TEST(test_scope_is_per_thread) {
    CHECK_OK(ct_scope_begin());
    int other_depth = -1;
    pthread_t thread;
    int created = pthread_create(&thread, NULL, depth_in_thread, &other_depth);
    if (created == 0) pthread_join(thread, NULL);
    CHECK_OK(ct_scope_end());
    CHECK(created == 0);
    CHECK(other_depth == 0);
}
