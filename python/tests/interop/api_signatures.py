"""MindSpore 2.x's Python API as a ported script uses it, described alike under either package:
the parameters (name, kind, default, in order) of each function and class, the module paths
scripts import from, and a few constants. `describe("mindspore")` runs in MindSpore's venv,
`describe("lockstep")` under Debian's Python; `compare` sets one description against the other.

Lockstep must have every parameter MindSpore has, with the same name, kind and default, in the
same place, so that a call written for MindSpore binds the same way; it may refuse a value at
run time (ValueError naming the argument). Parameters of its own come after MindSpore's, each
with a default. Deliberate differences are in ALLOWED, each with its reason."""

import ast
import enum
import importlib
import inspect
import re

# Paths under the package root: functions, classes (their __init__) and methods.
APIS = [
    "Tensor", "Parameter", "set_seed", "set_context", "set_auto_parallel_context",
    "save_checkpoint", "load_checkpoint", "load_param_into_net",
    "communication.init", "communication.get_rank", "communication.get_group_size",
    "nn.Cell", "nn.Conv2d", "nn.BatchNorm2d", "nn.SyncBatchNorm", "nn.Dense", "nn.ReLU",
    "nn.MaxPool2d", "nn.AvgPool2d", "nn.Flatten", "nn.SequentialCell", "nn.CellList",
    "nn.SoftmaxCrossEntropyWithLogits", "nn.Momentum",
    "train.Model", "train.Model.train", "train.Model.eval",
    "train.FixedLossScaleManager", "train.DynamicLossScaleManager", "train.CheckpointConfig",
    "train.ModelCheckpoint", "train.LossMonitor", "train.TimeMonitor", "train.Callback",
    "dataset.ImageFolderDataset", "dataset.ImageFolderDataset.map",
    "dataset.ImageFolderDataset.batch", "dataset.ImageFolderDataset.repeat",
    "dataset.ImageFolderDataset.create_dict_iterator",
    "dataset.vision.Decode", "dataset.vision.Resize", "dataset.vision.RandomCrop",
    "dataset.vision.RandomResizedCrop", "dataset.vision.CenterCrop",
    "dataset.vision.RandomHorizontalFlip", "dataset.vision.Normalize", "dataset.vision.HWC2CHW",
    "dataset.transforms.TypeCast", "dataset.transforms.Compose",
    # Beyond the list: what the same scripts call on these objects.
    "get_seed", "get_context", "get_auto_parallel_context", "reset_auto_parallel_context",
    "context.get_auto_parallel_context", "context.reset_auto_parallel_context",
    "Tensor.asnumpy", "Parameter.set_data",
    "communication.get_local_rank", "communication.get_local_rank_size",
    "communication.release",
    "nn.Cell.set_train", "nn.Cell.set_grad", "nn.Cell.trainable_params",
    "nn.Cell.untrainable_params", "nn.Cell.get_parameters", "nn.Cell.parameters_and_names",
    "nn.Cell.cells_and_names", "nn.Cell.parameters_dict", "nn.Cell.name_cells", "nn.Cell.cells",
    "nn.Cell.insert_param_to_cell", "nn.Cell.insert_child_to_cell",
    "dataset.ImageFolderDataset.create_tuple_iterator",
    "dataset.ImageFolderDataset.get_dataset_size", "dataset.ImageFolderDataset.get_batch_size",
    "dataset.ImageFolderDataset.get_col_names", "dataset.ImageFolderDataset.num_classes",
    "dataset.ImageFolderDataset.get_class_indexing",
]

# Module paths scripts import from, with names imported from them.
MODULES = {
    "nn.loss": ["SoftmaxCrossEntropyWithLogits"],
    "nn.optim": ["Momentum"],
    "dataset.vision.c_transforms": ["Decode", "Resize", "RandomCrop", "RandomResizedCrop",
                                    "CenterCrop", "RandomHorizontalFlip", "Normalize",
                                    "HWC2CHW"],
    "dataset.transforms.c_transforms": ["TypeCast", "Compose"],
    "train.callback": ["Callback", "RunContext", "CheckpointConfig", "ModelCheckpoint",
                       "LossMonitor", "TimeMonitor"],
    "train.loss_scale_manager": ["FixedLossScaleManager", "DynamicLossScaleManager"],
    "communication.management": ["init", "get_rank", "get_group_size", "get_local_rank",
                                 "get_local_rank_size", "release"],
    "context": ["set_context", "get_context", "set_auto_parallel_context",
                "get_auto_parallel_context", "reset_auto_parallel_context", "ParallelMode",
                "GRAPH_MODE", "PYNATIVE_MODE"],
    "common.dtype": ["bool_", "uint8", "int32", "int64", "float16", "float32", "float64"],
}

