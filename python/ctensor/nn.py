"""ct.nn: modules as PyTorch's torch.nn, over the C library's layers (nn.h).

Module is subclassable: attributes that are modules, parameters (tensors that require grad,
made with ct.nn.Parameter) or buffers (register_buffer) are registered, and parameters(),
state_dict(), to(), train() ... walk them. The built-in layers (Linear, Conv2d, ...) hold a
handle on one C module, whose forward is one C call; their parameters are the C module's
own tensors, initialised in C as PyTorch initialises them. ct.nn.functional, ct.nn.init
and ct.nn.utils.clip_grad_norm_ are here too.
"""

import math
import sys
import types
from collections import OrderedDict

import ctensor as _ct
from ctensor import _ctensor
from ctensor.autograd import no_grad

Tensor = _ctensor.Tensor


def Parameter(data, requires_grad=True):
    """A leaf copy-free view of data that requires grad: what Module registers as a parameter."""
    p = data.detach() if data.requires_grad or not data.is_leaf else data
    return p.requires_grad_(requires_grad)


class Module:
    """Base of every module; subclass it, set layers in __init__, define forward."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError("call super().__init__() before setting attributes")
        for table in ("_parameters", "_modules"):
            d[table].pop(name, None)
        if isinstance(value, Module):
            d["_modules"][name] = value
        elif isinstance(value, Tensor) and value.requires_grad and value.is_leaf:
            d["_parameters"][name] = value
        elif name in d["_buffers"]:
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)
            return
        d.pop(name, None)

    def __getattr__(self, name):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' has no attribute '{name}'")

    def register_buffer(self, name, tensor):
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor

    def register_parameter(self, name, param):
        self._parameters[name] = param

    def add_module(self, name, module):
        self._modules[name] = module

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ---- walking the tree ----

    def _local_state(self):
        """[(name, tensor, is_buffer)] of this module's own parameters and buffers."""
        own = [(n, p, False) for n, p in self._parameters.items()]
        return own + [(n, b, True) for n, b in self._buffers.items() if b is not None]

    def named_modules(self, prefix=""):
        yield prefix, self
        for name, child in self._modules.items():
            yield from child.named_modules(prefix + ("." if prefix else "") + name)

    def modules(self):
        return (m for _, m in self.named_modules())

    def named_children(self):
        return iter(self._modules.items())

    def children(self):
        return iter(self._modules.values())

    def _named_state(self, prefix=""):
        for name, t, buffer in self._local_state():
            yield prefix + name, t, buffer
        for name, child in self._modules.items():
            yield from child._named_state(prefix + name + ".")

    def named_parameters(self, prefix="", recurse=True):
        if not recurse:
            return ((prefix + n, t) for n, t, b in self._local_state() if not b)
        start = prefix + "." if prefix else ""
        return ((n, t) for n, t, b in self._named_state(start) if not b)

    def parameters(self, recurse=True):
        return (t for _, t in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix=""):
        start = prefix + "." if prefix else ""
        return ((n, t) for n, t, b in self._named_state(start) if b)

    def buffers(self):
        return (t for _, t in self.named_buffers())

    def state_dict(self):
        """OrderedDict name -> tensor (the module's own tensors, not copies), PyTorch's names."""
        return OrderedDict((n, t) for n, t, _ in self._named_state())

    def load_state_dict(self, state_dict, strict=True):
        """Copy the entries into the module's tensors (any device; dtype converted).

        strict: every key must match (RuntimeError naming the missing and unexpected ones,
        nothing changed); shapes must match in any case. Returns (missing, unexpected)."""
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise RuntimeError(f"load_state_dict: missing keys {missing}, unexpected keys "
                               f"{unexpected}")
        for k, t in own.items():
            if k in state_dict and tuple(state_dict[k].shape) != tuple(t.shape):
                raise RuntimeError(f"load_state_dict: '{k}' has shape {tuple(state_dict[k].shape)}"
                                   f", the module's is {tuple(t.shape)}")
        with no_grad():
            for k, t in own.items():
                if k in state_dict:
                    src = _ct.asarray(state_dict[k])
                    t[...] = src.to(t.device).astype(t.dtype)
        return missing, unexpected

    # ---- modes and devices ----

    def train(self, mode=True):
        object.__setattr__(self, "training", bool(mode))
        self._set_mode(bool(mode))
        for child in self._modules.values():
            child.train(mode)
        return self

    def _set_mode(self, mode):
        pass

    def eval(self):
        return self.train(False)

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            p.grad = None

    def to(self, device):
        """Move every parameter and buffer to device (explicit transfers); returns self.

        As PyTorch's, parameters move in place: they stay the same objects (their gradients
        move with them), so an optimiser made before the move goes on working."""
        device = _ct.device(device) if device is not None else _ct.default_device()
        self._move(device)
        for child in self._modules.values():
            child.to(device)
        return self

    def _move(self, device):
        with no_grad():
            for p in self._parameters.values():
                p._move_to_(device)
            for name, b in list(self._buffers.items()):
                if b is not None:
                    self._buffers[name] = b.to(device)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, index=0):
        return self.to(f"cuda:{index}")

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"  ({n}): " + repr(m).replace("\n", "\n  ") for n, m in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ("\n" + "\n".join(lines) + "\n)" if lines else ")")


