"""Arguments of MindSpore's API that Lockstep does not support: refused by name, never ignored,
since ignoring one would read other data than the script asks for."""


def require_default(where, **arguments):
    """Raises ValueError naming the first argument, given as name=(value, default), whose value
    is not its default."""
    for name, (value, default) in arguments.items():
        if value is not default and value != default:
            raise ValueError(f"{where}: {name}={value!r} is not supported; leave it at {default!r}")


def keyword_arguments(where, kwargs, defaults):
    """Checks MindSpore's **kwargs of `where`: an unknown name is a TypeError, as Python's own
    arguments are; a known one must be at its default."""
    unknown = sorted(set(kwargs) - set(defaults))
    if unknown:
        raise TypeError(f"{where}() got unexpected keyword arguments {unknown}")
    require_default(where, **{name: (value, defaults[name]) for name, value in kwargs.items()})
