"""save_checkpoint, load_checkpoint and load_param_into_net, as mindspore's (2.x signatures).

The files are MindSpore's .ckpt, read and written by the C++ side (ckpt/reader.h, ckpt/writer.h
through lockstep._core): a file saved here is the one lockstep-train would write for the same
values, ``lockstep-ckpt`` inspects it, and MindSpore's load_checkpoint reads it.
"""

import os
from collections import OrderedDict

import numpy as np

from lockstep import _core
from lockstep.common.tensor import Parameter, Tensor
from lockstep.nn.cell import Cell


def _refuse(function, **unsupported):
    """A ValueError naming each argument set to what Lockstep does not do."""
    named = [name for name, is_set in unsupported.items() if is_set]
    if named:
        raise ValueError(f"{function}: {', '.join(named)} not supported (Lockstep reads and "
                         "writes unencrypted .ckpt files, synchronously, whole on every rank)")


def _named_values(save_obj):
    """(name, value) of each entry of a save_obj that save_checkpoint accepts."""
    if isinstance(save_obj, Cell):
        return list(save_obj.parameters_dict().items())
    if isinstance(save_obj, dict):
        return list(save_obj.items())
    if not isinstance(save_obj, list):
        raise TypeError("save_checkpoint: save_obj must be a Cell, list or dict, not "
                        f"{type(save_obj).__name__}")
    pairs = []
    for item in save_obj:
        if isinstance(item, Parameter):
            pairs.append((item.name, item))
        elif isinstance(item, dict) and "name" in item and "data" in item:
            pairs.append((item["name"], item["data"]))
        else:
            raise TypeError("save_checkpoint: a save_obj list holds Parameters or "
                            f"{{'name': ..., 'data': ...}} dicts, not {item!r}")
    return pairs


def _file_value(value):
    """The numpy array (or str) stored for `value`: a Parameter gives the compiled Model's
    values; a number is stored as MindSpore's Tensor(number) (int as Int64, float as Float32)."""
    if isinstance(value, str):
        return value
    return (value if isinstance(value, Tensor) else Tensor(value)).asnumpy()


def save_checkpoint(save_obj, ckpt_file_name, integrated_save=True, async_save=False,
                    append_dict=None, enc_key=None, enc_mode="AES-GCM", choice_func=None,
                    crc_check=False, format="ckpt", **kwargs):
    """Writes `save_obj` to `ckpt_file_name` (".ckpt" appended when it lacks it).

    save_obj is a Cell (every parameter, trainable or not, by name), a list of Parameters or of
    {"name": str, "data": Tensor} dicts, or a dict name -> Parameter, Tensor, array or str (what
    load_checkpoint returns). choice_func(name) picks among them; append_dict adds int, float,
    bool, str or Tensor values after them (epoch_num, step_num). The file always ends in the CRC
    trailer, as with crc_check=True; integrated_save has nothing to merge, every rank holding
    whole parameters."""
    _refuse("save_checkpoint", async_save=bool(async_save), enc_key=enc_key is not None,
            format=format != "ckpt",
            **{name: value not in (None, False) for name, value in kwargs.items()})
    entries = [(name, _file_value(value)) for name, value in _named_values(save_obj)
               if choice_func is None or choice_func(name)]
    entries += [(name, _file_value(value)) for name, value in (append_dict or {}).items()]
    path = os.fspath(ckpt_file_name)
    if not path.endswith(".ckpt"):
        path += ".ckpt"
    _core.write_checkpoint(path, entries)


def _prefixes(prefix, argument):
    if prefix is None:
        return ()
    prefixes = (prefix,) if isinstance(prefix, str) else tuple(prefix)
    if not all(isinstance(p, str) and p for p in prefixes):
        raise TypeError(f"load_checkpoint: {argument} must be a non-empty str or a list or "
                        f"tuple of them, not {prefix!r}")
    return prefixes


def _name_filter(filter_prefix, specify_prefix, choice_func):
    """Which names load_checkpoint keeps; either prefix argument overrides choice_func."""
    if filter_prefix is None and specify_prefix is None:
        return choice_func or (lambda name: True)
    dropped = _prefixes(filter_prefix, "filter_prefix")
    only = _prefixes(specify_prefix, "specify_prefix")
    return lambda name: not name.startswith(dropped) and (not only or name.startswith(only))


