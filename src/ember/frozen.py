"""Read-only lists: what a public ``Simulator`` hands out and keeps sharing.

A policy may edit the observation it is given, and a caller the step it
got back; neither may change what the simulator hands out next (the next
observation, later snapshots, the final state).  Instead of fresh copies
of every burning cell each step, the simulator hands out the same burning
list and cell lists step after step and makes them refuse changes: a
``FrozenList`` is a ``list`` (``isinstance``, ``==``, JSON encoding and the
record bytes are those of a plain one) whose every mutating method and
operator raises ``TypeError``.  A copy (``list(x)``, ``x.copy()``, a slice,
``copy.copy``, ``copy.deepcopy``, pickling) is a plain list, the caller's
to change.

What is not defended: a caller that goes around the type on purpose, by
calling the base class's slots on the object (``list.__setitem__(x, ...)``)
or through ``ctypes``; that is no longer editing an observation.

Made with ``frozen_list`` (C-level calls); calling the class, or
``__init__`` on an existing one, is refused like any other change.
"""

_new_list = list.__new__
_extend = list.extend


def _refuse(self, *args, **kwargs):
    raise TypeError(
        f"this {type(self).__name__} is read-only: the simulator shares it between steps; "
        "change a copy (list(value)) instead."
    )


class FrozenList(list):
    """A ``list`` that refuses every change (see the module doc)."""

    __slots__ = ()

    __init__ = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self):
        return (list, (list(self),))


class BurningCells(FrozenList):
    """The burning list of a snapshot, with the ``SortedCells`` that made it (``source``).

    Successive burning lists of one source only ever grow by insertions
    and never change, so a policy tracking the burning set need not check
    one against the previous (``policies._BurningTracker``).
    """

    __slots__ = ("source",)


class SharedCells(list):
    """The burning list of a ``Simulator(shared_lists=True)``, with the ``SortedCells`` that made it
    (``source``): a plain, changeable list (its callers promised not to change it), which tells a
    policy tracking the burning set where it came from, as ``BurningCells`` does; a copy or a
    pickle is a plain list."""

    __slots__ = ("source",)

    def __reduce__(self):
        return (list, (list(self),))


def frozen_list(items, cls=FrozenList):
    """A ``FrozenList`` (or ``cls``) of ``items``."""
    value = _new_list(cls)
    _extend(value, items)
    return value


def frozen_lists(rows):
    """A plain list of one ``FrozenList`` per item of ``rows`` (each an iterable), made in one call."""
    made = []
    for items in rows:
        value = _new_list(FrozenList)
        _extend(value, items)
        made.append(value)
    return made
