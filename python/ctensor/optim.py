"""ct.optim: SGD, Adam and AdamW as torch.optim's, over the C library's fused updates.

Each parameter group is one C optimiser (optim.h), so step() is one C call per group; a
group's "lr" (as a scheduler sets it) is handed to its C optimiser before each step.
state_dict() has PyTorch's layout ({"state": {index: {...}}, "param_groups": [...]}, the
indices counted across groups). A group's "momentum" (SGD) or "betas"[0] (Adam), as
OneCycleLR cycles it, goes to its C optimiser the same way. ct.optim.lr_scheduler has
StepLR, CosineAnnealingLR, LinearLR (the warm-up), SequentialLR and OneCycleLR, with
PyTorch's closed forms.
"""

import math
import sys
import types

from ctensor import _ctensor


class Optimizer:
    """Base of the optimisers: parameter groups, each with its own C optimiser."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.param_groups = []
        self._c = []
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group):
        g = dict(self.defaults)
        g.update(group)
        g["params"] = list(g["params"])
        self._c.append(self._make(g))
        self.param_groups.append(g)

    def _sync(self, i):
        g, c = self.param_groups[i], self._c[i]
        if c.lr != g["lr"]:
            c.lr = g["lr"]
        momentum = g["betas"][0] if "betas" in g else g.get("momentum", 0.0)
        if c.momentum != momentum:
            c.momentum = momentum

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for i, c in enumerate(self._c):
            self._sync(i)
            c.step()
        return loss

    def zero_grad(self, set_to_none=True):
        for c in self._c:
            c.zero_grad()

    def state_dict(self):
        state, groups, first = {}, [], 0
        for g, c in zip(self.param_groups, self._c):
            for name, t in c.state():
                _, index, key = name.split(".", 2)
                state.setdefault(first + int(index), {})[key] = t
            n = len(g["params"])
            groups.append({k: v for k, v in g.items() if k != "params"} |
                          {"params": list(range(first, first + n))})
            first += n
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("load_state_dict: the number of parameter groups differs")
        for g, saved in zip(self.param_groups, groups):
            if len(saved["params"]) != len(g["params"]):
                raise ValueError("load_state_dict: a parameter group's size differs")
        for i, (g, saved, c) in enumerate(zip(self.param_groups, groups, self._c)):
            for local, index in enumerate(saved["params"]):
                for key, t in state_dict["state"].get(index, {}).items():
                    c.load_state(f"state.{local}.{key}", t)
            g.update({k: v for k, v in saved.items() if k != "params"})
            self._sync(i)


class SGD(Optimizer):
    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov))

    def _make(self, g):
        return _ctensor._sgd(g["params"], g["lr"], g["momentum"], g["dampening"],
                             g["weight_decay"], g["nesterov"])


class Adam(Optimizer):
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad))

    def _make(self, g):
        b1, b2 = g["betas"]
        return _ctensor._adam(g["params"], g["lr"], b1, b2, g["eps"], g["weight_decay"],
                              g["amsgrad"], self._decoupled)


class AdamW(Adam):
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad)


# ---- lr_scheduler ----


class LRScheduler:
    """Sets each group's lr from its initial lr and the epoch (PyTorch's closed forms)."""

    def __init__(self, optimizer, last_epoch=-1):
        self.optimizer = optimizer
        for g in optimizer.param_groups:
            g.setdefault("initial_lr", g["lr"])
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def _lr(self, base, t):
        raise NotImplementedError

    def step(self):
        self.last_epoch += 1
        for g, base in zip(self.optimizer.param_groups, self.base_lrs):
            g["lr"] = self._lr(base, self.last_epoch)

    def get_last_lr(self):
        return [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self):
        return {"last_epoch": self.last_epoch, "base_lrs": list(self.base_lrs)}

    def load_state_dict(self, state):
        self.last_epoch = state["last_epoch"] - 1
        self.base_lrs = list(state["base_lrs"])
        self.step()


class StepLR(LRScheduler):
    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        if step_size < 1:
            raise ValueError("StepLR: step_size must be >= 1")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def _lr(self, base, t):
        return base * self.gamma ** (t // self.step_size)


class CosineAnnealingLR(LRScheduler):
    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        if T_max < 1:
            raise ValueError("CosineAnnealingLR: T_max must be >= 1")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def _lr(self, base, t):
        return self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * t / self.T_max)) / 2


class LinearLR(LRScheduler):
    """The warm-up: lr from base * start_factor to base * end_factor over total_iters."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ValueError("LinearLR: start_factor in (0, 1], end_factor in [0, 1]")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def _lr(self, base, t):
        done = min(t, self.total_iters) / self.total_iters
        return base * (self.start_factor + (self.end_factor - self.start_factor) * done)