def load_checkpoint(ckpt_file_name, net=None, strict_load=False, filter_prefix=None,
                    dec_key=None, dec_mode="AES-GCM", specify_prefix=None, choice_func=None,
                    crc_check=False, remove_redundancy=False, format="ckpt"):
    """name -> Parameter (str for a text entry) of the .ckpt `ckpt_file_name`, in file order;
    with `net`, also loads them into it (load_param_into_net with strict_load).

    A CRC trailer is always checked when the file has one; crc_check=True also requires it
    (MindSpore writes none unless asked). filter_prefix drops names starting with it,
    specify_prefix keeps only those (each a str or a list of them); either overrides
    choice_func(name). A file that is not a valid checkpoint raises ValueError naming it."""
    _refuse("load_checkpoint", dec_key=dec_key is not None,
            remove_redundancy=bool(remove_redundancy), format=format != "ckpt")
    keep = _name_filter(filter_prefix, specify_prefix, choice_func)
    path = os.fspath(ckpt_file_name)
    parameter_dict = OrderedDict()
    for name, value in _core.read_checkpoint(path, require_crc=crc_check):
        if keep(name):
            parameter_dict[name] = value if isinstance(value, str) else Parameter(value, name)
    if not parameter_dict:
        raise ValueError(f"load_checkpoint: {path}: no parameter left to load after "
                         "filter_prefix, specify_prefix and choice_func")
    if net is not None:
        load_param_into_net(net, parameter_dict, strict_load)
    return parameter_dict


def _set_value(param, value, strict_load):
    """Loads `value` into `param`: same shape; another dtype only of the same kind (float into
    float, int into int), and only without strict_load, as MindSpore converts."""
    array = Tensor(value).asnumpy()
    if tuple(array.shape) != tuple(param.shape):
        raise ValueError(f"load_param_into_net: parameter '{param.name}' has shape "
                         f"{list(param.shape)} in the net, {list(array.shape)} in parameter_dict")
    wanted = np.dtype(param.dtype.numpy_type)
    if array.dtype != wanted and (strict_load or array.dtype.kind != wanted.kind):
        raise ValueError(f"load_param_into_net: parameter '{param.name}' is {param.dtype} in "
                         f"the net, {array.dtype} in parameter_dict")
    param.set_data(array.astype(wanted))


def _load_under_prefix(params, parameter_dict, param_not_load, used):
    """Without strict_load, MindSpore also matches names the dict holds under one more prefix
    (a file saved from a wrapper Cell: "network.fc1.weight" for "fc1.weight"): the first dict
    name ending in a name not loaded gives the prefix, under which every name is tried."""
    while param_not_load:
        prefix = next((key[:-len(name)] for name in param_not_load for key in parameter_dict
                       if key.endswith(name)), None)
        if prefix is None:
            return
        for name in [n for n in param_not_load if prefix + n in parameter_dict]:
            _set_value(params[name], parameter_dict[prefix + name], strict_load=False)
            param_not_load.remove(name)
            used.add(prefix + name)


def load_param_into_net(net, parameter_dict, strict_load=False, remove_redundancy=False):
    """Sets each parameter of `net` to its value in `parameter_dict` (name -> Parameter, Tensor
    or array, as load_checkpoint returns); returns (param_not_load, ckpt_not_load): the names in
    the net that found no value, and those in the dict that found no parameter. A shape that
    differs raises ValueError naming the parameter and both shapes."""
    _refuse("load_param_into_net", remove_redundancy=bool(remove_redundancy))
    if not isinstance(net, Cell):
        raise TypeError(f"load_param_into_net: net must be a Cell, not {type(net).__name__}")
    if not isinstance(parameter_dict, dict):
        raise TypeError("load_param_into_net: parameter_dict must be a dict, not "
                        f"{type(parameter_dict).__name__}")
    params = net.parameters_dict()
    param_not_load = []
    for name, param in params.items():
        if name in parameter_dict:
            _set_value(param, parameter_dict[name], strict_load)
        else:
            param_not_load.append(name)
    used = set(params) - set(param_not_load)
    if not strict_load:
        _load_under_prefix(params, parameter_dict, param_not_load, used)
    return param_not_load, [key for key in parameter_dict if key not in used]
