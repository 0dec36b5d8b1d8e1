/* The dispatch (src/backend/dispatch.c): every backend has every required kernel slot; an
 * optional slot a backend lacks is refused by name, naming the device and the backend; and a
 * read-back kernel's bytes, from its row, are counted off the CPU only. */
#include <string.h>

#include "backend/dispatch_impl.h"
#include "ct_test.h"

static const bool required[CT_SLOT_COUNT] = {
#define REQUIRED_SLOT_(name, need, sync, ret, parameters, arguments)                               \
    CT_KERNEL_IF_##need([CT_SLOT_##name] = true, )
    CT_KERNEL_SLOTS(REQUIRED_SLOT_)
#undef REQUIRED_SLOT_
};

DEVICE_TEST(test_dispatch_finds_every_required_slot) {
    for (int slot = 0; slot < CT_SLOT_COUNT; slot++) {
        if (!required[slot]) continue;
        int physical = -1;
        CHECK(ct__kernel_find(device, (ct__kernel_slot)slot, "test", &physical) != NULL);
        CHECK(physical == device.index);
    }
}

/* pool2d_native is optional: the CPU has it, CUDA (and the fake GPU, as CUDA) has not. */
DEVICE_TEST(test_dispatch_names_a_missing_optional_slot) {
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    CHECK(k != NULL);
    const ct__kernel_table *found =
        ct__kernel_find(device, CT_SLOT_pool2d_native, "ct_max_pool2d", &physical);
    if (k->pool2d_native) {
        CHECK(found == k);
        return;
    }
    CHECK(found == NULL);
    CHECK_ERROR(CT_ERR_UNSUPPORTED, "ct_max_pool2d: not supported on cuda:0 (the cuda backend "
                                    "has no pool2d_native kernel)");
}

static uint64_t implicit_read_bytes(void) {
    ct_transfer_statistics s;
    ct_transfer_stats(&s);
    return s.counters[CT_TRANSFER_D2H][1].bytes;
}

DEVICE_TEST(test_dispatch_counts_a_rows_readback) {
    ct_transfer_stats_reset();
    CHECK_OK(ct__kernel_readback(device, CT_SLOT_unary, "test"));
    CHECK(implicit_read_bytes() == 0);
    CHECK_OK(ct__kernel_readback(device, CT_SLOT_list_norm, "test"));
    CHECK(implicit_read_bytes() == (device.type == CT_DEVICE_CPU ? 0 : CT_READBACK_NORM));
    ct_transfer_stats_reset();
    CHECK_OK(ct__kernel_readback(device, CT_SLOT_binary, "test"));
    CHECK(implicit_read_bytes() == (device.type == CT_DEVICE_CPU ? 0 : CT_READBACK_RAISED_FLAG));
}