class _CLayer(Module):
    """A built-in layer: one C module (its parameters and buffers are the C module's)."""

    def __init__(self, kind, *args, device=None, extra=""):
        super().__init__()
        object.__setattr__(self, "_c", _ctensor._layer(kind, *args))
        object.__setattr__(self, "_extra", extra)
        if device is not None:
            self.to(device)

    def _local_state(self):
        return self._c.state()

    def __getattr__(self, name):
        for n, t, _ in self.__dict__["_c"].state():
            if n == name:
                return t
        return super().__getattr__(name)

    def forward(self, x):
        return self._c(x)

    def __call__(self, x):
        return self._c(x)

    def _set_mode(self, mode):
        self._c.train(mode)

    def _move(self, device):
        self._c.to(device)

    def extra_repr(self):
        return self._extra


def _square(value, what):
    if isinstance(value, (tuple, list)):
        if len(value) != 2 or value[0] != value[1]:
            raise _ct.UnsupportedError(f"{what} {tuple(value)}: the C layer takes one size for "
                                       "both axes (use ct.nn.functional for others)")
        return int(value[0])
    return int(value)


class Linear(_CLayer):
    def __init__(self, in_features, out_features, bias=True, device=None):
        super().__init__("linear", in_features, out_features, bias, device=device,
                         extra=f"in_features={in_features}, out_features={out_features}, "
                               f"bias={bias}")


class Conv2d(_CLayer):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, device=None):
        k = _square(kernel_size, "kernel_size")
        super().__init__("conv2d", in_channels, out_channels, k, _square(stride, "stride"),
                         _square(padding, "padding"), _square(dilation, "dilation"), groups,
                         bias, device=device,
                         extra=f"{in_channels}, {out_channels}, kernel_size=({k}, {k}), "
                               f"stride={stride}, padding={padding}")


class MaxPool2d(_CLayer):
    def __init__(self, kernel_size, stride=None, padding=0):
        k = _square(kernel_size, "kernel_size")
        s = k if stride is None else _square(stride, "stride")
        super().__init__("max_pool2d", k, s, _square(padding, "padding"),
                         extra=f"kernel_size={k}, stride={s}, padding={padding}")


class AvgPool2d(_CLayer):
    def __init__(self, kernel_size, stride=None, padding=0):
        k = _square(kernel_size, "kernel_size")
        s = k if stride is None else _square(stride, "stride")
        super().__init__("avg_pool2d", k, s, _square(padding, "padding"),
                         extra=f"kernel_size={k}, stride={s}, padding={padding}")


