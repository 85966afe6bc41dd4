"""Code the rewrites put into a student's answer cell: helpers as a student writes them."""

SNIPPETS = {
    "numpy": '''
def _via_numpy(out):
    """Round trip through NumPy (as when checking a value by hand): same values, same dtype."""
    if isinstance(out, tuple):
        return tuple(_via_numpy(o) for o in out)
    if torch.is_tensor(out) and not out.requires_grad and out.device.type == "cpu":
        return torch.from_numpy(out.detach().numpy().copy())
    return out
''',
    "float64": '''
def _float_dtype(*args):
    """The float dtype of the tensor arguments, or None if any argument is not a plain tensor or number."""
    tensors = [a for a in args if torch.is_tensor(a)]
    if any(isinstance(a, (dict, list, tuple)) for a in args) or not tensors:
        return None
    if not all(t.is_floating_point() or t.dtype in (torch.bool, torch.long, torch.int32) for t in tensors):
        return None
    floats = [t.dtype for t in tensors if t.is_floating_point()]
    return floats[0] if floats else None


def _back(out, dtype):
    if isinstance(out, tuple):
        return tuple(_back(o, dtype) for o in out)
    if torch.is_tensor(out) and out.dtype == torch.float64 and dtype is not None:
        return out.to(dtype)
    return out
''',
    "einsum": '''
def _mm(a, b):
    """a @ b written with einsum (any leading batch dimensions)."""
    if a.dim() == 1 and b.dim() == 1:
        return torch.einsum("i,i->", a, b)
    if a.dim() == 1:
        return torch.einsum("i,...ij->...j", a, b)
    if b.dim() == 1:
        return torch.einsum("...ij,j->...i", a, b)
    return torch.einsum("...ij,...jk->...ik", a, b)
''',
    "timed": '''
import functools
import time


def timed(fn):
    """Prints how long each call takes."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        print(f"{fn.__name__}: {time.perf_counter() - start:.4f} s")
        return out
    return wrapper
''',
}
