"""Mixed precision: ct.autocast (torch.autocast) and ct.amp.GradScaler (torch.amp.GradScaler).

Both are the C library's (autocast.h): an autocast region runs matmul, linear and conv2d in
float16 or bfloat16 and the losses, softmaxes and norms in float32; the scaler multiplies the
loss, then unscales and checks every gradient in one fused pass per device and skips a step
whose gradients are not finite. The C scaler is made at the first unscale_ or step, over the
optimiser's parameters.
"""

from ctensor import _ctensor


class autocast:
    """with ct.autocast("cuda" | "cpu", dtype=None, enabled=True): as torch.autocast
    (dtype None: float16 on CUDA, bfloat16 on the CPU). Also a decorator."""

    def __init__(self, device_type, dtype=None, enabled=True):
        device_type = str(device_type).split(":")[0]
        if dtype is None:
            dtype = _ctensor.float16 if device_type == "cuda" else _ctensor.bfloat16
        self.device_type, self.dtype, self.enabled = device_type, dtype, enabled

    def __enter__(self):
        # Disabled outside any region changes nothing: no region is opened then.
        self._pushed = self.enabled or _ctensor.get_autocast_dtype(self.device_type) != \
            _ctensor.float32
        if self._pushed:
            _ctensor._autocast_push(self.device_type,
                                    self.dtype if self.enabled else _ctensor.float32)
        return self

    def __exit__(self, *exc):
        if self._pushed:
            _ctensor._autocast_pop()
        return False

    def __call__(self, fn):
        def wrapper(*args, **kwargs):
            with autocast(self.device_type, self.dtype, self.enabled):
                return fn(*args, **kwargs)
        return wrapper


class GradScaler:
    """Loss scaling for float16 training, with PyTorch's methods and defaults."""

    def __init__(self, device="cuda", init_scale=65536.0, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._args = (float(init_scale), float(growth_factor), float(backoff_factor),
                      int(growth_interval), bool(enabled))
        self._enabled = bool(enabled)
        self._c, self._optimizer, self._state = None, None, None

    def is_enabled(self):
        return self._enabled

    def _scaler(self, optimizer):
        if self._c is None or self._optimizer is not optimizer:
            params = [p for g in optimizer.param_groups for p in g["params"]]
            self._c = _ctensor._grad_scaler(params, *self._args)
            self._optimizer = optimizer
            if self._state is not None:
                self._c.set_state(*self._state)
        return self._c

    def scale(self, loss):
        if not self._enabled:
            return loss
        if self._c is None:
            return loss * self.get_scale()
        return self._c.scale(loss)

    def unscale_(self, optimizer):
        if self._enabled:
            self._scaler(optimizer).unscale()

    def step(self, optimizer):
        """optimizer.step() unless a gradient was not finite; returns None as PyTorch's."""
        if not self._enabled:
            return optimizer.step()
        c = self._scaler(optimizer)
        for i, group_c in enumerate(optimizer._c):
            optimizer._sync(i)
            c.step(group_c)
        return None

    def update(self):
        if self._enabled and self._c is not None:
            self._c.update()

    def get_scale(self):
        if not self._enabled:
            return 1.0
        if self._c is not None:
            return self._c.get_state()[0]
        return self._state[0] if self._state else self._args[0]

    def state_dict(self):
        if not self._enabled:
            return {}
        scale, tracker, _ = self._c.get_state() if self._c else (self.get_scale(), 0, 0)
        return {"scale": scale, "growth_factor": self._args[1], "backoff_factor": self._args[2],
                "growth_interval": self._args[3], "_growth_tracker": tracker}

    def load_state_dict(self, state):
        self._state = (float(state["scale"]), int(state["_growth_tracker"]), 0)
        if self._c is not None:
            self._c.set_state(*self._state)

