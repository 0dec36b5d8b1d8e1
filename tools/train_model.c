/* The models `ctensor train` knows: the MLP 784-256-128-10 and the small CNN of the issue
 * (conv 1->32 3x3 pad 1, ReLU, maxpool 2, conv 32->64, ReLU, maxpool 2, linear 3136->128,
 * ReLU, linear 128->10), and its optimisers. */
#include <string.h>

#include "train_impl.h"

ct_module *train_model(const char *name) {
    if (strcmp(name, "mlp") == 0)
        return ct_nn_sequential(6, (ct_module *[]){ct_nn_flatten(), ct_nn_linear(784, 256, true),
                                                   ct_nn_relu(), ct_nn_linear(256, 128, true),
                                                   ct_nn_relu(), ct_nn_linear(128, 10, true)});
    ct_conv2d_options pad = {.padding = {1, 1}};
    ct_pool2d_options pool = {.kernel = {2, 2}};
    return ct_nn_sequential(10, (ct_module *[]){ct_nn_conv2d(1, 32, 3, &pad, true), ct_nn_relu(),
                                                ct_nn_max_pool2d(&pool),
                                                ct_nn_conv2d(32, 64, 3, &pad, true), ct_nn_relu(),
                                                ct_nn_max_pool2d(&pool), ct_nn_flatten(),
                                                ct_nn_linear(3136, 128, true), ct_nn_relu(),
                                                ct_nn_linear(128, 10, true)});
}

ct_optimizer *train_optimizer(const train_options *o, int n, ct_tensor **params) {
    if (strcmp(o->optimizer, "sgd") == 0)
        return ct_sgd(n, params, &(ct_sgd_options){.lr = o->lr, .momentum = 0.9});
    ct_adam_options adam =
        strcmp(o->optimizer, "adamw") == 0 ? ct_adamw_defaults() : ct_adam_defaults();
    adam.lr = o->lr;
    return strcmp(o->optimizer, "adamw") == 0 ? ct_adamw(n, params, &adam)
                                              : ct_adam(n, params, &adam);
}
