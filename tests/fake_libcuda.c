/* A test-only libcuda.so.1 holding only cuDriverGetVersion, which reports CUDA 11.4: with
 * fake_cuda_plugin.c it makes the "driver too old" case of `ctensor doctor` on a machine
 * without a GPU. Built into its own folder, reached only through LD_LIBRARY_PATH. */
__attribute__((visibility("default"))) int cuDriverGetVersion(int *version);

int cuDriverGetVersion(int *version) {
    *version = 11040;
    return 0;
}
