"""Validation of a run record against its scenario (simulator.md §7).

``shape`` checks types and key sets of each part as it is read; ``stage1``
the compatibility of header and scenario; ``stage2`` the consistency of each
transition (record data only); ``replay`` drives the simulator (stage 3).
"""
