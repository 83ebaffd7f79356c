"""Read PyTorch's legacy (pre-zip) ``torch.save`` files into numpy arrays, without torch.

Only the handful of globals that a plain state dict needs are allowed, so loading a weight file
cannot run arbitrary code the way ``pickle.load`` would.
"""

from __future__ import annotations

import collections
import os
import pickle
import struct

import numpy as np

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001

_STORAGE_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


class _StorageType:
    """Stands in for a ``torch.*Storage`` class: only its element type matters here."""

    def __init__(self, name: str):
        self.name = name
        self.dtype = np.dtype(_STORAGE_DTYPES[name]).newbyteorder("<")


class _Storage:
    """A storage whose bytes come later in the file; filled in by ``load_legacy_state_dict``."""

    def __init__(self, dtype: np.dtype, numel: int):
        self.dtype = dtype
        self.numel = numel
        self.data: np.ndarray | None = None


class _TensorRef:
    """A tensor view on a storage, materialised once the storage bytes have been read."""

    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)

    def to_numpy(self) -> np.ndarray:
        data = self.storage.data
        if not self.size:
            return data[self.offset].copy()
        item = data.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(
            data[self.offset :], shape=self.size, strides=[s * item for s in self.stride]
        )
        return np.ascontiguousarray(view).astype(data.dtype.newbyteorder("="), copy=False)


def _rebuild_tensor_v2(
    storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None
):
    return _TensorRef(storage, storage_offset, size, stride)


class _RestrictedUnpickler(pickle.Unpickler):
    """Unpickler that resolves only the globals a state dict needs."""

    def __init__(self, file, storages: dict):
        super().__init__(file)
        self._storages = storages

    def find_class(self, module, name):
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor_v2
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        raise pickle.UnpicklingError(f"weight file refers to {module}.{name}, which is not allowed")

    def persistent_load(self, saved_id):
        kind = saved_id[0]
        if kind != "storage":
            raise pickle.UnpicklingError(f"unsupported persistent object {kind!r} in weight file")
        storage_type, key, _location, numel, view_metadata = saved_id[1:]
        if view_metadata is not None:
            raise pickle.UnpicklingError("storage views (very old torch files) are not supported")
        if key not in self._storages:
            self._storages[key] = _Storage(storage_type.dtype, int(numel))
        return self._storages[key]


def _plain_load(file):
    return _RestrictedUnpickler(file, {}).load()


def load_legacy_state_dict(path) -> collections.OrderedDict[str, np.ndarray]:
    """Load a legacy-format ``torch.save`` state dict as an ordered dict of numpy arrays.

    Raises ValueError if the file is not in the legacy format or holds anything besides tensors.
    """
    with open(os.fspath(path), "rb") as file:
        try:
            magic = _plain_load(file)
            protocol = _plain_load(file)
        except pickle.UnpicklingError as exc:
            raise ValueError(f"{path}: not a legacy torch weight file ({exc})") from None
        if magic != LEGACY_MAGIC or protocol != LEGACY_PROTOCOL:
            raise ValueError(
                f"{path}: not a legacy torch weight file (magic {magic!r}, protocol {protocol!r})"
            )
        sys_info = _plain_load(file)
        if not sys_info.get("little_endian", True):
            raise ValueError(f"{path}: big-endian weight files are not supported")
        storages: dict = {}
        result = _RestrictedUnpickler(file, storages).load()
        keys = _plain_load(file)
        for key in keys:
            storage = storages[key]
            (numel,) = struct.unpack("<q", file.read(8))
            if numel != storage.numel:
                raise ValueError(f"{path}: storage {key} holds {numel} elements, expected {storage.numel}")
            raw = file.read(numel * storage.dtype.itemsize)
            if len(raw) != numel * storage.dtype.itemsize:
                raise ValueError(f"{path}: file is truncated")
            storage.data = np.frombuffer(raw, dtype=storage.dtype)
    if not isinstance(result, dict):
        raise ValueError(f"{path}: expected a state dict, found {type(result).__name__}")
    state = collections.OrderedDict()
    for name, value in result.items():
        if not isinstance(value, _TensorRef):
            raise ValueError(f"{path}: entry {name!r} is not a tensor")
        state[name] = value.to_numpy()
    return state
