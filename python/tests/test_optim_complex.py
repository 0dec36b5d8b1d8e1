"""ct.optim on complex parameters, which PyTorch's optimisers update as their real and
imaginary parts (torch.view_as_real): steps on a complex parameter equal the steps on the
equivalent real pairs, the state is complex like the parameter (and survives state_dict and
load_state_dict), and a complex nn.Parameter fits a complex least-squares problem with Adam,
on every device. (The C tests, tests/test_optim_complex.c, check every variant, clipping and
the gradient scaler.)"""

import numpy as np
import pytest

import ctensor as ct
import ctensor.nn as nn
from conftest import to_numpy

CDTYPES = [(np.complex64, np.float32), (np.complex128, np.float64)]


def complex_array(a, device):
    return ct.asarray(ct.from_dlpack(np.ascontiguousarray(a)), device=device, copy=True)


def _complex(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)


def _pairs(a):
    return np.stack([a.real, a.imag], axis=-1)


OPTIMISERS = [
    lambda ps: ct.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    lambda ps: ct.optim.SGD(ps, lr=0.1, momentum=0.5, dampening=0.2),
    lambda ps: ct.optim.Adam(ps, lr=0.05, weight_decay=0.1),
    lambda ps: ct.optim.Adam(ps, lr=0.05, amsgrad=True),
    lambda ps: ct.optim.AdamW(ps, lr=0.05),
]


@pytest.mark.parametrize("make", OPTIMISERS, ids=["sgd_nesterov", "sgd_dampening", "adam",
                                                  "adam_amsgrad", "adamw"])
@pytest.mark.parametrize("dtypes", CDTYPES, ids=["complex64", "complex128"])
def test_steps_equal_the_real_pairs(device, make, dtypes):
    cdt, rdt = dtypes
    z0 = _complex((3, 4), 1).astype(cdt)
    z = nn.Parameter(complex_array(z0, device))
    r = nn.Parameter(ct.asarray(_pairs(z0).astype(rdt), device=device))
    opt_z, opt_r = make([z]), make([r])
    for step in range(3):
        u = _complex((3, 4), 10 + step).astype(cdt) * 0.1 ** step
        opt_z.zero_grad(), opt_r.zero_grad()
        # Re(conj(u) z) has the gradient u; the pairs' sum(r * pairs(u)) has pairs(u)
        ct.sum(ct.real(ct.conj(complex_array(u, device)) * z)).backward()
        ct.sum(r * ct.asarray(_pairs(u).astype(rdt), device=device)).backward()
        np.testing.assert_array_equal(_pairs(to_numpy(z.grad)), to_numpy(r.grad))
        opt_z.step(), opt_r.step()
    np.testing.assert_array_equal(_pairs(to_numpy(z)), to_numpy(r))
    state_z, state_r = opt_z.state_dict()["state"][0], opt_r.state_dict()["state"][0]
    assert state_z.keys() == state_r.keys()
    for key, value in state_z.items():
        if key == "step":
            continue
        assert value.dtype == z.dtype, key
        np.testing.assert_array_equal(_pairs(to_numpy(value)), to_numpy(state_r[key]))


def test_complex_parameter_trained_by_adam(device):
    """min |x w - y|^2 over a complex w: Adam finds the w that made y."""
    x = _complex((32, 4), 2).astype(np.complex64)
    w_true = _complex((4,), 3).astype(np.complex64)
    xs, ys = complex_array(x, device), complex_array(x @ w_true, device)
    w = nn.Parameter(ct.zeros((4,), dtype=ct.complex64, device=device))
    opt = ct.optim.Adam([w], lr=0.05)
    for _ in range(400):
        opt.zero_grad()
        loss = ct.mean(ct.abs(xs @ w - ys) ** 2)
        loss.backward()
        opt.step()
    assert float(to_numpy(loss)) < 1e-4
    np.testing.assert_allclose(to_numpy(w), w_true, atol=1e-2)


def test_complex_state_dict_roundtrip(device):
    """Adam's complex state saved and loaded into a fresh optimiser continues the same steps."""
    u = complex_array(_complex((2, 3), 5).astype(np.complex64), device)

    def step(p, opt):
        opt.zero_grad()
        ct.sum(ct.abs(p - u) ** 2).backward()
        opt.step()

    a = nn.Parameter(complex_array(_complex((2, 3), 4).astype(np.complex64), device))
    opt_a = ct.optim.Adam([a], lr=0.1, amsgrad=True)
    step(a, opt_a)
    step(a, opt_a)
    b = nn.Parameter(complex_array(to_numpy(a), device))
    opt_b = ct.optim.Adam([b], lr=0.1, amsgrad=True)
    opt_b.load_state_dict(opt_a.state_dict())
    step(a, opt_a)
    step(b, opt_b)
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
