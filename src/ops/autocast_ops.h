/* Autocast's policy for the ops outside op_list.h's tables (whose rows carry their own
 * autocast column): one row per op that PyTorch's autocast lists name, or that ctensor adds
 * to them. X(name, NAME, autocast), the column as in op_list.h: LOWER, F32, PROMOTE. An op
 * of no table and no row here runs in the dtypes it is given (AS_IS). */
#ifndef CT_OPS_AUTOCAST_OPS_H
#define CT_OPS_AUTOCAST_OPS_H

#define CT_AUTOCAST_OPS(X)                                                                         \
    /* PyTorch's lower_precision_fp, on CUDA and on the CPU */                                     \
    X(matmul, MATMUL, LOWER)                                                                       \
    X(linear, LINEAR, LOWER)                                                                       \
    X(conv2d, CONV2D, LOWER)                                                                       \
    X(scaled_dot_product_attention, SCALED_DOT_PRODUCT_ATTENTION, LOWER)                           \
    /* PyTorch's fp32: softmax, log_softmax, layer_norm, cumsum, cumprod on CUDA; mse_loss on      \
     * both; cross_entropy_loss on the CPU (on CUDA its parts, log_softmax and nll_loss) */        \
    X(softmax, SOFTMAX, F32)                                                                       \
    X(log_softmax, LOG_SOFTMAX, F32)                                                               \
    X(layer_norm, LAYER_NORM, F32)                                                                 \
    X(mse_loss, MSE_LOSS, F32)                                                                     \
    X(cross_entropy, CROSS_ENTROPY, F32)                                                           \
    /* cumsum and cumprod; called with an explicit dtype they run in that dtype, as PyTorch's */   \
    X(cumulative_sum, CUMULATIVE_SUM, F32)                                                         \
    X(cumulative_prod, CUMULATIVE_PROD, F32)                                                       \
    /* ctensor's additions to the f32 list: sums (as sum), and batch norm's statistics */          \
    X(var, VAR, F32)                                                                               \
    X(std, STD, F32)                                                                               \
    X(batch_norm, BATCH_NORM, F32)                                                                 \
    /* PyTorch's promote: tensordot, scatter_add on CUDA; cat, stack on the CPU (ctensor's         \
     * concat and stack promote their inputs by themselves, in a region or not) */                 \
    X(tensordot, TENSORDOT, PROMOTE)                                                               \
    X(scatter_add, SCATTER_ADD, PROMOTE)                                                           \
    X(concat, CONCAT, PROMOTE)                                                                     \
    X(stack, STACK, PROMOTE)

#endif
