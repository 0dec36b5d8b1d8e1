/* libctensor.so loaded with dlopen, as Python's ctypes or an extension module loads it:
 * the load must succeed (a library whose thread-locals need static TLS space fails here with
 * "cannot allocate memory in static TLS block"), and an op must run through it, also on a
 * second thread (each thread has its own last error and scope). Not linked with ctensor:
 * every call goes through dlsym. Usage: dlopen_check PATH/libctensor.so */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include <ctensor/ctensor.h>

typedef struct api {
    ct_tensor *(*ones)(int, const int64_t *, ct_dtype, ct_device);
    ct_tensor *(*add)(const ct_tensor *, const ct_tensor *);
    ct_status (*item)(const ct_tensor *, double *);
    void (*release)(ct_tensor *);
    ct_status (*last_status)(void);
} api;

/* 1 + 1 through the library; 0 when it gave 2. */
static void *one_plus_one(void *arg) {
    const api *f = arg;
    ct_tensor *a = f->ones(0, NULL, CT_F32, CT_CPU);
    ct_tensor *sum = f->add(a, a);
    double value = 0;
    int failed = f->item(sum, &value) != CT_OK || value != 2.0 || f->last_status() != CT_OK;
    f->release(sum);
    f->release(a);
    return failed ? (void *)1 : NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: dlopen_check PATH/libctensor.so\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("FAIL test_dlopen_loads: %s\n", dlerror());
        return 1;
    }
    api f;
    *(void **)&f.ones = dlsym(lib, "ct_ones");
    *(void **)&f.add = dlsym(lib, "ct_add");
    *(void **)&f.item = dlsym(lib, "ct_item");
    *(void **)&f.release = dlsym(lib, "ct_release");
    *(void **)&f.last_status = dlsym(lib, "ct_last_status");
    if (!f.ones || !f.add || !f.item || !f.release || !f.last_status) {
        printf("FAIL test_dlopen_loads: a public function is missing: %s\n", dlerror());
        return 1;
    }
    printf("PASS test_dlopen_loads\n");
    pthread_t thread;
    void *thread_failed = (void *)1;
    int failed = one_plus_one(&f) != NULL;
    if (pthread_create(&thread, NULL, one_plus_one, &f) == 0) pthread_join(thread, &thread_failed);
    failed |= thread_failed != NULL;
    printf("%s test_dlopen_runs_an_op_on_two_threads\n", failed ? "FAIL" : "PASS");
    /* No dlclose, as Python never unloads a library: the pools' cached memory stays reachable
     * through the library's globals until exit. */
    printf("%d passed, %d failed, 0 skipped\n", 2 - failed, failed);
    return failed;
}
