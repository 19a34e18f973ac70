"""Prints every command-line flag of Megatron-LM at one checkout, one per line (LC_ALL=C order).

Megatron-LM builds most of its flags from dataclass fields (ArgumentGroupFactory in
megatron/training/argument_utils.py), so the list is taken from the parser that its own
add_megatron_arguments() builds, not from the source text. torch and the other compiled packages
are replaced by import stubs (their values never decide which flags exist; the one conditional
group, NVIDIA Kitchen's, is left out as on a machine without it). Needs Python >= 3.12 (the
checkout imports typing.override). Used to write megatron-core-args.txt:

    git -C MIRROR archive COMMIT megatron | tar -x -C /tmp/mlm
    python3.12 dump_megatron_flags.py /tmp/mlm | grep '^--' | LC_ALL=C sort -u

With flag names after the checkout, prints each one's argparse action (kind, dest, default,
choices, nargs) to stderr instead.
"""
import argparse
import importlib.abc
import importlib.machinery
import sys
import types

STUB_ROOTS = {"torch", "numpy", "einops", "packaging", "yaml", "safetensors", "tqdm", "psutil",
              "regex", "sentencepiece", "tiktoken", "transformers", "wandb", "tensorboard",
              "triton", "nvtx", "pydantic", "omegaconf", "hydra", "requests", "msc",
              "multistorageclient", "lightning"}
# Optional packages Megatron imports under try/except: absent, as on a machine without them.
ABSENT = {"nvidia_resiliency_ext", "transformer_engine", "apex", "flash_attn", "onelogger",
          "one_logger_utils", "modelopt", "nvidia_kitchen", "deep_ep", "mamba_ssm", "causal_conv1d",
          "flashattn_hopper", "flash_attn_3", "emerging_optimizers", "grouped_gemm", "zarr",
          "tensorstore", "vllm", "megatron.core.extensions.kitchen_internal"}
MISSING = set()

import typing as _t
class AnyMeta(type(_t.Protocol)):
    def __getattr__(cls, name):
        if name.startswith("__") or name.startswith("_abc") or name.startswith("_is_"):
            raise AttributeError(name)
        sub = AnyMeta(name, (Any,), {})
        setattr(cls, name, sub)
        return sub
    def __or__(cls, other): return typing_union(cls, other)
    def __ror__(cls, other): return typing_union(other, cls)
    def __getitem__(cls, item): return cls
    def __iter__(cls): return iter(())

def typing_union(a, b):
    import typing
    return typing.Union[a, b]

class Any(metaclass=AnyMeta):
    def __init_subclass__(cls, **kwargs): pass
    def __init__(self, *a, **k): pass
    def __call__(self, *a, **k): return Any()
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Any()
    def __iter__(self): return iter(())
    def __bool__(self): return False
    def __lt__(self, o): return False
    __le__ = __gt__ = __ge__ = __lt__
    def __mro_entries__(self, bases): return (Any,)

class StubModule(types.ModuleType):
    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []
        self.__version__ = "99.0.0"
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        val = AnyMeta(name, (Any,), {})
        setattr(self, name, val)
        return val

class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        root = fullname.split(".")[0]
        if root in ABSENT:
            raise ModuleNotFoundError(fullname, name=fullname)
        if root in STUB_ROOTS:
            MISSING.add(root)
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None
    def create_module(self, spec): return StubModule(spec.name)
    def exec_module(self, module): pass

sys.meta_path.append(Finder())
import typing
sys.modules["typing_extensions"] = typing  # Python 3.12's typing has what Megatron imports from it
sys.path.insert(0, sys.argv[1])
from megatron.training.arguments import add_megatron_arguments
parser = argparse.ArgumentParser(allow_abbrev=False)
add_megatron_arguments(parser)
flags = sorted({s for a in parser._actions for s in a.option_strings if s not in ("-h", "--help")})
out = {"flags": flags, "actions": {s: a for a in parser._actions for s in a.option_strings}}
if len(sys.argv) > 2:
    for s in sys.argv[2:]:
        a = out["actions"].get(s)
        print(s, None if a is None else (type(a).__name__, a.dest, a.default, a.choices, a.nargs), file=sys.stderr)
else:
    print("\n".join(flags))
print("stubbed:", sorted(MISSING), file=sys.stderr)