class AdaptiveAvgPool2d(_CLayer):
    def __init__(self, output_size):
        h, w = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * 2
        super().__init__("adaptive_avg_pool2d", h, w, extra=f"output_size={output_size}")


class BatchNorm2d(_CLayer):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, device=None):
        super().__init__("batch_norm2d", num_features, eps, momentum, device=device,
                         extra=f"{num_features}, eps={eps}, momentum={momentum}")


class LayerNorm(_CLayer):
    def __init__(self, normalized_shape, eps=1e-5, device=None):
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
        super().__init__("layer_norm", tuple(shape), eps, device=device,
                         extra=f"{tuple(shape)}, eps={eps}")


class Dropout(_CLayer):
    def __init__(self, p=0.5):
        super().__init__("dropout", p, extra=f"p={p}")


class Embedding(_CLayer):
    def __init__(self, num_embeddings, embedding_dim, device=None):
        super().__init__("embedding", num_embeddings, embedding_dim, device=device,
                         extra=f"{num_embeddings}, {embedding_dim}")


class Flatten(_CLayer):
    def __init__(self, start_dim=1, end_dim=-1):
        if (start_dim, end_dim) != (1, -1):
            raise _ct.UnsupportedError("Flatten: the C layer flattens every axis after the first")
        super().__init__("flatten", extra="start_dim=1, end_dim=-1")


class ReLU(_CLayer):
    def __init__(self, inplace=False):
        super().__init__("relu")


class GELU(_CLayer):
    def __init__(self, approximate="none"):
        if approximate != "none":
            raise _ct.UnsupportedError("GELU: only approximate='none' (the exact erf form)")
        super().__init__("gelu")


class Tanh(_CLayer):
    def __init__(self):
        super().__init__("tanh")


class Sigmoid(_CLayer):
    def __init__(self):
        super().__init__("sigmoid")


class Softmax(_CLayer):
    def __init__(self, dim):
        super().__init__("softmax", dim, extra=f"dim={dim}")


class LogSoftmax(_CLayer):
    def __init__(self, dim):
        super().__init__("log_softmax", dim, extra=f"dim={dim}")


