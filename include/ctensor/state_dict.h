/* ctensor — state dicts (ordered name -> tensor maps with string metadata) and safetensors
 * files.
 *
 * A ct_state_dict keeps its entries in insertion order (replacing a name keeps its place),
 * holds one reference on each tensor, and looks names up through a hash index. Names,
 * metadata keys and values are NUL-terminated UTF-8 strings; "__metadata__" is reserved by
 * the file format and cannot name a tensor. A state dict is not thread-safe against
 * concurrent changes; concurrent reads are fine.
 *
 * safetensors (the Hugging Face format): an 8-byte little-endian header size N, N bytes of
 * UTF-8 JSON ({"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 * "__metadata__": {"key": "value"}}), then the tensors' bytes, contiguous, little-endian, in
 * C order. dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL. Files written here load
 * with the Python package (safetensors.numpy, safetensors.torch) and the other way round. */
#ifndef CTENSOR_STATE_DICT_H
#define CTENSOR_STATE_DICT_H

#include "ctensor/device.h"
#include "ctensor/export.h"
#include "ctensor/status.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_state_dict ct_state_dict;

/* An empty state dict; NULL with CT_ERR_OUT_OF_MEMORY. */
CT_API ct_state_dict *ct_state_dict_new(void);
/* Releases the dict's references and its strings. NULL is ignored. */
CT_API void ct_state_dict_free(ct_state_dict *sd);

/* Map name to t, keeping a reference on t (the caller keeps its own). An existing name is
 * replaced in place. CT_ERR_INVALID_ARG for a NULL argument, a name that is not valid UTF-8,
 * or "__metadata__"; CT_ERR_OUT_OF_MEMORY. */
CT_API ct_status ct_state_dict_set(ct_state_dict *sd, const char *name, const ct_tensor *t);
/* The tensor named name, borrowed (valid while the dict holds it); NULL with
 * CT_ERR_INVALID_ARG naming the key when there is none. */
CT_API ct_tensor *ct_state_dict_get(const ct_state_dict *sd, const char *name);
/* Number of tensors (0 for NULL). */
CT_API int ct_state_dict_size(const ct_state_dict *sd);
/* The i-th name and tensor in insertion order, borrowed; NULL with CT_ERR_INVALID_ARG when i
 * is out of range. */
CT_API const char *ct_state_dict_name_at(const ct_state_dict *sd, int i);
CT_API ct_tensor *ct_state_dict_tensor_at(const ct_state_dict *sd, int i);

/* Set a metadata string (copied; an existing key is replaced in place). CT_ERR_INVALID_ARG for
 * NULL arguments or strings that are not valid UTF-8; CT_ERR_OUT_OF_MEMORY. */
CT_API ct_status ct_state_dict_set_metadata(ct_state_dict *sd, const char *key, const char *value);
/* The value for key, borrowed; NULL when there is none (no error is set: absence is normal). */
CT_API const char *ct_state_dict_get_metadata(const ct_state_dict *sd, const char *key);
/* Number of metadata entries, and the i-th key in insertion order (NULL with
 * CT_ERR_INVALID_ARG when out of range). */
CT_API int ct_state_dict_metadata_size(const ct_state_dict *sd);
CT_API const char *ct_state_dict_metadata_key_at(const ct_state_dict *sd, int i);

/* Write sd to path as safetensors. Tensors are laid out as the Python package lays them out:
 * by element size, largest first (so each tensor is aligned to its element size in the file),
 * then by name (byte order); the header is padded with spaces to a multiple of 8 bytes.
 * Device tensors are copied to the host with ct_copy_to_host (explicit transfers). The write is
 * atomic: a temporary file in the same directory is written, flushed, synced and renamed over
 * path, then the directory is synced; on failure the temporary file is removed and an existing
 * file at path is left as it was (except when only the final directory sync fails: the new
 * file is then in place, but the rename may not survive a crash). path is a new file or a
 * regular file; a symbolic link is written through (the file it leads to is replaced, the link
 * kept); a device, FIFO, socket or folder, or a link to one or to nothing, is refused with
 * CT_ERR_IO and left as it is. The temporary file has no name until it is complete (where the
 * file system has O_TMPFILE), so a process killed while writing leaves nothing; else it is
 * "<path>.tmp.<pid>.<n>", and each save removes such files that no live process holds (their
 * writer holds a lock on them) from the folder. CT_ERR_IO with the path and the system's
 * reason; CT_ERR_OUT_OF_MEMORY; CT_ERR_INVALID_ARG for NULL arguments; errors of
 * ct_copy_to_host. */
CT_API ct_status ct_safetensors_save(const char *path, const ct_state_dict *sd);

/* Read a safetensors file into a new state dict (free with ct_state_dict_free) whose tensors
 * are on device (CT_DEFAULT: the default placement), in the header's order. The file is checked
 * strictly: the header size (at most 100 MB and within the file), the JSON (no trailing
 * garbage, valid UTF-8, no duplicate names or fields, no unknown fields), each tensor's dtype,
 * rank (<= CT_MAX_DIMS), shape and byte range (which must match numel * element size), and the
 * buffer (the ranges must cover it exactly, without overlaps or holes, as the format requires).
 * NULL with CT_ERR_FORMAT naming the file, the problem and the byte offset where useful;
 * CT_ERR_IO when the file cannot be read or is not a regular file (a FIFO is refused at once,
 * never waited on); errors of ct_from_data. */
CT_API ct_state_dict *ct_safetensors_load(const char *path, ct_device device);

#ifdef __cplusplus
}
#endif
#endif
