"""Copies are not submissions (service.md §9): a record accepted on the board under one team's submission is
refused for every other team, even when sent at the same moment; a withdrawn submission's records are freed."""

import concurrent.futures
import gzip
import threading

import httpx

from helpers.service import record_of


def new_submission(client, policy="p"):
    response = client.post("/api/boards/office/submissions", json={"policy": policy})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def copy_of(policy):
    return {"error": f"a copy of a record accepted for {policy}"}


def put(client, submission, body, seed=0):
    return client.put(f"/api/submissions/{submission}/episodes/office-floor/{seed}", content=body)


def missing(client, submission):
    return client.get(f"/api/submissions/{submission}").json()["missing"]


def test_another_teams_copy_is_409_naming_the_owner_and_the_key_stays_missing(service, runs):
    service.serve()
    record = record_of(runs["alpha"][0], "greedy", 0)
    with service.client("alpha") as alpha, service.client("beta") as beta:
        mine, theirs = new_submission(alpha, "greedy"), new_submission(beta, "mine")
        assert put(alpha, mine, record).status_code == 201
        # Open or closed, gzip or plain (the same decompressed SHA-256): a copy.
        for body in (record, gzip.decompress(record)):
            refused = put(beta, theirs, body)
            assert (refused.status_code, refused.json()) == (409, copy_of("alpha.greedy"))
        assert missing(beta, theirs) == [["office-floor", 0], ["office-floor", 1]]
        assert put(alpha, mine, record_of(runs["alpha"][0], "greedy", 1), seed=1).status_code == 201
        assert alpha.post(f"/api/submissions/{mine}/close").status_code == 200
        refused = put(beta, theirs, record)
        assert (refused.status_code, refused.json()) == (409, copy_of("alpha.greedy"))
        assert missing(beta, theirs) == [["office-floor", 0], ["office-floor", 1]]
        # Its own record is beta's to send.
        assert put(beta, theirs, record_of(runs["beta"][0], "stay", 0)).status_code == 201


def test_the_same_teams_record_is_200_in_its_submission_and_201_in_another(service, runs):
    service.serve()
    record = record_of(runs["alpha"][0], "greedy", 0)
    with service.client("alpha") as alpha:
        first, second = new_submission(alpha, "a"), new_submission(alpha, "b")
        accepted = put(alpha, first, record)
        assert accepted.status_code == 201
        again = put(alpha, first, gzip.decompress(record))
        assert (again.status_code, again.json()) == (200, accepted.json())
        other = put(alpha, second, record)
        assert other.status_code == 201 and other.json()["policy"] == "alpha.b"
        assert other.json()["record_sha256"] == accepted.json()["record_sha256"]


def test_a_withdrawn_submissions_records_are_freed(service, runs):
    service.serve()
    record = record_of(runs["alpha"][0], "greedy", 0)
    with service.client("alpha") as alpha, service.client("beta") as beta, service.client("gamma") as gamma:
        first, second = new_submission(alpha, "a"), new_submission(alpha, "b")
        assert put(alpha, first, record).status_code == 201
        assert put(alpha, second, record).status_code == 201
        assert alpha.post(f"/api/submissions/{first}/withdraw").status_code == 200
        # The team's other submission holds it still: it is now the owner.
        theirs = new_submission(beta)
        refused = put(beta, theirs, record)
        assert (refused.status_code, refused.json()) == (409, copy_of("alpha.b"))
        assert alpha.post(f"/api/submissions/{second}/withdraw").status_code == 200
        assert put(beta, theirs, record).status_code == 201
        refused = put(gamma, new_submission(gamma), record)
        assert (refused.status_code, refused.json()) == (409, copy_of("beta.p"))


def test_two_teams_sending_one_record_at_once_one_wins(service, runs):
    service.serve(workers=2)
    record = record_of(runs["alpha"][0], "greedy", 0)
    teams = ("alpha", "beta")
    with service.client("alpha") as alpha, service.client("beta") as beta:
        submissions = {"alpha": new_submission(alpha), "beta": new_submission(beta)}
    ready = threading.Barrier(len(teams))

    def send(team):
        with httpx.Client(base_url=service.server.url, headers=service.headers(team), timeout=60) as client:
            ready.wait()
            return team, put(client, submissions[team], record)

    with concurrent.futures.ThreadPoolExecutor(len(teams)) as pool:
        answers = dict(pool.map(send, teams))
    statuses = sorted(answer.status_code for answer in answers.values())
    assert statuses == [201, 409], [(team, a.status_code, a.text) for team, a in answers.items()]
    (winner,) = [team for team, answer in answers.items() if answer.status_code == 201]
    (loser,) = [team for team in teams if team != winner]
    assert answers[loser].json() == {"error": f"a copy of a record accepted for {winner}.p"}
    with service.client(loser) as client:
        assert missing(client, submissions[loser]) == [["office-floor", 0], ["office-floor", 1]]