class SequentialLR:
    """schedulers[i] from milestone i - 1 on, each counting its epochs from its milestone."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("SequentialLR: one milestone fewer than schedulers")
        self.optimizer, self.schedulers, self.milestones = optimizer, schedulers, milestones
        self.last_epoch = last_epoch + 1
        self._apply()

    def _apply(self):
        i = sum(1 for m in self.milestones if self.last_epoch >= m)
        start = self.milestones[i - 1] if i else 0
        s = self.schedulers[i]
        for g, base in zip(self.optimizer.param_groups, s.base_lrs):
            g["lr"] = s._lr(base, self.last_epoch - start)

    def step(self):
        self.last_epoch += 1
        self._apply()

    def get_last_lr(self):
        return [g["lr"] for g in self.optimizer.param_groups]


class OneCycleLR(LRScheduler):
    """torch.optim.lr_scheduler.OneCycleLR, stepped every batch: the lr rises from
    max_lr / div_factor to max_lr over pct_start of the steps, then anneals to
    max_lr / div_factor / final_div_factor (three_phase: back to the start first); the
    momentum (SGD) or beta1 (Adam) runs the other way between max_ and base_momentum."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
            total_steps = epochs * steps_per_epoch
        if total_steps <= 0 or not isinstance(total_steps, int):
            raise ValueError("OneCycleLR: expected a positive integer total_steps, got "
                             f"{total_steps}")
        if not 0 <= pct_start <= 1:
            raise ValueError(f"OneCycleLR: expected a float in [0, 1] for pct_start, got "
                             f"{pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("OneCycleLR: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        self.total_steps, self.cycle_momentum = total_steps, cycle_momentum
        self._linear = anneal_strategy == "linear"
        groups = optimizer.param_groups
        n = len(groups)
        def per(v):  # a value per group, or one for all
            return list(v) if isinstance(v, (list, tuple)) else [v] * n

        max_lrs, base_ms, max_ms = per(max_lr), per(base_momentum), per(max_momentum)
        for g, top, base_m, max_m in zip(groups, max_lrs, base_ms, max_ms):
            g["initial_lr"] = top / div_factor
            g["max_lr"], g["min_lr"] = top, g["initial_lr"] / final_div_factor
            g["base_momentum"], g["max_momentum"] = base_m, max_m
        # (end step, start lr, end lr, start momentum, end momentum) by group keys
        p, last = pct_start * total_steps, total_steps - 1
        if three_phase:
            self._phases = [(p - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (2 * p - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                            (last, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self._phases = [(p - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (last, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self._linear:
            return (end - start) * pct + start
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    def step(self):
        t = self.last_epoch + 1
        if t > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {t} times; total_steps is "
                             f"{self.total_steps}")
        self.last_epoch = t
        for g in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._phases):
                if t <= end or i == len(self._phases) - 1:
                    pct = (t - start) / (end - start) if end != start else 1.0
                    g["lr"] = self._anneal(g[lr0], g[lr1], pct)
                    if self.cycle_momentum:
                        momentum = self._anneal(g[m0], g[m1], pct)
                        if "betas" in g:
                            g["betas"] = (momentum, *g["betas"][1:])
                        else:
                            g["momentum"] = momentum
                    break
                start = end


lr_scheduler = types.ModuleType(__name__ + ".lr_scheduler", "ct.optim.lr_scheduler")
for _cls in (LRScheduler, StepLR, CosineAnnealingLR, LinearLR, SequentialLR, OneCycleLR):
    setattr(lr_scheduler, _cls.__name__, _cls)
sys.modules[lr_scheduler.__name__] = lr_scheduler
