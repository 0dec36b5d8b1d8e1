/* ct_isin (torch.isin, numpy.isin), composed of the core's ops: test_elements flattened and
 * sorted, each element's first place among them found by ct_searchsorted, and the value there
 * compared with the element (ct_eq: NaN equals nothing, -0.0 equals 0.0). No kernel of its
 * own, so every device has it. */
#include "ops/op_impl.h"

/* t on device as a 1-D tensor of dtype (a 0-d CPU t joins a device op as a scalar: moved). */
static ct_tensor *flat_on(const ct_tensor *t, ct_dtype dtype, ct_device device) {
    ct_tensor *moved = ct_device_equal(ct_device_of(t), device) ? ct__new_ref(t) : ct_to(t, device);
    ct_tensor *cast = moved ? ct_cast(moved, dtype) : NULL;
    ct_tensor *flat = cast ? ct_reshape(cast, 1, (int64_t[]){-1}) : NULL;
    ct_release(moved);
    ct_release(cast);
    return flat;
}

/* Whether each of the 1-D values is among the m > 0 sorted 1-D keys (both of one dtype). */
static ct_tensor *found_in(const ct_tensor *keys, const ct_tensor *values, int64_t m) {
    ct_tensor *place = ct_searchsorted(keys, values, false);
    ct_tensor *inside = place ? ct_clamp(place, 0.0, (double)(m - 1)) : NULL;
    ct_tensor *there = inside ? ct_gather(keys, 0, inside) : NULL;
    ct_tensor *out = there ? ct_eq(there, values) : NULL;
    ct_release(place);
    ct_release(inside);
    ct_release(there);
    return out;
}

ct_tensor *ct_isin(const ct_tensor *elements, const ct_tensor *test_elements, bool assume_unique,
                   bool invert) {
    const char *op = "ct_isin";
    const ct_tensor *args[2] = {elements, test_elements};
    ct_device device;
    (void)assume_unique; /* the search finds a value among repeats as among unique keys */
    if (!ct__check_args_complex(op, 2, args, &device)) return NULL;
    if (ct__is_complex(elements->dtype) || ct__is_complex(test_elements->dtype))
        return ct__fail(CT_ERR_DTYPE,
                        "%s: elements are %s and test_elements %s; complex numbers have no "
                        "order to search by (compare ct_real and ct_imag apart)",
                        op, ct_dtype_name(elements->dtype), ct_dtype_name(test_elements->dtype));
    ct_dtype dtype = ct_promote_types(elements->dtype, test_elements->dtype);
    int64_t m = ct_numel(test_elements);
    ct_tensor *found;
    if (m == 0 || ct_numel(elements) == 0) {
        found = ct__full_on(device, 1, (int64_t[]){ct_numel(elements)}, 0.0, CT_BOOL);
    } else {
        ct_tensor *values = flat_on(elements, dtype, device);
        ct_tensor *tests = flat_on(test_elements, dtype, device);
        ct_tensor *keys = tests ? ct_sort(tests, 0, false) : NULL;
        found = values && keys ? found_in(keys, values, m) : NULL;
        ct_release(values);
        ct_release(tests);
        ct_release(keys);
    }
    ct_tensor *shaped = found ? ct_reshape(found, elements->ndim, elements->shape) : NULL;
    ct_release(found);
    if (!invert || !shaped) return shaped;
    ct_tensor *out = ct_logical_not(shaped);
    ct_release(shaped);
    return out;
}
