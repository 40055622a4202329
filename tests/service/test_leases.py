"""Leases (service/leases.py) on both databases: one process holding a lease says so from every thread.

A serve parent's Bounder and Deriver ask for the same board's lease at the
same moment; both must hear True (the lease is this process's), never one
of them False because the other thread's insert won.
"""

import threading

from ember.service import leases
from ember.service.registry import init_service, open_service


def test_two_threads_of_one_process_asking_for_a_free_lease_both_hold_it(tmp_path, database):
    data = str(tmp_path / "DATA")
    init_service(data, database)
    _, db = open_service(data)
    held = leases.Leases(db, lease_s=60)
    try:
        for round_ in range(40):
            name = f"board-{round_}"
            start = threading.Barrier(2)
            answers = []

            def ask(name=name, start=start, answers=answers):
                start.wait()
                answers.append(held.hold(leases.BOARD, name))

            threads = [threading.Thread(target=ask) for _ in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert answers == [True, True], f"round {round_}: {answers}"
            assert leases.holder_of(db, leases.BOARD, name)[0] == held.holder
            assert (leases.BOARD, name) in held.held
    finally:
        held.close()
        db.dispose()
