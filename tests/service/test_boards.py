"""A board as the service reads it (service.md §2, §4): parsed once per version, and one lock per transaction
for as many audit entries as it appends, on SQLite and PostgreSQL."""

from ember.results.log import check_log_entries
from ember.service import audit
from ember.service.boards import load_board
from ember.service.registry import open_service


def test_a_board_is_parsed_again_only_when_its_version_changes(service):
    _, db = open_service(service.data)
    try:
        with db.transaction(read=True) as connection:
            first = load_board(connection, "office")
            again = load_board(connection, "office")
        assert again is first and first.version == 1
        with db.transaction() as connection:
            audit.append(connection, first.id, "reverify", data={"note": "a new version"})
        with db.transaction(read=True) as connection:
            changed = load_board(connection, "office")
        assert changed is not first and changed.version == 2 and first.version == 1
        assert changed.public()["scenarios"] == first.public()["scenarios"]
    finally:
        db.dispose()


def test_entries_appended_under_one_lock_chain_as_entries_appended_one_by_one(service):
    _, db = open_service(service.data)
    try:
        with db.transaction(read=True) as connection:
            board_id = load_board(connection, "office").id
        with db.transaction() as connection:
            locked = audit.lock_board(connection, board_id)
            seqs = [locked.append("reverify", data={"n": n}) for n in range(3)]
        with db.transaction() as connection:
            seqs.append(audit.append(connection, board_id, "reverify", data={"n": 3}))
        assert seqs == [2, 3, 4, 5]
        with db.transaction(read=True) as connection:
            lines = audit.entries(connection, board_id)
            version = load_board(connection, "office").version
        entries, problems = check_log_entries(lines)
        assert problems == [] and [entry["seq"] for entry in entries] == [1, 2, 3, 4, 5] and version == 5
    finally:
        db.dispose()
