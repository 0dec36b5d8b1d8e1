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
        object.__setattr__(self, "_spec", (kind, args))  # for DataParallel's replicas
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
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate is 'none' or 'tanh', not {approximate!r}")
        if approximate == "none":
            super().__init__("gelu")
        else:
            super().__init__("gelu_tanh", extra="approximate='tanh'")


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


def _checked_module(module, where):
    if not isinstance(module, Module):
        raise TypeError(f"{where}: {type(module).__name__} is not a ct.nn.Module")
    return module


class ModuleList(Module):
    """A list of modules, registered as children "0", "1", ... (torch.nn.ModuleList): their
    parameters are the container's, as Sequential's are; it has no forward of its own."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _renumber(self, modules):
        self._modules.clear()
        for i, m in enumerate(modules):
            self._modules[str(i)] = _checked_module(m, "ModuleList")

    def append(self, module):
        self.add_module(str(len(self._modules)), _checked_module(module, "ModuleList.append"))
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        items = list(self._modules.values())
        items.insert(index, module)
        self._renumber(items)

    def pop(self, index=-1):
        items = list(self._modules.values())
        out = items.pop(index)
        self._renumber(items)
        return out

    def __getitem__(self, i):
        items = list(self._modules.values())
        return ModuleList(items[i]) if isinstance(i, slice) else items[i]

    def __setitem__(self, i, module):
        items = list(self._modules.values())
        items[i] = module
        self._renumber(items)

    def __delitem__(self, i):
        items = list(self._modules.values())
        del items[i]
        self._renumber(items)

    def __iadd__(self, modules):
        return self.extend(modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules.values()))


class ModuleDict(Module):
    """An ordered dict of modules registered under their keys (torch.nn.ModuleDict): their
    parameters are the container's, named "key.weight", ...; it has no forward of its own."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __setitem__(self, key, module):
        if not isinstance(key, str) or "." in key or not key:
            raise KeyError(f"ModuleDict: key {key!r} must be a non-empty str without '.'")
        self.add_module(key, _checked_module(module, f"ModuleDict[{key!r}]"))

    def __getitem__(self, key):
        return self._modules[key]

    def __delitem__(self, key):
        del self._modules[key]

    def __contains__(self, key):
        return key in self._modules

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules))

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def update(self, modules):
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, module in pairs:
            self[key] = module

    def pop(self, key):
        return self._modules.pop(key)

    def clear(self):
        self._modules.clear()


class Identity(Module):
    """Its input, unchanged (torch.nn.Identity; constructor arguments are ignored, as there)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


# ---- loss modules: torch.nn's, with reduction= ('mean', 'sum' or 'none') ----


def _reduced(loss, reduction):
    if reduction == "mean":
        return _ct.mean(loss)
    if reduction == "sum":
        return _ct.sum(loss)
    return loss


class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{type(self).__name__}: reduction must be 'mean', 'sum' or "
                             f"'none', got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self):
        return f"reduction={self.reduction!r}" if self.reduction != "mean" else ""


class CrossEntropyLoss(_Loss):
    """Cross-entropy of logits (N, C[, ...]) against class indices, as
    torch.nn.CrossEntropyLoss: ignore_index, label_smoothing and reduction as there (one C
    op: F.cross_entropy); with class weights (weight=, C values) it is NLLLoss's weighted
    mean over log_softmax, which takes no label_smoothing yet."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        if weight is not None and label_smoothing:
            raise _ct.UnsupportedError("CrossEntropyLoss: weight= with label_smoothing= is not "
                                       "supported yet; use one of them")
        self.register_buffer("weight", weight)
        self.ignore_index, self.label_smoothing = int(ignore_index), float(label_smoothing)

    def forward(self, input, target):
        if self.weight is not None:
            return _nll_loss(_ctensor._f_log_softmax(input, dim=1), target, self.weight,
                             self.ignore_index, self.reduction)
        return _ctensor._f_cross_entropy(input, target, reduction=self.reduction,
                                         label_smoothing=self.label_smoothing,
                                         ignore_index=self.ignore_index)


