"""The derived files keep up (service.md §3): computed once per board version, at the newest one, from what the
deriver kept of the last; always the bytes ``ember rank`` and ``ember stats`` give on the export's rows."""

import json
import os
import shutil

import httpx
import pytest

from ember.service import derived, operator
from ember.service.boards import load_board
from ember.service.registry import open_service

from helpers.service import ember, record_of, wait_for
from helpers.strict import assert_same_json


def served(server, name, version):
    """The API's ``name`` once derived from board version ``version``."""

    def ready():
        answer = httpx.get(f"{server.url}/api/boards/office/{name}", timeout=30)
        if answer.status_code == 200 and answer.headers["ember-board-version"] == str(version):
            return answer.content
        return None

    return wait_for(ready, timeout=120, what=f"{name} at version {version}")


def version_of(server):
    return httpx.get(f"{server.url}/api/boards/office", timeout=30).json()["version"]


def same_as_the_batch_commands(service, server, tmp_path, step, ranked):
    """The served ranking.json, statistics.json and episodes.jsonl are the export's, byte for byte, and
    ``ember rank`` / ``ember stats`` on the export give them (compared type-strictly too)."""
    version = version_of(server)
    ranking = served(server, "ranking.json", version)
    statistics = served(server, "statistics.json", version)
    episodes = served(server, "episodes.jsonl", version)
    export = os.path.join(str(tmp_path), f"export-{step}")
    ember("service", "export", service.data, "office", "-o", export)
    rank = ember("rank", export).stdout.encode()
    stats = ember("stats", export).stdout.encode()
    assert ranking == rank and statistics == stats, step
    assert_same_json(json.loads(ranking), json.loads(rank))
    assert_same_json(json.loads(statistics), json.loads(stats))
    with open(os.path.join(export, "episodes.jsonl"), "rb") as handle:
        assert episodes == handle.read(), step
    with open(os.path.join(export, "ranking.json"), "rb") as handle:
        assert handle.read() == ranking, step
    assert sorted(entry["policy"] for entry in json.loads(ranking)["ranked"]) == sorted(ranked), step
    return version


def upload(client, submission, results, policy, seeds):
    for seed in seeds:
        put = client.put(
            f"/api/submissions/{submission}/episodes/office-floor/{seed}", content=record_of(results, policy, seed)
        )
        assert put.status_code == 201, put.text


def test_every_close_and_withdrawal_is_served_as_rank_and_stats_give_it(service, runs, tmp_path):
    """A sequence of closes in an order that puts a later close's rows before an earlier one's in the export
    (gamma uploads first, closes last), an upload to an open submission (a version with the same numbers),
    a withdrawal: after each, the served files are the batch commands' bytes on the export's rows."""
    server = service.serve()
    clients = {team: service.client(team) for team in ("alpha", "beta", "gamma")}
    try:
        made = {
            team: clients[team].post("/api/boards/office/submissions", json={"policy": runs[team][1]}).json()["id"]
            for team in clients
        }
        upload(clients["gamma"], made["gamma"], *runs["gamma"], (0, 1))
        upload(clients["alpha"], made["alpha"], *runs["alpha"], (1, 0))
        assert clients["alpha"].post(f"/api/submissions/{made['alpha']}/close").status_code == 200
        first = same_as_the_batch_commands(service, server, tmp_path, "alpha", ["alpha.greedy"])
        upload(clients["beta"], made["beta"], *runs["beta"], (0,))  # an open submission's row: no new number
        again = same_as_the_batch_commands(service, server, tmp_path, "beta-open", ["alpha.greedy"])
        assert again == first + 1
        upload(clients["beta"], made["beta"], *runs["beta"], (1,))
        assert clients["beta"].post(f"/api/submissions/{made['beta']}/close").status_code == 200
        same_as_the_batch_commands(service, server, tmp_path, "beta", ["alpha.greedy", "beta.stay"])
        assert clients["gamma"].post(f"/api/submissions/{made['gamma']}/close").status_code == 200
        everyone = ["alpha.greedy", "beta.stay", "gamma.random"]
        same_as_the_batch_commands(service, server, tmp_path, "gamma", everyone)
        # gamma's rows came first: the export's rows are in log order, not in the order of the closes.
        episodes = served(server, "episodes.jsonl", version_of(server))
        assert [json.loads(line)["policy"] for line in episodes.splitlines()][:2] == ["gamma.random"] * 2
        assert clients["beta"].post(f"/api/submissions/{made['beta']}/withdraw").status_code == 200
        same_as_the_batch_commands(service, server, tmp_path, "withdraw", ["alpha.greedy", "gamma.random"])
    finally:
        for client in clients.values():
            client.close()


