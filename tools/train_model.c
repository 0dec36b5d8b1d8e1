/* The models `ctensor train` knows: the MLP 784-256-128-10, the small CNN of the issue
 * (conv 1->32 3x3 pad 1, ReLU, maxpool 2, conv 32->64, ReLU, maxpool 2, linear 3136->128,
 * ReLU, linear 128->10), ResNet-20 and the CIFAR ResNet-18 (nn.h); their optimisers and lr
 * schedules. */
#include <string.h>

#include "cli_impl.h"
#include "train_impl.h"

ct_module *train_model(const char *name, int64_t in_channels, int64_t classes) {
    if (strcmp(name, "resnet20") == 0) return ct_nn_resnet20(in_channels, classes);
    if (strcmp(name, "resnet18") == 0) return ct_nn_resnet18(in_channels, classes);
    if (strcmp(name, "mlp") == 0)
        return ct_nn_sequential(6, (ct_module *[]){ct_nn_flatten(), ct_nn_linear(784, 256, true),
                                                   ct_nn_relu(), ct_nn_linear(256, 128, true),
                                                   ct_nn_relu(), ct_nn_linear(128, classes, true)});
    ct_conv2d_options pad = {.padding = {1, 1}};
    ct_pool2d_options pool = {.kernel = {2, 2}};
    return ct_nn_sequential(10, (ct_module *[]){ct_nn_conv2d(in_channels, 32, 3, &pad, true),
                                                ct_nn_relu(), ct_nn_max_pool2d(&pool),
                                                ct_nn_conv2d(32, 64, 3, &pad, true), ct_nn_relu(),
                                                ct_nn_max_pool2d(&pool), ct_nn_flatten(),
                                                ct_nn_linear(3136, 128, true), ct_nn_relu(),
                                                ct_nn_linear(128, classes, true)});
}

static ct_optimizer *make(const train_options *o, int n, ct_tensor **params) {
    if (strcmp(o->optimizer, "sgd") == 0)
        return ct_sgd(n, params,
                      &(ct_sgd_options){.lr = o->lr,
                                        .momentum = o->momentum,
                                        .weight_decay = o->weight_decay > 0 ? o->weight_decay : 0,
                                        .nesterov = o->nesterov});
    bool decoupled = strcmp(o->optimizer, "adamw") == 0;
    ct_adam_options adam = decoupled ? ct_adamw_defaults() : ct_adam_defaults();
    adam.lr = o->lr;
    if (o->weight_decay >= 0) adam.weight_decay = o->weight_decay; /* < 0: the default */
    return decoupled ? ct_adamw(n, params, &adam) : ct_adam(n, params, &adam);
}

ct_optimizer *train_optimizer(const train_options *o, int n, ct_tensor **params) {
    ct_optimizer *opt = make(o, n, params);
    /* PyTorch's SGD([{"params": decay}, {"params": no_decay, "weight_decay": 0}]) with the
     * usual split: parameters of rank <= 1 (batch norm's weights, every bias) in no_decay. */
    for (int i = 0; opt && o->no_decay_norm_bias && i < n; i++) {
        if (ct_ndim(params[i]) > 1) continue;
        if (ct_optimizer_set_weight_decay(opt, i, 0.0) != CT_OK) {
            ct_optimizer_free(opt);
            return NULL;
        }
    }
    return opt;
}

static ct_status failed_schedule(void) {
    ct_status status = ct_last_status();
    ct_cli_fail("--schedule: %s", ct_last_error());
    return status;
}

ct_status train_schedule(const train_options *o, ct_optimizer *opt, int64_t steps_per_epoch,
                         ct_lr_schedule **out) {
    *out = NULL;
    if (strcmp(o->schedule, "none") == 0) return CT_OK;
    int64_t total = steps_per_epoch * o->epochs, warmup = steps_per_epoch * o->warmup_epochs;
    if (total > INT32_MAX || total < 1) {
        ct_cli_fail("--schedule %s: %lld steps in all; a schedule counts up to %d", o->schedule,
                    (long long)total, INT32_MAX);
        return CT_ERR_INVALID_ARG;
    }
    if (strcmp(o->schedule, "onecycle") == 0) {
        *out = ct_lr_schedule_onecycle(
            opt, &(ct_onecycle_options){.max_lr = o->lr, .total_steps = (int)total});
        return *out ? CT_OK : failed_schedule();
    }
    /* cosine: from lr to 0 over the steps after the warm-up, which rises linearly from
     * lr / warmup steps (PyTorch's LinearLR with start_factor 1 / warmup steps). */
    int64_t after = total - warmup;
    *out = ct_lr_schedule_cosine(opt, after > 0 ? (int)after : 1, 0.0);
    if (*out && warmup > 0 &&
        ct_lr_schedule_warmup(*out, (int)warmup, 1.0 / (double)warmup) != CT_OK) {
        ct_lr_schedule_free(*out);
        *out = NULL;
    }
    return *out ? CT_OK : failed_schedule();
}
