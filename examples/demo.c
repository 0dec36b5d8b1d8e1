/* Placeholder demo until the ops land. */
#include <stdio.h>
#include "ctensor/ctensor.h"
int main(void) {
    printf("ctensor %s; CUDA available: %s\n", ct_version(), ct_cuda_is_available() ? "yes" : ct_cuda_unavailable_reason());
    return 0;
}
