"""Prints the names a torchtitan recipe may set, one per line (LC_ALL=C order), from its source.

torchtitan configures a run with a Python function returning Trainer.Config (torchtitan/config/
README.md at the recorded commit); the planner's emitted recipe sets attributes of the config
tree and names a few classes. This reads, with Python's ast module (nothing is imported):

  - the dataclass fields of TrainingConfig, ParallelismConfig and CompileConfig
    (torchtitan/config/configs.py) as `training.X`, `parallelism.X`, `compile.X`;
  - the fields of Trainer.Config (torchtitan/trainer.py) as `config.X`;
  - the activation-checkpointing policies (torchtitan/distributed/activation_checkpoint.py) and
    the quantization converters (torchtitan/components/quantization/__init__.py, float8.py,
    mx.py) as
    `class NAME`, with their
    Config fields as `NAME.Config.X`;
  - the options torchtitan.train reads itself (torchtitan/config/manager.py: `arg == "--X"`) as
    `--X`;
  - the Llama 3 flavours of torchtitan/models/llama3/__init__.py (`llama3_configs`) as
    `llama3 FLAVOUR`, and the recipe functions of torchtitan/models/llama3/config_registry.py as
    `def NAME`.

Used to write torchtitan-config-fields.txt:

    git -C MIRROR archive COMMIT torchtitan | tar -x -C /tmp/tt
    python3 dump_torchtitan_fields.py /tmp/tt | LC_ALL=C sort -u
"""
import ast
import pathlib
import sys


def dataclass_fields(node):
    """Annotated field names of a class body."""
    return [s.target.id for s in node.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]


def classes(tree):
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}


def main(root):
    root = pathlib.Path(root) / "torchtitan"
    out = []
    configs = classes(ast.parse((root / "config/configs.py").read_text()))
    for cls, section in (("TrainingConfig", "training"), ("ParallelismConfig", "parallelism"),
                         ("CompileConfig", "compile")):
        out += [f"{section}.{f}" for f in dataclass_fields(configs[cls])]
    trainer = classes(ast.parse((root / "trainer.py").read_text()))
    trainer_config = next(n for n in trainer["Trainer"].body
                          if isinstance(n, ast.ClassDef) and n.name == "Config")
    out += [f"config.{f}" for f in dataclass_fields(trainer_config)]
    for path in ("distributed/activation_checkpoint.py", "components/quantization/__init__.py",
                 "components/quantization/float8.py", "components/quantization/mx.py"):
        for name, node in classes(ast.parse((root / path).read_text())).items():
            if name == "Config":
                continue
            out.append(f"class {name}")
            for inner in node.body:
                if isinstance(inner, ast.ClassDef) and inner.name == "Config":
                    out += [f"{name}.Config.{f}" for f in dataclass_fields(inner)]
    llama = ast.parse((root / "models/llama3/__init__.py").read_text())
    for node in ast.walk(llama):
        targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "llama3_configs" for t in targets) and \
                isinstance(node.value, ast.Dict):
            out += [f"llama3 {k.value}" for k in node.value.keys if isinstance(k, ast.Constant)]
    manager = ast.parse((root / "config/manager.py").read_text())
    for node in ast.walk(manager):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and \
                node.left.id == "arg":
            out += [c.value for c in node.comparators
                    if isinstance(c, ast.Constant) and str(c.value).startswith("--")]
    registry = ast.parse((root / "models/llama3/config_registry.py").read_text())
    out += [f"def {n.name}" for n in registry.body if isinstance(n, ast.FunctionDef)]
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