def _nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """-weight[t] * input[n, t, ...] (t = target[n, ...]) of log-probabilities (N, C[, d...])
    and targets (N[, d...]); targets equal to ignore_index add nothing, and the mean divides
    by the weights of the targets kept (their count without weight=), as PyTorch's."""
    if input.ndim < 2 or tuple(target.shape) != tuple(input.shape[:1] + input.shape[2:]):
        raise ValueError(f"NLLLoss: input {tuple(input.shape)} and target "
                         f"{tuple(target.shape)}: expected (N, C, d...) and (N, d...)")
    target = _ct.astype(target, _ct.int64)
    kept = target != ignore_index
    safe = _ct.where(kept, target, 0)
    picked = _ct.squeeze(_ct.take_along_axis(input, _ct.expand_dims(safe, axis=1), axis=1),
                         axis=1)
    scale = _ct.astype(kept, input.dtype)
    if weight is not None:
        if tuple(weight.shape) != (input.shape[1],):
            raise ValueError(f"NLLLoss: weight {tuple(weight.shape)} must hold one value per "
                             f"class ({input.shape[1]},)")
        scale = scale * _ct.reshape(_ct.take(weight, _ct.reshape(safe, (-1,))),
                                    tuple(safe.shape))
    loss = -picked * scale
    if reduction == "mean":
        return _ct.sum(loss) / _ct.sum(scale)
    return _reduced(loss, reduction)


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities (after LogSoftmax), as torch.nn.NLLLoss:
    class weights (weight=), ignore_index and reduction as there."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = int(ignore_index)

    def forward(self, input, target):
        return _nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class MSELoss(_Loss):
    """Mean squared error, as torch.nn.MSELoss (one C op: F.mse_loss)."""

    def forward(self, input, target):
        return _ctensor._f_mse_loss(input, target, reduction=self.reduction)


def _l1_loss(input, target, reduction="mean"):
    return _reduced(_ct.abs(input - target), reduction)


class L1Loss(_Loss):
    """Mean absolute error, as torch.nn.L1Loss."""

    def forward(self, input, target):
        return _l1_loss(input, target, self.reduction)


def _smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    if beta < 0:
        raise ValueError(f"SmoothL1Loss: beta must be >= 0, got {beta}")
    d = _ct.abs(input - target)
    if beta == 0:
        return _reduced(d, reduction)
    return _reduced(_ct.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


class SmoothL1Loss(_Loss):
    """Huber-like loss, as torch.nn.SmoothL1Loss: 0.5 d^2 / beta below beta, d - beta / 2
    above (beta 0: L1)."""

    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction)
        self.beta = float(beta)

    def forward(self, input, target):
        return _smooth_l1_loss(input, target, self.reduction, self.beta)