# Values scripts pass, which must mean the same.
CONSTANTS = [
    "GRAPH_MODE", "PYNATIVE_MODE", "context.GRAPH_MODE", "context.ParallelMode.STAND_ALONE",
    "context.ParallelMode.DATA_PARALLEL", "ParallelMode.DATA_PARALLEL", "float32", "float16",
    "int32", "common.dtype.float32", "dataset.vision.Inter.BILINEAR",
    "dataset.vision.Inter.LINEAR", "dataset.vision.Border.CONSTANT",
]

# Deliberate differences: (path, parameter) -> (MindSpore's, Lockstep's, why); an entry
# allows that mismatch only, as compare() words it (the start of each side's words).
ALLOWED = {
    ("module dataset.vision.c_transforms", "import"): (
        "absent", "present",
        "MindSpore 2.x dropped this MindSpore 1.x path; Lockstep keeps it for 1.x scripts"),
    ("module dataset.transforms.c_transforms", "import"): (
        "absent", "present",
        "MindSpore 2.x dropped this MindSpore 1.x path; Lockstep keeps it for 1.x scripts"),
}

REQUIRED = "<required>"


def _resolve(root, path):
    """The object at root.path: attributes, importing submodules on the way."""
    obj = importlib.import_module(root)
    name = root
    for part in path.split("."):
        name += "." + part
        obj = getattr(obj, part) if hasattr(obj, part) else importlib.import_module(name)
    return obj


def _unwrapped(function, name):
    """The function a decorator wraps: by __wrapped__, or (MindSpore's opt_init_args_register)
    the function of the same name the wrapper closes over."""
    function = inspect.unwrap(function)
    for cell in getattr(function, "__closure__", None) or ():
        try:
            inner = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if inspect.isfunction(inner) and inner is not function and inner.__name__ == name:
            return _unwrapped(inner, name)
    return function


def _default(value, dtype_type):
    """A default written the same way under either package."""
    if value is inspect.Parameter.empty:
        return REQUIRED
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if dtype_type is not None and isinstance(value, dtype_type):
        return f"dtype {value}"  # MindSpore's and Lockstep's types print their name: Float32
    return repr(value)


def _docstring_parameters(obj, dtype_type):
    """A class whose __init__ is compiled (MindSpore's Tensor): the parameters its docstring's
    Args section lists, each with its "Default: ``...``"."""
    doc = inspect.getdoc(obj) or ""
    args = re.search(r"^Args:\n(.*?)(?:\n\S|\Z)", doc, re.S | re.M)
    if not args:
        raise ValueError("no signature, and no Args section in its docstring")
    entries = re.split(r"\n(?=    \w+ \()", "\n" + args.group(1))
    params = []
    for entry in filter(str.strip, entries):
        name = entry.split()[0]
        default = re.search(r"Default: ``(.*?)``", entry, re.S)
        value = inspect.Parameter.empty
        if default:
            try:
                value = ast.literal_eval(default.group(1).strip())
            except (ValueError, SyntaxError):
                value = default.group(1).strip()
        params.append([name, "POSITIONAL_OR_KEYWORD", _default(value, dtype_type)])
    return params


def _parameters(obj, name, dtype_type):
    """[[name, kind, default], ...] of a function, method or class (its __init__, less self)."""
    if inspect.isclass(obj):
        init = next(k.__dict__["__init__"] for k in obj.__mro__ if "__init__" in k.__dict__)
        if init is object.__init__:
            return []
        if not inspect.isfunction(_unwrapped(init, "__init__")):
            return _docstring_parameters(obj, dtype_type)
        params = list(inspect.signature(_unwrapped(init, "__init__")).parameters.values())[1:]
    else:
        params = inspect.signature(_unwrapped(obj, name)).parameters.values()
    return [[p.name, p.kind.name, "" if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
             else _default(p.default, dtype_type)] for p in params]