class Sequential(Module):
    """Children run in order, named "0", "1", ... (or by an OrderedDict's keys)."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)
        object.__setattr__(self, "_chain", list(self._modules.values()))

    def add_module(self, name, module):
        super().add_module(name, module)
        object.__setattr__(self, "_chain", list(self._modules.values()))

    def forward(self, x):
        for m in self._chain:
            x = m(x)
        return x

    def __getitem__(self, i):
        return self._chain[i]

    def __len__(self):
        return len(self._chain)

    def __iter__(self):
        return iter(self._chain)


class ModuleList(Module):
    """A list of modules, registered as children "0", "1", ..."""

    def __init__(self, modules=()):
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


# ---- ct.nn.functional ----

functional = types.ModuleType(__name__ + ".functional", "ct.nn.functional: torch.nn.functional")
for _name in ("linear", "conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
              "batch_norm", "layer_norm", "dropout", "embedding", "softmax", "log_softmax",
              "cross_entropy", "mse_loss"):
    setattr(functional, _name, getattr(_ctensor, "_f_" + _name))
for _name in ("relu", "gelu", "tanh", "sigmoid"):
    setattr(functional, _name, getattr(_ctensor, _name))
sys.modules[functional.__name__] = functional

# ---- ct.nn.init: in place, with no recording, from the global Philox stream ----


def _fans(t):
    shape = tuple(t.shape)
    if len(shape) < 2:
        raise ValueError("fan in and fan out need a tensor of 2 or more dimensions")
    field = math.prod(shape[2:])
    return shape[1] * field, shape[0] * field


def _fill_from(t, values):
    with no_grad():
        t[...] = values.to(t.device).astype(t.dtype)
    return t


def _uniform_(t, a=0.0, b=1.0):
    return _fill_from(t, _ctensor.rand(*t.shape) * (b - a) + a)


def _normal_(t, mean=0.0, std=1.0):
    return _fill_from(t, _ctensor.randn(*t.shape) * std + mean)


def _constant_(t, val):
    return _fill_from(t, _ctensor.full(tuple(t.shape), float(val)))


def _gain(nonlinearity, a):
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        return math.sqrt(2.0 / (1 + a * a))
    if nonlinearity in ("linear", "sigmoid", "conv2d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    raise ValueError(f"unknown nonlinearity {nonlinearity!r}")


def _kaiming_uniform_(t, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    fan_in, fan_out = _fans(t)
    bound = _gain(nonlinearity, a) * math.sqrt(3.0 / (fan_in if mode == "fan_in" else fan_out))
    return _uniform_(t, -bound, bound)


def _xavier_uniform_(t, gain=1.0):
    fan_in, fan_out = _fans(t)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return _uniform_(t, -bound, bound)


init = types.ModuleType(__name__ + ".init", "ct.nn.init: torch.nn.init's in-place initialisers")
init.uniform_, init.normal_, init.constant_ = _uniform_, _normal_, _constant_
init.zeros_ = lambda t: _constant_(t, 0.0)
init.ones_ = lambda t: _constant_(t, 1.0)
init.kaiming_uniform_, init.xavier_uniform_ = _kaiming_uniform_, _xavier_uniform_
init.calculate_gain = lambda nonlinearity, param=None: _gain(nonlinearity, param or 0.01)
sys.modules[init.__name__] = init

# ---- ct.nn.utils ----


def _clip_grad_norm_(parameters, max_norm, norm_type=2.0):
    """Clip the gradients' joint norm in place (one C call); returns the norm before."""
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return _ctensor._clip_grad_norm(params, float(max_norm), float(norm_type))


utils = types.ModuleType(__name__ + ".utils", "ct.nn.utils")
utils.clip_grad_norm_ = _clip_grad_norm_
sys.modules[utils.__name__] = utils

# ---- ct.nn.parallel.DistributedDataParallel ----


class DistributedDataParallel(Module):
    """Data parallelism over ct.distributed's world, on the C library's ct_ddp: rank 0's
    parameters and buffers are broadcast at construction; a forward in training mode with
    grad enabled hands the next backward() to ct_ddp_backward, which all-reduces the
    gradients in buckets (bucket_cap_mb; at most 1 MiB for the first, as PyTorch's) as backward
    produces them, so the communication overlaps the rest of backward. After backward each
    gradient is the mean over the ranks, set rather than accumulated (zero the gradients
    each step, as the usual loop does). backward() must be a scalar loss's, without
    gradient= or retain_graph=."""

    def __init__(self, module, device_ids=None, bucket_cap_mb=25):
        super().__init__()
        from ctensor import distributed
        distributed.init()
        self.module = module
        state = list(module._named_state())
        cap = max(int(bucket_cap_mb * (1 << 20)), 1)
        object.__setattr__(self, "_c", _ctensor._ddp(
            [t for _, t, _ in state], [buffer for _, _, buffer in state], cap,
            min(cap, 1 << 20)))

    def forward(self, *args, **kwargs):
        if self.training and _ct.is_grad_enabled():
            self._c.arm()
        else:
            self._c.disarm()
        return self.module(*args, **kwargs)

    def ddp_stats(self):
        """The C ct_ddp's counts: steps, buckets, comm/hidden/wait/step seconds."""
        return self._c.stats()

    def state_dict(self):
        return self.module.state_dict()

    def load_state_dict(self, state_dict, strict=True):
        return self.module.load_state_dict(state_dict, strict)


parallel = types.ModuleType(__name__ + ".parallel", "ct.nn.parallel")
parallel.DistributedDataParallel = DistributedDataParallel
sys.modules[parallel.__name__] = parallel
