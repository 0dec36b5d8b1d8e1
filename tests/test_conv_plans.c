/* The CUDA plugin's remembered convolution plans (src/backend/cuda/cuda_conv_plans.c, plain
 * C, built into this test so that it runs without a GPU): a plan is found under the key of
 * exactly its geometry, and the oldest is forgotten once the table is full. */
#include "backend/cuda/cuda_conv_plans_impl.h"
#include "ct_test.h"

/* The first convolution of the small CNN, batch b. */
static ct__conv2d_args geometry(int64_t b) {
    return (ct__conv2d_args){.dtype = CT_F32,
                             .batch = b,
                             .in_channels = 1,
                             .in_h = 28,
                             .in_w = 28,
                             .out_channels = 16,
                             .kernel_h = 3,
                             .kernel_w = 3,
                             .out_h = 28,
                             .out_w = 28,
                             .stride = {1, 1},
                             .padding = {1, 1},
                             .dilation = {1, 1},
                             .groups = 1};
}

static ct_conv_plan plan_of(int algo, size_t bytes) {
    return (ct_conv_plan){
        .algo = {algo, algo + 1}, .math = {algo + 2, algo + 3}, .bytes = {bytes, bytes + 1}};
}

static bool same_plan(const ct_conv_plan *a, const ct_conv_plan *b) {
    return a->algo[0] == b->algo[0] && a->algo[1] == b->algo[1] && a->math[0] == b->math[0] &&
           a->math[1] == b->math[1] && a->bytes[0] == b->bytes[0] && a->bytes[1] == b->bytes[1];
}

TEST(test_conv_plan_found_under_its_own_geometry_only) {
    ct__conv2d_args a = geometry(1001);
    ct_conv_plan_key key, other;
    ct_cuda_conv_plan_key(0, &a, false, &key);
    ct_conv_plan found;
    CHECK(!ct_cuda_conv_plan_find(&key, &found));
    ct_conv_plan plan = plan_of(6, 4096);
    ct_cuda_conv_plan_remember(&key, &plan);
    CHECK(ct_cuda_conv_plan_find(&key, &found));
    CHECK(same_plan(&found, &plan));

    /* Each thing that decides a plan gives another key. Pointers and the workspace do not. */
    ct_cuda_conv_plan_key(1, &a, false, &other);
    CHECK(!ct_cuda_conv_plan_find(&other, &found));
    ct_cuda_conv_plan_key(0, &a, true, &other);
    CHECK(!ct_cuda_conv_plan_find(&other, &found));
    ct__conv2d_args changed[9] = {a, a, a, a, a, a, a, a, a};
    changed[0].dtype = CT_F64;
    changed[1].batch = 1002;
    changed[2].padding[1] = 0;
    changed[3].dilation[0] = 2;
    changed[4].groups = 2;
    changed[5].kernel_w = 5;
    changed[6].allow_tf32 = true;    /* TF32 allowed: other math types qualify */
    changed[7].deterministic = true; /* deterministic algorithms only */
    changed[8].channels_last = true; /* NHWC activations, a KRSC filter */
    for (int i = 0; i < 9; i++) {
        ct_cuda_conv_plan_key(0, &changed[i], false, &other);
        CHECK(!ct_cuda_conv_plan_find(&other, &found));
    }
    ct__conv2d_args moved = a;
    moved.x = (char *)&found;
    moved.workspace_size = 12345;
    ct_cuda_conv_plan_key(0, &moved, false, &other);
    CHECK(ct_cuda_conv_plan_find(&other, &found));
    CHECK(same_plan(&found, &plan));
}

TEST(test_conv_plan_remembered_again_replaces) {
    ct__conv2d_args a = geometry(2001);
    ct_conv_plan_key key;
    ct_cuda_conv_plan_key(0, &a, true, &key);
    ct_conv_plan first = plan_of(1, 10), second = plan_of(3, 20), found;
    ct_cuda_conv_plan_remember(&key, &first);
    ct_cuda_conv_plan_remember(&key, &second);
    CHECK(ct_cuda_conv_plan_find(&key, &found));
    CHECK(same_plan(&found, &second));
}

TEST(test_conv_plan_table_forgets_the_oldest_when_full) {
    /* One more geometry than the table holds, remembered in order: the first is forgotten,
     * the rest are all still found with their own plans. */
    enum { N = CT_CUDA_CONV_PLANS + 1 };
    ct_conv_plan_key keys[N];
    for (int i = 0; i < N; i++) {
        ct__conv2d_args a = geometry(3000 + i);
        ct_cuda_conv_plan_key(0, &a, false, &keys[i]);
        ct_conv_plan plan = plan_of(i, (size_t)i * 100);
        ct_cuda_conv_plan_remember(&keys[i], &plan);
    }
    ct_conv_plan found;
    CHECK(!ct_cuda_conv_plan_find(&keys[0], &found));
    for (int i = 1; i < N; i++) {
        ct_conv_plan plan = plan_of(i, (size_t)i * 100);
        CHECK(ct_cuda_conv_plan_find(&keys[i], &found));
        CHECK(same_plan(&found, &plan));
    }
}
