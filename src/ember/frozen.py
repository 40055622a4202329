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


# -- the burning list sent as insertions (``burning_added``): both sides, one rule ------------------
#
# The agent side (``ember.agent``) finds the insertions; the python-policy host merges them back.  Here,
# in Base, because the host imports nothing heavier: it starts once per episode of a python policy.


def burning_insertions(previous, current):
    """[[index, row, col], ...]: the cells of ``current`` that are not in ``previous``, with their index in
    ``current``, when ``current`` is ``previous`` with those inserted (the burning list only grows); else None.

    A simulator sharing its lists keeps the old cells' lists from step to step and makes new ones
    for new fire, so each insertion is found by a binary search on identity (O(k log n) for k new
    cells); the result is then checked by rebuilding ``current`` (one comparison, in C), so a list
    that changed otherwise, or fresh lists, give None: the caller sends the whole list.
    """
    extra = len(current) - len(previous)
    if extra < 0:
        return None
    found, low, offset = [], 0, 0
    while len(found) < extra:
        high = len(previous) + offset
        while low < high:
            middle = (low + high) // 2
            if current[middle] is previous[middle - offset]:
                low = middle + 1
            else:
                high = middle
        found.append(low)
        offset += 1
        low += 1
    if _inserted(previous, [(index, current[index]) for index in found]) != current:
        return None
    return [[index, *current[index]] for index in found]


def merge_added(previous, added):
    """The burning list: ``previous`` with each ``[index, row, col]`` of ``added`` (``burning_insertions``)
    inserted at its index (a plain list of ``previous``'s cell objects and new read-only cells)."""
    cells = frozen_lists([(row, col) for _, row, col in added])
    return _inserted(previous, [(index, cell) for (index, _, _), cell in zip(added, cells)])


def _inserted(previous, placed):
    """A new list: ``previous`` with each ``(index, item)`` of ``placed`` (ascending indexes, each its
    index in the result) inserted; one insertion rule for both sides of ``burning_added``."""
    merged, at = [], 0
    for index, item in placed:
        take = index - len(merged)
        merged += previous[at : at + take]
        at += take
        merged.append(item)
    merged += previous[at:]
    return merged