def _rows_through_a_server(service, runs):
    """alpha and beta closed, gamma's submission open with one row; then the server stopped."""
    server = service.serve()
    for team in ("alpha", "beta"):
        results, policy = runs[team]
        ember("submit", server.url, "office", "--token-file", service.token_file(team), "--policy", policy, results)
    with service.client("gamma") as gamma:
        submission = gamma.post("/api/boards/office/submissions", json={"policy": "random"}).json()["id"]
        upload(gamma, submission, *runs["gamma"], (0,))
    server.stop()
    service.server = None


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_a_rush_costs_one_computation_and_an_unchanged_ranking_none(service, runs, monkeypatch):
    """The deriver computes at the board's newest version only (however many versions came since), keeps
    one state per board (no version's), and a version whose ranked rows did not change computes nothing."""
    _rows_through_a_server(service, runs)
    config, db = open_service(service.data)
    try:
        shutil.rmtree(config.derived)  # as if the server had been too busy to derive any of those versions
        computed = []
        original = derived.OpenTrack.numbers
        monkeypatch.setattr(
            derived.OpenTrack, "numbers", lambda self, *a, **k: computed.append(self.seq) or original(self, *a, **k)
        )
        deriver = derived.Deriver(config, db)
        with db.transaction(read=True) as connection:
            newest = load_board(connection, "office").version
        assert newest == 1 + 2 * 3 + 1  # board, two submissions of two rows and a close, gamma's row
        assert deriver.derive_board("office") == newest
        assert computed == [newest]  # one computation, at the newest version
        state = deriver.tracks["office"]
        assert sorted(state.rows) == [("alpha", "greedy"), ("beta", "stay"), ("gamma", "random")]
        assert sum(len(rows) for rows in state.rows.values()) == 5
        assert list(state.ranked) == [("alpha", "greedy"), ("beta", "stay")]
        first = derived.latest(config, "office")
        assert first[0] == newest
        # Nothing new: nothing computed, nothing written.
        assert deriver.derive_board("office") == newest and computed == [newest]
        # A version with the same ranked rows (a team disabled: a log entry on every board): its files are
        # the last computed ones, hard-linked.
        operator.disable_team(db, "gamma")
        assert deriver.derive_board("office") == newest + 1 and computed == [newest]
        second = derived.latest(config, "office")
        assert second[0] == newest + 1
        for name in derived.OPEN_FILES:
            assert os.stat(os.path.join(first[1], name)).st_ino == os.stat(os.path.join(second[1], name)).st_ino
        # A withdrawal changes the ranked rows: computed again, the kept totals and values of the other policy
        # reused, and the bytes are still the batch commands' on the export.
        _, listed = operator.listing(db, "submissions", board="office")
        operator.withdraw(db, next(row[0] for row in listed if row[2] == "beta"))
        assert deriver.derive_board("office") == newest + 2 and computed == [newest, newest + 2]
        assert list(state.ranking_totals) == ["alpha.greedy"]
        third = derived.latest(config, "office")[1]
        export = os.path.join(service.root, "export")
        ember("service", "export", service.data, "office", "-o", export)
        for command, name in (("rank", "ranking.json"), ("stats", "statistics.json")):
            with open(os.path.join(third, name), "rb") as handle:
                assert handle.read() == ember(command, export).stdout.encode(), name
            # The derived version is itself a results directory the batch commands read.
            with open(os.path.join(third, name), "rb") as handle:
                assert handle.read() == ember(command, third).stdout.encode(), name
        # An export of a derived version copies its numbers (same campaign.json and episodes.jsonl bytes);
        # without one it computes them: the same bytes either way.
        from ember.service import export as exporting

        ran = []
        original_numbers = exporting.derived_numbers
        monkeypatch.setattr(exporting, "derived_numbers", lambda *a: ran.append(a) or original_numbers(*a))
        copied = os.path.join(service.root, "copied")
        exporting.export_board(db, config, "office", copied)
        assert ran == []
        shutil.rmtree(config.derived)
        computed_export = os.path.join(service.root, "computed")
        exporting.export_board(db, config, "office", computed_export)
        assert len(ran) == 1
        for name in ("campaign.json", "episodes.jsonl", "ranking.json", "statistics.json"):
            with open(os.path.join(copied, name), "rb") as one, open(os.path.join(computed_export, name), "rb") as two:
                assert one.read() == two.read(), name
        deriver.derive_board("office")  # a deriver that lost its folders makes the newest version again
        assert derived.latest(config, "office")[0] == newest + 2
        # Versions are pruned: the kept state is the board's, the folders on disk at most KEEP.
        assert len([e for e in os.listdir(derived.board_folder(config, "office")) if e.isdigit()]) <= derived.KEEP
    finally:
        db.dispose()
