"""`rnmt serve` under a flood beyond its queue, and SIGTERM with requests in flight."""

from __future__ import annotations

from tests.support import load_benchmark

# -- live: a flood beyond the queue, SIGTERM with requests in flight ----------------------

def load_flood():
    return load_benchmark("serve_flood")


def test_a_flood_beyond_the_queue_is_answered_and_memory_stays_bounded(tiny_run):
    result = load_flood().run_flood(str(tiny_run), 200, client_timeout=60)
    assert result["answered"] == 200 and result["hung"] == 0 and not result["connection_errors"]
    assert result["unexpected_statuses"] == [] and result["not_json"] == 0
    assert result["statuses"].get("503", 0) > 0 and result["statuses"].get("200", 0) > 0
    if result["peak_rss_mb_before"] is not None:
        assert result["peak_rss_mb"] - result["peak_rss_mb_before"] < 200


def test_sigterm_with_requests_in_flight_answers_every_request(tiny_run):
    result = load_flood().run_flood(str(tiny_run), 60, sigterm=True, client_timeout=60)
    assert result["answered"] == 60 and result["hung"] == 0 and not result["connection_errors"]
    assert result["unexpected_statuses"] == [] and result["not_json"] == 0
    assert result["exited"] is True
