"""``GET /healthz`` and ``GET /metrics`` (service.md §9) on a real ``serve`` with two server processes."""

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from helpers.service import PostgresCluster, Service, ember, record_of


def samples(url):
    answer = httpx.get(f"{url}/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    found = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_metrics_count_every_request_of_every_server_process_by_route_and_status(tmp_path, runs):
    service = Service(str(tmp_path))
    server = service.serve(workers=2)
    try:
        assert httpx.get(f"{server.url}/healthz").text == "ok\n"
        for _ in range(10):
            assert httpx.get(f"{server.url}/api/boards/office").status_code == 200
        for _ in range(3):
            assert httpx.get(f"{server.url}/api/boards/nothing").status_code == 404
        for _ in range(2):
            assert httpx.get(f"{server.url}/no/such/path").status_code == 404
        found = samples(server.url)
        assert found[("ember_requests_total", (("route", "board_json"), ("status", "200")))] == 10.0
        assert found[("ember_requests_total", (("route", "board_json"), ("status", "404")))] == 3.0
        assert found[("ember_requests_total", (("route", "none"), ("status", "404")))] == 2.0
        assert found[("ember_requests_total", (("route", "healthz"), ("status", "200")))] == 1.0
        assert found[("ember_verifications_in_progress", ())] == 0.0
        assert {k: v for k, v in found.items() if k[0] == "ember_jobs"} == {
            ("ember_jobs", (("state", state),)): 0.0 for state in ("queued", "running", "done", "failed")
        }
        # An upload's body bytes are counted as they arrive: the records sent, byte for byte.
        results, policy = runs["alpha"]
        ember("submit", server.url, "office", "--token-file", service.token_file("alpha"), "--policy", policy, results)
        sent = sum(len(record_of(results, policy, seed)) for seed in (0, 1))
        found = samples(server.url)
        assert found[("ember_upload_bytes_total", (("route", "put_episode"),))] == float(sent)
        assert found[("ember_requests_total", (("route", "put_episode"), ("status", "201")))] == 2.0
        # A restart starts the counters afresh: each serve's own.
        server.stop()
        server = service.serve(workers=2)
        assert ("ember_requests_total", (("route", "board_json"), ("status", "200"))) not in samples(server.url)
    finally:
        service.close()


def test_healthz_says_when_the_database_is_down_and_metrics_still_answer(tmp_path):
    cluster = PostgresCluster()
    service = Service(str(tmp_path), cluster.database())
    try:
        server = service.serve()
        assert httpx.get(f"{server.url}/healthz").status_code == 200
        cluster.stop()
        try:
            down = httpx.get(f"{server.url}/healthz", timeout=30)
            assert down.status_code == 503 and down.json() == {"error": "the database is unavailable"}
            assert down.headers["retry-after"]
            found = samples(server.url)
            assert ("ember_requests_total", (("route", "healthz"), ("status", "503"))) in found
            assert not any(name == "ember_jobs" for name, _ in found)
        finally:
            cluster.start()
        assert httpx.get(f"{server.url}/healthz").status_code == 200
    finally:
        service.close()
        cluster.close()


@pytest.mark.parametrize("path", ["/healthz", "/metrics"])
def test_health_and_metrics_name_no_board_set_or_team(tmp_path, path):
    service = Service(str(tmp_path))
    try:
        server = service.serve()
        httpx.get(f"{server.url}/api/boards/office")
        text = httpx.get(f"{server.url}{path}").text
        assert "office" not in text and "alpha" not in text and "live" not in text and "final" not in text
    finally:
        service.close()