def _bce_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """log(1 + e^-x) as logaddexp(0, -x): no overflow for any x, and its gradient is
    sigmoid(x) - 1 at x = 0 too."""
    softplus_neg = _ct.logaddexp(0.0, -input)
    if pos_weight is None:
        loss = (1 - target) * input + softplus_neg
    else:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduced(loss, reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of logits, as torch.nn.BCEWithLogitsLoss (weight and pos_weight
    broadcast as there), computed without overflow for large logits."""

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return _bce_with_logits(input, target, self.weight, self.reduction, self.pos_weight)


# ---- ct.nn.functional ----

functional = types.ModuleType(__name__ + ".functional", "ct.nn.functional: torch.nn.functional")
for _name in ("linear", "conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
              "batch_norm", "layer_norm", "dropout", "embedding", "softmax", "log_softmax",
              "cross_entropy", "mse_loss", "scaled_dot_product_attention"):
    setattr(functional, _name, getattr(_ctensor, "_f_" + _name))
functional.nll_loss = _nll_loss
functional.l1_loss = _l1_loss
functional.smooth_l1_loss = _smooth_l1_loss
functional.binary_cross_entropy_with_logits = _bce_with_logits
for _name in ("relu", "tanh", "sigmoid"):
    setattr(functional, _name, getattr(_ctensor, _name))


def _gelu(input, approximate="none"):
    """torch.nn.functional.gelu: the erf form, or GPT-2's tanh form with approximate='tanh'."""
    if approximate == "none":
        return _ctensor.gelu(input)
    if approximate == "tanh":
        return _ctensor.gelu_tanh(input)
    raise ValueError(f"gelu: approximate is 'none' or 'tanh', not {approximate!r}")


functional.gelu = _gelu
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


_LINEAR_GAIN = ("linear", "identity", "sigmoid", "conv1d", "conv2d", "conv3d",
                "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def _gain(nonlinearity, param=None):
    """torch.nn.init.calculate_gain: the recommended gain for a nonlinearity; param is
    leaky_relu's negative slope (0.01 when None)."""
    if nonlinearity in _LINEAR_GAIN:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "selu":
        return 3.0 / 4
    if nonlinearity == "leaky_relu":
        if param is None:
            param = 0.01
        elif isinstance(param, bool) or not isinstance(param, (int, float)):
            raise ValueError(f"negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + param * param))
    raise ValueError(f"unknown nonlinearity {nonlinearity!r}")


def _fan(t, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode {mode!r} is not 'fan_in' or 'fan_out'")
    fan_in, fan_out = _fans(t)
    return fan_in if mode == "fan_in" else fan_out


def _kaiming_uniform_(t, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    bound = _gain(nonlinearity, a) * math.sqrt(3.0 / _fan(t, mode))
    return _uniform_(t, -bound, bound)


def _kaiming_normal_(t, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    return _normal_(t, 0.0, _gain(nonlinearity, a) / math.sqrt(_fan(t, mode)))


def _xavier_uniform_(t, gain=1.0):
    fan_in, fan_out = _fans(t)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return _uniform_(t, -bound, bound)


def _xavier_normal_(t, gain=1.0):
    fan_in, fan_out = _fans(t)
    return _normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def _erfinv(y):
    """erfinv of a float64 tensor with elements in (-1, 1): M. Giles' single-precision
    approximation ("Approximating the erfinv function", 2010), then two Newton steps on erf,
    which take it to float64's precision."""
    w = -_ctensor.log((1.0 - y) * (1.0 + y))
    central, tail = w - 2.5, _ctensor.sqrt(w) - 3.0
    p_central, p_tail = 2.81022636e-08, -0.000200214257
    for c_central, c_tail in ((3.43273939e-07, 0.000100950558), (-3.5233877e-06, 0.00134934322),
                              (-4.39150654e-06, -0.00367342844), (0.00021858087, 0.00573950773),
                              (-0.00125372503, -0.0076224613), (-0.00417768164, 0.00943887047),
                              (0.246640727, 1.00167406), (1.50140941, 2.83297682)):
        p_central, p_tail = p_central * central + c_central, p_tail * tail + c_tail
    x = _ctensor.where(w < 5.0, p_central, p_tail) * y
    for _ in range(2):
        x = x - (_ctensor.erf(x) - y) / (2 / math.sqrt(math.pi) * _ctensor.exp(-x * x))
    return x


def _trunc_normal_(t, mean=0.0, std=1.0, a=-2.0, b=2.0):
    """Normal(mean, std) truncated to [a, b], by the inverse of the normal CDF (as PyTorch):
    u uniform between the CDF at a and at b, then mean + std * sqrt(2) erfinv(2u - 1)."""
    if not a < b:
        raise ValueError(f"a ({a}) must be less than b ({b})")
    low, high = (math.erf((v - mean) / (std * math.sqrt(2))) for v in (a, b))
    u = _ctensor.rand(*t.shape, dtype=_ctensor.float64) * (high - low) + low
    u = _ctensor.clip(u, -1.0 + 2.0 ** -52, 1.0 - 2.0 ** -52)
    values = _ctensor.clip(_erfinv(u) * (std * math.sqrt(2.0)) + mean, a, b)
    return _fill_from(t, values)


def _orthogonal_(t, gain=1.0):
    """A (semi-)orthogonal matrix from the QR factorization of a normal one, the signs of R's
    diagonal put on Q's columns (as PyTorch); tensors of more than 2 dimensions as
    (shape[0], the rest)."""
    if t.ndim < 2:
        raise ValueError("orthogonal_ needs a tensor of 2 or more dimensions")
    rows = t.shape[0]
    cols = math.prod(t.shape) // rows if rows else 0
    if rows == 0 or cols == 0:
        return t
    flat = _ctensor.randn(max(rows, cols), min(rows, cols), dtype=_ctensor.float64)
    q, r = _ct.linalg.qr(flat)
    q = q * _ctensor.sign(_ct.linalg.diagonal(r))
    if rows < cols:
        q = _ct.linalg.matrix_transpose(q)
    return _fill_from(t, (q * gain).reshape(tuple(t.shape)))


def _eye_(t):
    if t.ndim != 2:
        raise ValueError("eye_ needs a 2-dimensional tensor")
    return _fill_from(t, _ctensor.eye(t.shape[0], t.shape[1]))


def _dirac_(t, groups=1):
    """The identity of a convolution: each of the groups' out-channels passes its in-channel
    through the kernel's centre (3, 4 or 5 dimensions)."""
    if t.ndim not in (3, 4, 5):
        raise ValueError("dirac_ needs a tensor of 3, 4 or 5 dimensions")
    shape = tuple(t.shape)
    if shape[0] % groups:
        raise ValueError(f"the out-channels ({shape[0]}) are not divisible by groups ({groups})")
    per_group = shape[0] // groups
    values = [0.0] * math.prod(shape)
    centre = tuple(d // 2 for d in shape[2:])
    for g in range(groups):
        for c in range(min(per_group, shape[1])):
            index = (g * per_group + c, c) + centre
            flat = 0
            for i, d in zip(index, shape):
                flat = flat * d + i
            values[flat] = 1.0
    return _fill_from(t, _ctensor.asarray(values, dtype=_ctensor.float64).reshape(shape))


init = types.ModuleType(__name__ + ".init", "ct.nn.init: torch.nn.init's in-place initialisers")
init.uniform_, init.normal_, init.constant_ = _uniform_, _normal_, _constant_
init.zeros_ = lambda t: _constant_(t, 0.0)
init.ones_ = lambda t: _constant_(t, 1.0)
init.kaiming_uniform_, init.kaiming_normal_ = _kaiming_uniform_, _kaiming_normal_
init.xavier_uniform_, init.xavier_normal_ = _xavier_uniform_, _xavier_normal_
init.trunc_normal_, init.orthogonal_ = _trunc_normal_, _orthogonal_
init.eye_, init.dirac_ = _eye_, _dirac_
init.calculate_gain = _gain
init._calculate_fan_in_and_fan_out = _fans
sys.modules[init.__name__] = init

# ---- nn.MultiheadAttention ----


def _additive_mask(mask, dtype, what):
    """A float mask to add to the scores: a bool mask's True (masked out, MultiheadAttention's
    convention) becomes -inf, a float mask is kept."""
    if mask.dtype == _ct.bool:
        return _ct.zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(
            mask, float("-inf"))
    if not mask.is_floating_point():
        raise TypeError(f"MultiheadAttention: {what} must be bool or floating, not {mask.dtype}")
    return mask.to(dtype) if mask.dtype != dtype else mask


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: projections of query, key and value into num_heads heads,
    scaled dot-product attention in each, and an output projection. Parameters and their
    names and initialisation are PyTorch's (in_proj_weight and in_proj_bias, or q_proj_weight,
    k_proj_weight and v_proj_weight when kdim or vdim differ from embed_dim; out_proj).
    forward returns (output, weights): the weights averaged over the heads (or per head with
    average_attn_weights=False) when need_weights, else None. Without need_weights the heads
    run through ct.nn.functional.scaled_dot_product_attention, whose memory is linear in the
    sequence; with it the weights are computed in full, as PyTorch does. Masks follow
    MultiheadAttention's convention (a bool True hides the key), not that of
    scaled_dot_product_attention. add_bias_kv and add_zero_attn are not supported."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None):
        super().__init__()
        if add_bias_kv or add_zero_attn:
            raise _ct.UnsupportedError("MultiheadAttention: add_bias_kv and add_zero_attn are "
                                       "not supported")
        if num_heads <= 0 or embed_dim % num_heads != 0:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible "
                             f"by num_heads ({num_heads})")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, float(dropout)
        self.batch_first, self.head_dim = batch_first, embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        e = embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(_ct.zeros((3 * e, e), device=device))
            _xavier_uniform_(self.in_proj_weight)
        else:
            self.q_proj_weight = Parameter(_ct.zeros((e, e), device=device))
            self.k_proj_weight = Parameter(_ct.zeros((e, self.kdim), device=device))
            self.v_proj_weight = Parameter(_ct.zeros((e, self.vdim), device=device))
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                _xavier_uniform_(w)
        if bias:
            self.in_proj_bias = Parameter(_ct.zeros((3 * e,), device=device))
        self.out_proj = Linear(e, e, bias=bias, device=device)
        if bias:
            _constant_(self.out_proj.bias, 0.0)
        object.__setattr__(self, "_bias", bias)

    def extra_repr(self):
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"

    def _projections(self):
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            weights = (w[0:e], w[e:2 * e], w[2 * e:3 * e])
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        if not self._bias:
            return [(wi, None) for wi in weights]
        b = self.in_proj_bias
        return list(zip(weights, (b[0:e], b[e:2 * e], b[2 * e:3 * e])))

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        batched = query.dim() == 3
        if not batched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        n, length, e = query.shape
        s, h, hd = key.shape[1], self.num_heads, self.head_dim
        if is_causal and attn_mask is None:
            raise RuntimeError("MultiheadAttention: need attn_mask if specifying the is_causal "
                               "hint (as PyTorch)")
        # PyTorch's rule: the causal hint replaces attn_mask only when nothing else masks and
        # no weights are asked for.
        causal = is_causal and key_padding_mask is None and not need_weights
        heads = []
        for x, (w, b) in zip((query, key, value), self._projections()):
            y = functional.linear(x, w, b)
            heads.append(y.reshape(n, y.shape[1], h, hd).transpose(1, 2))
        q, k, v = heads
        mask = None
        if attn_mask is not None and not causal:
            mask = _additive_mask(attn_mask, q.dtype, "attn_mask")
            if mask.dim() == 3:
                mask = mask.reshape(n, h, length, s)
        if key_padding_mask is not None:
            if key_padding_mask.dtype == _ct.bool and mask is None and not need_weights:
                mask = key_padding_mask.logical_not().reshape(n, 1, 1, s)
            else:
                pad = _additive_mask(key_padding_mask, q.dtype, "key_padding_mask")
                pad = pad.reshape(n, 1, 1, s)
                mask = pad if mask is None else mask + pad
        p = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            scores = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            if mask is not None:
                scores = scores + mask
            weights = scores.softmax(-1)
            if p > 0:
                weights = functional.dropout(weights, p)
            out = weights.matmul(v)
            if average_attn_weights:
                weights = weights.mean(1)
            if not batched:
                weights = weights.squeeze(0)
        else:
            out = functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p,
                                                          is_causal=causal)
        out = self.out_proj(out.transpose(1, 2).reshape(n, length, e))
        if not batched:
            out = out.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        return out, weights


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


# ---- ct.nn.DataParallel ----


def _replicate(module, device):
    """A copy of module on device: its own parameters and buffers (copies of module's, with
    module's requires_grad), its own children, its other attributes shared."""
    copy = object.__new__(type(module))
    copy.__dict__.update(module.__dict__)
    d = copy.__dict__
    if isinstance(module, _CLayer):
        kind, args = module._spec
        d["_c"] = _ctensor._layer(kind, *args)
        d["_c"].to(device)
        d["_c"].train(module.training)
        with no_grad():
            for (_, mine, _), (_, theirs, _) in zip(d["_c"].state(), module._c.state()):
                mine[...] = theirs.to(device)
    d["_parameters"] = OrderedDict(
        (n, p.detach().to(device).requires_grad_(p.requires_grad))
        for n, p in module._parameters.items())
    d["_buffers"] = OrderedDict((n, None if b is None else b.to(device))
                                for n, b in module._buffers.items())
    d["_modules"] = OrderedDict((n, _replicate(m, device)) for n, m in module._modules.items())
    if "_chain" in d:
        d["_chain"] = list(d["_modules"].values())
    return copy


def _scatter(obj, start, stop, device):
    """obj's rows start:stop on device (tensors along their first axis, in lists, tuples and
    dicts); other values as they are."""
    if isinstance(obj, Tensor):
        return obj[start:stop].to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_scatter(v, start, stop, device) for v in obj)
    if isinstance(obj, dict):
        return {k: _scatter(v, start, stop, device) for k, v in obj.items()}
    return obj


def _gather(outputs, device):
    """The replicas' outputs joined on device along the first axis (0-d tensors stacked)."""
    first = outputs[0]
    if isinstance(first, Tensor):
        moved = [o.to(device) for o in outputs]
        return _ct.stack(moved) if first.ndim == 0 else _ct.concat(moved, axis=0)
    if isinstance(first, (list, tuple)):
        return type(first)(_gather([o[i] for o in outputs], device) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _gather([o[k] for o in outputs], device) for k in first}
    return first


def _device_list(device_ids):
    if device_ids is None:
        count = _ct.cuda.device_count()
        return [_ct.device(f"cuda:{i}") for i in range(count)] or [_ct.default_device()]
    devices = [_ct.device(f"cuda:{d}" if isinstance(d, int) else d) for d in device_ids]
    if not devices or len(set(map(str, devices))) != len(devices):
        raise ValueError(f"DataParallel: device_ids {list(device_ids)} must name distinct "
                         "devices")
    return devices


class DataParallel(Module):
    """torch.nn.DataParallel: one process, one replica of module per device, over the C
    library's threads engine (the one `ctensor train --devices` uses).

    module moves to device_ids[0] and is replica 0 (the optimiser steps its parameters); the
    other replicas are copies. Each forward: the replicas take replica 0's parameters and
    buffers (a broadcast), the batch is split along its first axis into len(device_ids)
    chunks (torch.chunk's sizes; a replica left without rows sits the step out), each replica
    runs its chunk on its own thread with its device as the default placement, and the
    outputs are joined on output_device (device_ids[0] by default). The next backward() runs
    through every replica, then all-reduces (sums) their gradients over the engine, so that
    module's gradients are those of the whole batch; the other replicas' are dropped.
    device_ids: ints (cuda:N, as PyTorch's), strings or ct.device, logical devices
    ("cpu:0", "cpu:1" after ct.configure_logical_devices) included; None: every CUDA device,
    else the default device. Inputs: tensors (split), lists, tuples and dicts of them, other
    values (passed to every replica). ct.no_grad() around the forward holds on every replica;
    other per-thread settings (ct.autocast) do not reach the replicas' threads."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if dim != 0:
            raise _ct.UnsupportedError("DataParallel: the batch is split along dim 0 only")
        devices = _device_list(device_ids)
        self.module = module.to(devices[0])
        replicas = [module] + [_replicate(module, d) for d in devices[1:]]
        object.__setattr__(self, "device_ids", devices)
        object.__setattr__(self, "output_device", devices[0] if output_device is None else
                           _ct.device(f"cuda:{output_device}" if isinstance(output_device, int)
                                      else output_device))
        object.__setattr__(self, "_replicas", replicas)
        object.__setattr__(self, "_c", _ctensor._data_parallel(devices))

    def _set_mode(self, mode):
        for replica in self._replicas[1:]:
            replica.train(mode)

    def forward(self, *inputs, **kwargs):
        rows = next((t.shape[0] for t in _tensors_in((inputs, kwargs)) if t.ndim > 0), None)
        replicas, devices = self._replicas, self.device_ids
        if rows is None:
            raise ValueError("DataParallel: no input tensor with a batch axis to split")
        self._c.broadcast([[t for _, t, _ in r._named_state()] for r in replicas])
        chunk = -(-rows // len(replicas))
        pieces = [_scatter((inputs, kwargs), r * chunk, min(rows, (r + 1) * chunk), devices[r])
                  if r * chunk < rows else None for r in range(len(replicas))]
        grad_on = _ct.is_grad_enabled()

        def run(rank):
            if pieces[rank] is None:
                return None
            args, kw = pieces[rank]
            if grad_on:
                return replicas[rank](*args, **kw)
            with no_grad():
                return replicas[rank](*args, **kw)

        outputs = [o for o in self._c.run(run) if o is not None]
        if self.training and grad_on:
            _ctensor._set_after_backward(self._reduce_gradients)
        return _gather(outputs, self.output_device)

    def _reduce_gradients(self):
        """Sum each parameter's gradient over the replicas into replica 0's (the all-reduce);
        a replica without a gradient for a parameter others have (no rows this step) adds
        zeros."""
        params = [list(r.parameters()) for r in self._replicas]
        used = [i for i in range(len(params[0])) if any(ps[i].grad is not None for ps in params)]
        for ps in params:
            for i in used:
                if ps[i].grad is None:
                    ps[i].grad = _ct.zeros(tuple(ps[i].shape), dtype=ps[i].dtype,
                                           device=ps[i].device)
        self._c.all_reduce([[ps[i].grad for i in used] for ps in params])
        for ps in params[1:]:
            for p in ps:
                p.grad = None


def _tensors_in(obj):
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors_in(v)
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors_in(v)


parallel = types.ModuleType(__name__ + ".parallel", "ct.nn.parallel")
parallel.DistributedDataParallel = DistributedDataParallel
parallel.DataParallel = DataParallel
sys.modules[parallel.__name__] = parallel
