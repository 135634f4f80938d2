"""User-facing errors: printed as one line by the CLI, never as a traceback."""


class UserError(Exception):
    """Bad input from the user (a params key, a name, a file). The message is one line."""


def unknown_name(key: str, value: object, allowed: list[str] | tuple[str, ...]) -> UserError:
    """The error for a name that is not in a registry, naming the key and the allowed values."""
    return UserError(f"{key}: unknown value {value!r}; allowed: {', '.join(sorted(allowed))}")
