/* Residual networks for CIFAR-sized images: the basic block (conv3x3-BN-ReLU-conv3x3-BN plus
 * a shortcut, then ReLU) and the two ResNets built from it, with the children's names of
 * PyTorch's usual CIFAR ResNet code, so that their state dicts load there. */
#include <stdlib.h>
#include <string.h>

#include "nn/module_impl.h"
#include "ops/nn_impl.h"
#include "ops/op_impl.h"

static const char *const block_names[] = {"conv1", "bn1", "conv2", "bn2", "shortcut"};
static const char *const resnet3_names[] = {"conv1", "bn1", "layer1", "layer2", "layer3", "linear"};
static const char *const resnet4_names[] = {"conv1",  "bn1",    "layer1", "layer2",
                                            "layer3", "layer4", "linear"};

#define MAX_STAGES 4

/* child(x), consuming x; NULL in, NULL out (the first error kept). */
static ct_tensor *through(ct_module *child, ct_tensor *x) {
    if (!x) return NULL;
    ct_tensor *y = ct_module_forward(child, x);
    ct_release(x);
    return y;
}

/* relu(child(x)), consuming x: one fused op when child is a batch norm. */
static ct_tensor *through_relu(ct_module *child, ct_tensor *x) {
    if (!x) return NULL;
    ct_tensor *y = ct__module_forward_relu(child, x);
    ct_release(x);
    return y;
}

/* relu(x), consuming x. */
static ct_tensor *relu_of(ct_tensor *x) {
    ct_tensor *y = ct_relu(x);
    ct_release(x);
    return y;
}

/* relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)); the shortcut is the identity when
 * the block has no "shortcut" child. bn1 and its ReLU are one op (ct_batch_norm_relu). */
static ct_tensor *basic_block_forward(ct_module *m, const ct_tensor *x) {
    ct_module **c = m->children;
    ct_tensor *h = through_relu(c[1], through(c[0], ct__new_ref(x)));
    h = through(c[3], through(c[2], h));
    ct_tensor *shortcut = m->nchildren > 4 ? through(c[4], ct__new_ref(x)) : ct__new_ref(x);
    ct_tensor *sum = h && shortcut ? ct_add(h, shortcut) : NULL;
    ct_release(h);
    ct_release(shortcut);
    return relu_of(sum);
}

static bool positive(const char *op, const char *what, int64_t value) {
    if (value > 0) return true;
    ct__error(CT_ERR_INVALID_ARG, "%s: %s is %lld; it must be positive", op, what,
              (long long)value);
    return false;
}

ct_module *ct_nn_basic_block(int64_t in_channels, int64_t channels, int64_t stride) {
    const char *op = "ct_nn_basic_block";
    if (!positive(op, "in_channels", in_channels) || !positive(op, "channels", channels) ||
        !positive(op, "stride", stride))
        return NULL;
    ct_conv2d_options first = {.stride = {stride, stride}, .padding = {1, 1}};
    ct_conv2d_options second = {.padding = {1, 1}};
    bool project = stride != 1 || in_channels != channels;
    ct_module *children[5] = {
        ct_nn_conv2d(in_channels, channels, 3, &first, false), ct_nn_batch_norm2d(channels, 0, 0),
        ct_nn_conv2d(channels, channels, 3, &second, false), ct_nn_batch_norm2d(channels, 0, 0),
        project
            ? ct_nn_sequential(
                  2, (ct_module *[]){ct_nn_conv2d(in_channels, channels, 1,
                                                  &(ct_conv2d_options){.stride = {stride, stride}},
                                                  false),
                                     ct_nn_batch_norm2d(channels, 0, 0)})
            : NULL};
    ct_module *m = ct__module_container("BasicBlock", basic_block_forward, project ? 5 : 4,
                                        children, block_names);
    if (m) m->sizes[0] = in_channels, m->sizes[1] = channels, m->sizes[2] = stride, m->nsizes = 3;
    return m;
}

