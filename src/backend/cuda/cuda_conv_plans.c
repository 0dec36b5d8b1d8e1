/* The remembered convolution plans (cuda_conv_plans_impl.h): a small table searched in
 * order, the oldest entry replaced when it is full. */
#include <pthread.h>
#include <string.h>

#include "backend/cuda/cuda_conv_plans_impl.h"

typedef struct plan_entry {
    ct_conv_plan_key key;
    ct_conv_plan plan;
} plan_entry;

static pthread_mutex_t plans_lock = PTHREAD_MUTEX_INITIALIZER;
static plan_entry plans[CT_CUDA_CONV_PLANS];
static int plans_used;   /* entries filled, from the start */
static int plans_oldest; /* the next entry to replace once all are filled */

void ct_cuda_conv_plan_key(int device, const ct__conv2d_args *args, bool backward,
                           ct_conv_plan_key *key) {
    *key = (ct_conv_plan_key){.device = device,
                              .dtype = args->dtype,
                              .backward = backward,
                              .allow_tf32 = args->allow_tf32,
                              .deterministic = args->deterministic,
                              .channels_last = args->channels_last,
                              .batch = args->batch,
                              .in_channels = args->in_channels,
                              .in_h = args->in_h,
                              .in_w = args->in_w,
                              .out_channels = args->out_channels,
                              .kernel_h = args->kernel_h,
                              .kernel_w = args->kernel_w,
                              .out_h = args->out_h,
                              .out_w = args->out_w,
                              .stride = {args->stride[0], args->stride[1]},
                              .padding = {args->padding[0], args->padding[1]},
                              .dilation = {args->dilation[0], args->dilation[1]},
                              .groups = args->groups};
}

/* The entry holding key, or -1 (lock held). */
static int entry_of(const ct_conv_plan_key *key) {
    for (int i = 0; i < plans_used; i++)
        if (memcmp(&plans[i].key, key, sizeof *key) == 0) return i;
    return -1;
}

bool ct_cuda_conv_plan_find(const ct_conv_plan_key *key, ct_conv_plan *plan) {
    pthread_mutex_lock(&plans_lock);
    int i = entry_of(key);
    if (i >= 0) *plan = plans[i].plan;
    pthread_mutex_unlock(&plans_lock);
    return i >= 0;
}

void ct_cuda_conv_plan_remember(const ct_conv_plan_key *key, const ct_conv_plan *plan) {
    pthread_mutex_lock(&plans_lock);
    int i = entry_of(key);
    if (i < 0 && plans_used < CT_CUDA_CONV_PLANS) i = plans_used++;
    if (i < 0) {
        i = plans_oldest;
        plans_oldest = (plans_oldest + 1) % CT_CUDA_CONV_PLANS;
    }
    plans[i] = (plan_entry){.key = *key, .plan = *plan};
    pthread_mutex_unlock(&plans_lock);
}
