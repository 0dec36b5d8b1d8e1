/* `--dataset synthetic`: random images and labels made on the training device, so that a run
 * times the model alone (no file, no loader, no copy to the device). */
#include "train_data_impl.h"

/* The synthetic data's own seed, drawn from the run's: the model's weights are then the same
 * as on a real dataset with the same --seed. */
#define SYNTHETIC_SEED_MIX 0x5851f42d4c957f2dULL

/* n images of data's shape, standard normal, and n labels uniform in 0..9, on device. */
static ct_status make_split(const train_data *data, int64_t n, ct_device device, ct_tensor **images,
                            ct_tensor **labels) {
    int64_t shape[4] = {n, data->channels, data->height, data->width};
    *images = ct_randn(4, shape, CT_F32, device);
    ct_tensor *u = *images ? ct_rand(1, &n, CT_F64, device) : NULL;
    ct_tensor *scaled = ct_mul_scalar(u, 10.0); /* [0, 10): truncation gives 0..9 */
    *labels = ct_cast(scaled, CT_I64);
    ct_release(u);
    ct_release(scaled);
    return *labels ? CT_OK : ct_last_status();
}

ct_status train_make_synthetic(const train_options *o, train_data *data) {
    if (!data->on_device) return CT_OK;
    int64_t train = o->synthetic_size ? o->synthetic_size : TRAIN_SYNTHETIC_TRAIN;
    int64_t test = o->synthetic_size ? (o->synthetic_size + 4) / 5 : TRAIN_SYNTHETIC_TEST;
    ct_manual_seed(o->seed ^ SYNTHETIC_SEED_MIX);
    ct_status status = make_split(data, train, o->device, &data->train_images, &data->train_labels);
    if (status == CT_OK)
        status = make_split(data, test, o->device, &data->test_images, &data->test_labels);
    return status;
}
