/* Checkpoints: save -> load gives identical outputs (batch norm's running statistics
 * included); a wrong model or a damaged file is refused with nothing changed; and the
 * files go both ways with PyTorch (tests/torch_checkpoint.py). */
#include <stdlib.h>
#include <unistd.h>

#include "ct_ref.h"
#include "safetensors_test.h"

#ifndef CT_SOURCE_DIR
#error "tests/CMakeLists.txt defines CT_SOURCE_DIR for this test"
#endif

static ct_module *small_cnn(uint64_t seed) {
    ct_manual_seed(seed);
    ct_conv2d_options pad = {.padding = {1, 1}};
    ct_pool2d_options pool = {.kernel = {2, 2}};
    return ct_nn_sequential(
        8, (ct_module *[]){ct_nn_conv2d(1, 4, 3, &pad, true), ct_nn_batch_norm2d(4, 0, 0),
                           ct_nn_relu(), ct_nn_max_pool2d(&pool), ct_nn_flatten(),
                           ct_nn_linear(16 * 4, 5, true), ct_nn_tanh(), ct_nn_linear(5, 3, true)});
}

static ct_tensor *input(void) {
    double values[2 * 64];
    ref_random(values, 2 * 64, 17, -1, 1);
    return ref_tensor(values, 4, (int64_t[]){2, 1, 8, 8}, CT_F32, CT_CPU);
}

/* eval-mode output of m on x */
static ct_tensor *eval_output(ct_module *m, const ct_tensor *x) {
    ct_module_eval(m);
    ct_no_grad_push();
    ct_tensor *y = ct_module_forward(m, x);
    ct_no_grad_pop();
    return y;
}

static bool same_values(const ct_tensor *a, const ct_tensor *b) {
    double *va = ref_read(a), *vb = ref_read(b);
    bool same = va && vb && ct_numel(a) == ct_numel(b);
    for (int64_t i = 0; same && i < ct_numel(a); i++) same = va[i] == vb[i];
    free(va);
    free(vb);
    return same;
}

TEST(test_nn_checkpoint_round_trip_identical_outputs) {
    char dir[256];
    CHECK(st_make_dir(dir));
    ct_module *a = small_cnn(1), *b = small_cnn(2);
    ct_tensor *x = input();
    CHECK(a && b && x);
    ct_tensor *trained = ct_module_forward(a, x); /* training mode: running stats move */
    ct_release(trained);
    CHECK_OK(ct_module_save(a, st_path(dir, "a.safetensors", 0)));
    CHECK_OK(ct_module_load(b, st_path(dir, "a.safetensors", 0)));
    ct_tensor *ya = eval_output(a, x), *yb = eval_output(b, x);
    CHECK(same_values(ya, yb));
    ct_release(ya);
    ct_release(yb);
    ct_release(x);
    ct_module_free(a);
    ct_module_free(b);
    st_remove_dir(dir);
}

TEST(test_nn_checkpoint_refuses_other_models_and_damaged_files) {
    char dir[256];
    CHECK(st_make_dir(dir));
    ct_module *cnn = small_cnn(1);
    ct_module *mlp = ct_nn_sequential(1, (ct_module *[]){ct_nn_linear(3, 2, true)});
    CHECK_OK(ct_module_save(mlp, st_path(dir, "mlp.safetensors", 0)));
    ct_tensor *x = input(), *before = eval_output(cnn, x);
    CHECK(ct_module_load(cnn, st_path(dir, "mlp.safetensors", 0)) == CT_ERR_FORMAT);
    CHECK_ERROR(CT_ERR_FORMAT, "\"0.weight\"");
    /* a damaged file: cut in half */
    CHECK_OK(ct_module_save(cnn, st_path(dir, "cnn.safetensors", 1)));
    CHECK(truncate(st_path(dir, "cnn.safetensors", 1), 200) == 0);
    CHECK(ct_module_load(cnn, st_path(dir, "cnn.safetensors", 1)) == CT_ERR_FORMAT);
    ct_clear_error();
    ct_tensor *after = eval_output(cnn, x);
    CHECK(same_values(before, after));
    ct_release(before);
    ct_release(after);
    ct_release(x);
    ct_module_free(cnn);
    ct_module_free(mlp);
    st_remove_dir(dir);
}

/* ctensor -> PyTorch -> ctensor: the same outputs on both sides (to float32 rounding). */
TEST(test_nn_checkpoint_pytorch_both_ways) {
    const char *python = CT_SOURCE_DIR "/.venv/bin/python3";
    if (access(python, X_OK) != 0) {
        ct_test_fail(__FILE__, __LINE__, "%s is missing: run `make deps`", python);
        return;
    }
    char dir[256];
    CHECK(st_make_dir(dir));
    ct_module *m = small_cnn(3);
    ct_tensor *x = input();
    ct_tensor *trained = ct_module_forward(m, x);
    ct_release(trained);
    ct_tensor *y = eval_output(m, x);
    ct_state_dict *io = ct_state_dict_new();
    CHECK_OK(ct_state_dict_set(io, "input", x));
    CHECK_OK(ct_state_dict_set(io, "output", y));
    CHECK_OK(ct_safetensors_save(st_path(dir, "ctensor_io.safetensors", 0), io));
    CHECK_OK(ct_module_save(m, st_path(dir, "ctensor_model.safetensors", 1)));
    char command[1024];
    snprintf(command, sizeof command, "'%s' '%s/tests/torch_checkpoint.py' '%s'", python,
             CT_SOURCE_DIR, dir);
    int rc = system(command);
    ct_state_dict *theirs =
        rc == 0 ? ct_safetensors_load(st_path(dir, "torch_io.safetensors", 0), CT_CPU) : NULL;
    ct_status loaded =
        rc == 0 ? ct_module_load(m, st_path(dir, "torch_model.safetensors", 1)) : CT_ERR_STATE;
    ct_tensor *ours = loaded == CT_OK ? eval_output(m, x) : NULL;
    double *a = ours ? ref_read(ours) : NULL;
    double *b = theirs ? ref_read(ct_state_dict_get(theirs, "output")) : NULL;
    bool close = a && b;
    for (int64_t i = 0; close && i < ct_numel(ours); i++) close = fabs(a[i] - b[i]) < 1e-5;
    free(a);
    free(b);
    ct_release(ours);
    ct_state_dict_free(theirs);
    ct_state_dict_free(io);
    ct_release(y);
    ct_release(x);
    ct_module_free(m);
    st_remove_dir(dir);
    CHECK(rc == 0);
    CHECK_OK(loaded);
    CHECK(close);
}
