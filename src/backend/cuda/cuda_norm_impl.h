/* The CUDA launchers of the nn family (softmax, cross-entropy, batch and layer norm, dropout,
 * index_add): the CUDA backend's kernel-table entries for backend/norm_args_impl.h, defined
 * in cuda_softmax.cu, cuda_loss.cu, cuda_norm.cu, cuda_dropout.cu and cuda_index_add.cu. */
#ifndef CT_CUDA_NORM_IMPL_H
#define CT_CUDA_NORM_IMPL_H

#include "backend/cuda/cuda_impl.h"
#include "backend/norm_args_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

ct_status ct_cuda_softmax(int device, const ct__softmax_args *args);
ct_status ct_cuda_softmax_backward(int device, const ct__softmax_args *args);
ct_status ct_cuda_cross_entropy(int device, const ct__cross_entropy_args *args);
ct_status ct_cuda_cross_entropy_backward(int device, const ct__cross_entropy_args *args);
ct_status ct_cuda_batch_norm(int device, const ct__batch_norm_args *args);
ct_status ct_cuda_batch_norm_backward(int device, const ct__batch_norm_args *args);
ct_status ct_cuda_layer_norm(int device, const ct__layer_norm_args *args);
ct_status ct_cuda_layer_norm_backward(int device, const ct__layer_norm_args *args);
ct_status ct_cuda_dropout(int device, const ct__dropout_args *args);
ct_status ct_cuda_index_add(int device, const ct__index_add_args *args);

#ifdef __cplusplus
}
#endif
#endif
