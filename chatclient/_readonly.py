"""A dict that refuses every change: for a value many readers share.

Two things are handed to many readers at once: the ``extra`` of a reply metadata shared by every
reply with the same finish reason (``responses.shared_generation_metadata``), and the metadata of a
message in the memory's decode cache, which every reader of the conversation gets
(``memory._frozen``). A reader that changed such a dict would change it for all the others.
"""

from __future__ import annotations

import copy
from typing import Any, NoReturn

__all__ = ["ReadOnlyDict"]

_HINT = (
    "Cannot modify: this dict is read-only because it is shared (by every reply with the same finish reason, "
    "or by every reader of a conversation's history); copy it first: dict(value), or model_copy(deep=True) "
    "of the model that holds it"
)


def _refuse(*_: object, **__: object) -> NoReturn:
    raise TypeError(_HINT)


class ReadOnlyDict(dict[str, Any]):
    """A ``dict`` that refuses every change; equal to, and serialised as, the plain dict.

    Built by ``dict``'s own constructor (C, no Python call); only a deliberate
    ``dict.__setitem__(d, ...)`` or ``d.__init__(...)`` gets past it. Every copy (``dict(d)``,
    ``d.copy()``, ``{**d}``, ``d | {}``, ``copy.copy``, ``copy.deepcopy``, pickling) is an ordinary,
    mutable dict: it is no longer shared.
    """

    __slots__ = ()

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {key: copy.deepcopy(value, memo) for key, value in self.items()}