def describe(root):
    """The description of package `root` ("mindspore" or "lockstep"), as JSON-ready dicts."""
    dtype_type = getattr(_resolve(root, "common.dtype"), "Type", None)
    apis = {}
    for path in APIS:
        try:
            apis[path] = {"params": _parameters(_resolve(root, path), path.split(".")[-1],
                                                dtype_type)}
        except Exception as error:  # noqa: BLE001 -- reported as a mismatch
            apis[path] = {"missing": f"{type(error).__name__}: {error}"}
    modules = {}
    for path, names in MODULES.items():
        try:
            module = importlib.import_module(f"{root}.{path}")
            modules[path] = {"lacks": [n for n in names if not hasattr(module, n)]}
        except ImportError as error:
            modules[path] = {"missing": str(error)}
    constants = {}
    for path in CONSTANTS:
        try:
            constants[path] = _default(_resolve(root, path), dtype_type)
        except Exception as error:  # noqa: BLE001 -- reported as a mismatch
            constants[path] = f"<missing: {type(error).__name__}>"
    return {"apis": apis, "modules": modules, "constants": constants}


def _format(param):
    return "absent" if param is None else f"{param[1]} default={param[2]}"


def _compare_parameters(path, theirs, ours):
    """(path, parameter, MindSpore's, Lockstep's) for each parameter that differs."""
    problems = []
    ours_at = {p[0]: (i, p) for i, p in enumerate(ours)}
    for i, param in enumerate(theirs):
        j, mine = ours_at.get(param[0], (None, None))
        if mine is None or mine[1:] != param[1:]:
            problems.append((path, param[0], _format(param), _format(mine)))
        elif j != i:
            problems.append((path, param[0], f"position {i}", f"position {j}"))
    names = {p[0] for p in theirs}
    kinds = {p[1] for p in theirs}
    for param in ours:
        if param[0] in names:
            continue
        if param[1] in ("VAR_POSITIONAL", "VAR_KEYWORD") and param[1] not in kinds:
            problems.append((path, param[0], "absent", f"{param[1]} (takes what MindSpore "
                                                       "refuses)"))
        elif param[2] == REQUIRED:
            problems.append((path, param[0], "absent", f"{_format(param)} (required)"))
    return problems


def extras(theirs, ours):
    """Lockstep's own parameters of each API (allowed after MindSpore's, with defaults)."""
    found = []
    for path, mine in ours["apis"].items():
        other = theirs["apis"].get(path, {})
        if "params" in mine and "params" in other:
            names = {p[0] for p in other["params"]}
            found += [(path, p[0]) for p in mine["params"] if p[0] not in names]
    return found


def compare(theirs, ours):
    """Mismatches (path, parameter, MindSpore's, Lockstep's) not in ALLOWED, and the ALLOWED
    entries that matched nothing (stale)."""
    problems = []
    for path in APIS:
        other, mine = theirs["apis"][path], ours["apis"][path]
        if "missing" in other or "missing" in mine:
            problems.append((path, "*", f"absent: {other['missing']}" if "missing" in other
                             else "present", f"absent: {mine['missing']}" if "missing" in mine
                             else "present"))
            continue
        problems += _compare_parameters(path, other["params"], mine["params"])
    for path in MODULES:
        other, mine = theirs["modules"][path], ours["modules"][path]
        for name in sorted(set(other.get("lacks", [])) | set(mine.get("lacks", []))):
            problems.append((f"module {path}", name,
                             "absent" if name in other.get("lacks", []) else "present",
                             "absent" if name in mine.get("lacks", []) else "present"))
        if "missing" in other or "missing" in mine:
            problems.append((f"module {path}", "import",
                             "absent" if "missing" in other else "present",
                             "absent" if "missing" in mine else "present"))
    for path in CONSTANTS:
        if theirs["constants"][path] != ours["constants"][path]:
            problems.append((f"constant {path}", "value", theirs["constants"][path],
                             ours["constants"][path]))
    def allowed(problem):
        theirs_then, ours_then = ALLOWED.get(problem[:2], (None, None, None))[:2]
        return theirs_then is not None and problem[2].startswith(theirs_then) and \
            problem[3].startswith(ours_then)

    stale = [key for key in ALLOWED if not any(p[:2] == key and allowed(p) for p in problems)]
    return [p for p in problems if not allowed(p)], stale