/* x in the layout the network's activations take: channels-last where the device convolves
 * channels-last natively (the CPU's oneDNN NHWC kernels, which need no reorder of the
 * activations; cuDNN's NHWC kernels on CUDA), unless CT_CHANNELS_LAST=0 in the environment (read at
 * each call, so that one process can compare the two); else x as it is. The layers keep the layout
 * they are given. */
static ct_tensor *stem_input(const ct_module *stem, const ct_tensor *x) {
    const char *env = getenv("CT_CHANNELS_LAST");
    bool wanted = !(env && strcmp(env, "0") == 0);
    if (wanted && stem->ntensors > 0 && x->ndim == 4 &&
        ct__conv2d_channels_last_native(x, stem->tensors[0].tensor, &stem->conv))
        return ct_contiguous_format(x, CT_FORMAT_CHANNELS_LAST);
    return ct__new_ref(x);
}

/* relu(bn1(conv1(x))) (bn1 and the ReLU one op), the stages, global average pooling, the
 * linear classifier. */
static ct_tensor *resnet_forward(ct_module *m, const ct_tensor *x) {
    ct_module **c = m->children;
    ct_tensor *h = through_relu(c[1], through(c[0], stem_input(c[0], x)));
    for (int i = 2; i < m->nchildren - 1; i++) h = through(c[i], h);
    ct_tensor *pooled = h ? ct_adaptive_avg_pool2d(h, 1, 1) : NULL;
    ct_release(h);
    ct_tensor *features = pooled ? ct_flatten(pooled, 1, -1) : NULL;
    ct_release(pooled);
    return through(c[m->nchildren - 1], features);
}

/* A stage: `blocks` basic blocks of `channels`, the first with `stride`. */
static ct_module *stage(int64_t in_channels, int64_t channels, int64_t stride, int blocks) {
    ct_module *children[8];
    for (int i = 0; i < blocks; i++)
        children[i] = ct_nn_basic_block(i ? channels : in_channels, channels, i ? 1 : stride);
    return ct_nn_sequential(blocks, children);
}

/* The CIFAR ResNet of `stages` stages of widths[i] channels and blocks[i] blocks each, after
 * a 3x3 stem of widths[0] channels; every stage after the first halves the image. */
static ct_module *resnet(const char *op, int64_t in_channels, int64_t classes, int stages,
                         const int64_t *widths, const int *blocks) {
    if (!positive(op, "in_channels", in_channels) || !positive(op, "classes", classes)) return NULL;
    ct_module *children[MAX_STAGES + 3];
    int n = 0;
    children[n++] =
        ct_nn_conv2d(in_channels, widths[0], 3, &(ct_conv2d_options){.padding = {1, 1}}, false);
    children[n++] = ct_nn_batch_norm2d(widths[0], 0, 0);
    for (int s = 0; s < stages; s++)
        children[n++] = stage(s ? widths[s - 1] : widths[0], widths[s], s ? 2 : 1, blocks[s]);
    children[n++] = ct_nn_linear(widths[stages - 1], classes, true);
    ct_module *m = ct__module_container("ResNet", resnet_forward, n, children,
                                        stages == 3 ? resnet3_names : resnet4_names);
    if (m) m->sizes[0] = in_channels, m->sizes[1] = classes, m->nsizes = 2;
    return m;
}

ct_module *ct_nn_resnet20(int64_t in_channels, int64_t classes) {
    return resnet("ct_nn_resnet20", in_channels, classes, 3, (const int64_t[]){16, 32, 64},
                  (const int[]){3, 3, 3});
}

ct_module *ct_nn_resnet18(int64_t in_channels, int64_t classes) {
    return resnet("ct_nn_resnet18", in_channels, classes, 4, (const int64_t[]){64, 128, 256, 512},
                  (const int[]){2, 2, 2, 2});
}
