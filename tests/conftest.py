"""pytest's conftest for the whole suite: fixtures and hooks only.

Shared plain helpers live in ``tests/helpers/`` (``from helpers.scenarios
import make_scenario``); this file's directory is on ``sys.path`` (pytest's
default "prepend" import mode), which is what makes ``helpers`` importable
from every test folder.

``basic_run`` is one results directory of the BASIC campaign, evaluated
once a session; ``basic_copy`` a private copy of it (the campaign tests and
the results writer's tests both resume it).

The markers of ``pyproject.toml`` are given here, by what a test uses, so
that no test file carries them: ``pytest -m "not slow"`` is the fast tier
(README.md), ``-m "not postgres and not browser"`` leaves out what needs
PostgreSQL or Chromium.
"""

import compileall
import os
import shutil

import pytest

import ember

from helpers.campaigns import BASIC, ember_cli, write_campaign

# Fixtures that start a throw-away PostgreSQL cluster (tests/service/conftest.py) or Chromium (helpers.browser).
POSTGRES_FIXTURES = frozenset({"postgres"})
BROWSER_FIXTURES = frozenset({"browser", "chromium_path"})
# The backend parameter of the service fixtures (``database``, ``board``): this value makes them ask for
# ``postgres`` at run time, which ``item.fixturenames`` cannot show.
POSTGRES_PARAMETER = "postgresql"

# Test modules (or single tests, as node-id prefixes) that run policies in the bubblewrap sandbox: the sandbox's
# own tests, and those whose campaigns, runs or hidden jobs start it.
SANDBOX = (
    "tests/isolation/",
    "tests/campaign/test_episode.py",
    "tests/campaign/test_export.py",
    "tests/cli/test_run_python.py",
    "tests/results/test_rows.py",  # the kept campaign of tests/results/conftest.py has python policies
    "tests/results/test_writer.py",
    "tests/results/test_writer_spelling.py",  # an agent policy
    "tests/service/test_data_directory.py",
    "tests/service/test_hidden",  # the hidden track's jobs run the teams' code in the sandbox
    "tests/service/test_daily_limits.py",
    "tests/service/test_no_zombies.py",
    "tests/service/test_operator_commands.py::test_a_job_run_again",
    "tests/service/test_participant_status.py::test_jobs",
    "tests/cli/test_commands.py",  # the samples' service has a done hidden job
    "tests/service/test_bundle_tools.py::test_check_runs",
    "tests/service/test_cluster_jobs.py",  # hidden jobs on Dask workers, in the sandbox
    "tests/service/test_two_hosts.py",  # two hosts' hidden jobs run in the sandbox
    "tests/test_agent.py",
)

# Tests that take about 2 s or more each, as node-id prefixes: a module (when half of its tests or more are
# slow) or one test (all of its parameters).  Measured on 2026-12-02, each test's setup, call and teardown, on
# the shared 2-core machine under load; the service modules marked below start a real server with its
# database (and PostgreSQL, or hidden-track jobs in the sandbox) in every test, which took 70-300 s a test
# there.  Re-measure (``pytest tests/FOLDER --durations=0``) and edit this list when a test grows or shrinks.
SLOW = (
    "tests/bounds/test_brute_force.py::test_bounds_equal_the_brute_force",
    "tests/campaign/test_bounds_file.py",
    "tests/campaign/test_code.py",
    "tests/campaign/test_episode.py",
    "tests/campaign/test_episode_submitted.py",
    "tests/campaign/test_evaluate.py",
    "tests/campaign/test_evaluate_faults.py",
    "tests/campaign/test_evaluate_resume.py",
    "tests/campaign/test_evaluate_runner.py",
    "tests/campaign/test_evaluate_summary.py",
    "tests/campaign/test_export.py",
    "tests/campaign/test_links.py",
    "tests/campaign/test_runner.py",
    "tests/campaign/test_runner_dask_processes.py",
    "tests/campaign/test_spec.py",
    "tests/campaign/test_spec_bounds.py::test_a_campaign_too_large_is_refused_up_front",
    "tests/campaign/test_watch.py::test_a_policy_slowing_its_own_process_cannot_stall_embers_steps",
    "tests/campaign/test_watch.py::test_a_timed_out_episode_leaves_no_record_and_no_temporary_file",
    "tests/campaign/test_watch.py::test_an_agent_flooding_stderr_is_capped",
    "tests/checks/test_replay.py::test_a_record_leaving_the_fast_path_midway_measures_the_same",
    "tests/checks/test_replay.py::test_every_stage2_check_passes_on_random_episodes",
    "tests/checks/test_replay.py::test_fast_path_gives_the_metrics_of_the_strict_path",
    "tests/checks/test_replay_burning_lists.py",
    "tests/checks/test_replay_line.py",
    "tests/checks/test_stage2.py",
    "tests/cli/test_bad_records.py",
    "tests/cli/test_blas_threads.py",
    "tests/cli/test_bounds_command.py",
    "tests/cli/test_commands.py",
    "tests/cli/test_handlers.py",
    "tests/cli/test_interop.py",
    "tests/cli/test_metrics_summary.py",
    "tests/cli/test_pipes.py",
    "tests/cli/test_run_python.py",
    "tests/cli/test_standard_streams.py",
    "tests/cli/test_stats.py::test_real_process_prints_the_same_bytes",
    "tests/cli/test_stats.py::test_the_command_line_does_not_import_numpy_until_stats_runs",
    "tests/envs/test_envs.py::test_import_ember_pays_for_no_rl_library",
    "tests/envs/test_examples.py::test_committed_weights_beat_greedy_on_the_bottleneck",
    "tests/envs/test_examples.py::test_ember_evaluate_runs_the_example_campaign",
    "tests/generate/test_generate.py::test_every_generated_scenario_keeps_the_guarantees",
    "tests/generate/test_generate.py::test_multi_exit_puts_fire_next_to_an_exit",
    "tests/generate/test_stadium_limits.py",
    "tests/generate/test_suite.py::test_ember_suite_runs_without_any_extra",
    "tests/grid/test_fields.py",
    "tests/grid/test_grid.py::test_greedy_actions_match_recomputation",
    "tests/grid/test_grid.py::test_incremental_structures_match_recomputation",
    "tests/grid/test_lazy_fields.py",
    "tests/grid/test_manhattan.py",
    "tests/grid/test_reachability.py::test_the_first_flood_is_the_plain_per_cell_one",
    "tests/interop/test_examples.py",
    "tests/interop/test_pedpy.py::test_pedpy_reads_the_frame_rate_and_the_metres_of_any_scale",
    "tests/isolation/test_answer_bound.py",
    "tests/isolation/test_dask_workers.py",
    "tests/isolation/test_host.py",
    "tests/isolation/test_hostile_campaigns.py",
    "tests/metrics/test_compact_exposures.py",
    "tests/metrics/test_exact_sum.py",
    "tests/metrics/test_exposure_fields.py::test_both_fields_give_the_same_metrics_on_a_large_floor",
    "tests/metrics/test_exposure_floats.py",
    "tests/metrics/test_metrics.py::test_builtins_match_batch",
    "tests/record/test_compression.py::test_a_small_zstd_file_that_expands_hugely_is_refused",
    "tests/record/test_compression.py::test_cli_run_o_gz_then_metrics",
    "tests/record/test_compression.py::test_several_members_or_frames_are_one_stream",
    "tests/record/test_frontend_lines.py::test_a_step_line_longer_than_4_mib_takes_the_fast_path",
    "tests/record/test_guard.py",
    "tests/record/test_imports.py",
    "tests/record/test_layouts.py::test_every_step_is_taken_and_the_metrics_are_the_strict_paths",
    "tests/record/test_limits.py::test_a_quarter_million_people_with_64_character_ids_is_not_refused",
    "tests/record/test_limits.py::test_a_step_with_a_million_movements_is_refused_in_linear_time",
    "tests/record/test_limits.py::test_largest_part_bound_holds_for_records_the_simulator_writes",
    "tests/record/test_limits.py::test_regression_part_memory_was_not_proportional_to_the_scenario",
    "tests/record/test_output.py::test_a_campaigns_kept_records_come_from_the_one_opener",
    "tests/record/test_reader.py::test_every_proper_prefix_of_a_record_is_truncated_or_empty",
    "tests/record/test_reader.py::test_json_dumps_round_trips",
    "tests/record/test_reader.py::test_max_part_bytes_refuses_a_huge_part_while_reading_it",
    "tests/report/test_board_page.py",
    "tests/report/test_board_page_scale.py",
    "tests/report/test_report.py::test_a_campaign_with_public_seeds_says_so",
    "tests/report/test_report.py::test_cli_writes_the_page",
    "tests/report/test_report.py::test_free_text_is_escaped_and_odd_ids_are_plotted",
    "tests/report/test_report.py::test_page_is_self_contained",
    "tests/report/test_report.py::test_same_input_same_page",
    "tests/report/test_report.py::test_the_page_shows_the_statistics_of_the_same_b_and_seed",
    "tests/report/test_report_bounds.py",
    "tests/report/test_report_browser.py",
    "tests/report/test_report_streamed.py::test_the_streamed_page_is_the_page_of_the_rows_held_whole",
    "tests/results/test_bounds_file.py::test_a_file_of_every_key_is_read_back",
    "tests/results/test_bounds_file.py::test_real_bounds_are_never_beaten_and_the_table_shows_them",
    "tests/results/test_campaign_file.py::test_a_campaign_file_that_is_no_regular_file_is_refused_at_once",
    "tests/results/test_directory.py::test_a_row_longer_than_a_reader_reads_is_written_as_a_failed_row",
    "tests/results/test_directory.py::test_a_run_killed_during_its_first_writes_leaves_a_new_directory",
    "tests/results/test_layout.py::test_no_results_directory_name_is_spelled_outside_results",
    "tests/results/test_readers.py::test_a_file_that_is_no_regular_file_is_refused_at_once",
    "tests/results/test_rows.py::test_a_python_policys_controls_reach_no_output_raw",
    "tests/results/test_verify.py",
    "tests/results/test_verify_campaign.py",
    "tests/results/test_verify_files.py",
    "tests/results/test_writer.py",
    "tests/results/test_writer_spelling.py",
    "tests/results/test_writer_start.py",
    "tests/service/test_api.py",
    "tests/service/test_bad_input.py",  # starts real servers, databases or jobs
    "tests/service/test_board_page.py",  # starts real servers, databases or jobs
    "tests/service/test_boards.py",  # a PostgreSQL cluster and databases
    "tests/service/test_bundle_limits.py",  # starts real servers, databases or jobs
    "tests/service/test_bundles.py::test_many_members_under_the_member_limit_are_refused_when_their_sum_crosses_it",
    "tests/service/test_bundles.py::test_ten_to_the_fifth_members_are_refused_at_the_limit",
    "tests/service/test_check_commitment.py",
    "tests/service/test_client.py",
    "tests/service/test_cluster_jobs.py",  # a Dask cluster, a server and hidden jobs
    "tests/service/test_commands.py",  # starts real servers, databases or jobs
    "tests/service/test_copies.py",  # starts real servers, databases or jobs
    "tests/service/test_data_directory.py",
    "tests/service/test_database.py",  # starts real servers, databases or jobs
    "tests/service/test_derived.py",  # starts real servers, databases and the batch commands
    "tests/service/test_faults.py",  # starts real servers, databases or jobs
    "tests/service/test_hidden.py",  # starts real servers, databases or jobs
    "tests/service/test_hidden_attacks.py",  # starts real servers, databases or jobs
    "tests/service/test_hidden_jobs.py",  # starts real servers, databases or jobs
    "tests/service/test_hidden_secrecy.py::test_a_bundle_printing_its_fire_reaches_its_team_only_after_the_reveal",
    "tests/service/test_hidden_sets.py",  # starts real servers, databases or jobs
    "tests/service/test_known_keys.py",
    "tests/service/test_limits.py",  # starts real servers, databases or jobs
    "tests/service/test_log_head.py",
    "tests/service/test_bundle_tools.py::test_check_runs",
    "tests/service/test_daily_limits.py",  # starts real servers, databases or jobs
    "tests/service/test_health_and_metrics.py",  # starts real servers, databases or jobs
    "tests/service/test_no_zombies.py",  # starts real servers, databases or jobs
    "tests/service/test_operating_docs.py",  # starts real servers, databases or jobs
    "tests/service/test_operator_commands.py",  # starts real servers, databases or jobs
    "tests/service/test_participant_status.py",  # starts real servers, databases or jobs
    "tests/service/test_two_hosts.py",  # two servers, PostgreSQL and hidden jobs
    "tests/service/test_team_pages.py",  # starts real servers, databases or jobs
    "tests/service/test_team_add_from.py",  # starts real servers, databases and the commands
    "tests/service/test_phases.py",  # starts real servers and databases, waits for the clock to pass a phase
    "tests/sim/test_burning_text.py",
    "tests/sim/test_burning_tracker.py",
    "tests/sim/test_fire_draws.py",
    "tests/sim/test_fire_frontier.py",
    "tests/sim/test_frozen.py",
    "tests/sim/test_planner_lazy_fields.py",
    "tests/sim/test_policies.py::test_planner_beats_greedy_on_the_bottleneck_over_seeds_0_to_4",
    "tests/sim/test_scale_identity.py",
    "tests/sim/test_shared_lists.py",
    "tests/sim/test_simulator.py::test_builtin_scenarios_run_and_record",
    "tests/sim/test_simulator.py::test_greedy_matches_reference_on_random_scenarios",
    "tests/sim/test_simulator.py::test_matches_reference_model",
    "tests/sim/test_simulator.py::test_run_episode_equals_canonical_record",
    "tests/sim/test_simulator.py::test_step_invariants",
    "tests/sim/test_simulator_identity.py::test_records_and_observations_are_unchanged",
    "tests/sim/test_sorted_cells.py",
    "tests/stats/test_clopper_pearson.py::test_against_bisection",
    "tests/stats/test_clopper_pearson.py::test_large_n_exact_decision_stays_exact",
    "tests/stats/test_splitmix.py::test_block_equals_scalar",
    "tests/stats/test_stats_properties.py",
    "tests/test_agent.py",
    "tests/test_agent_messages.py::test_agent_that_exits_while_a_child_holds_its_output_cli",
    "tests/test_architecture.py",
    "tests/test_canonical.py::test_fast_encoder_equals_reference",
    "tests/test_engine_mutations.py",
    "tests/test_engine_streaming.py::test_memory_does_not_grow_with_steps",
    "tests/test_engine_streaming.py::test_push_in_odd_chunks",
    "tests/test_files.py::test_output_dev_null_is_written_through",
    "tests/test_files.py::test_render_output_through_symlink_and_fifo",
    "tests/test_files.py::test_run_compressed_output_follows_the_same_rules",
    "tests/test_files.py::test_run_concurrent_writers_one_wins_whole",
    "tests/test_files.py::test_run_concurrent_writers_to_one_path_do_not_both_succeed",
    "tests/test_files.py::test_run_record_is_followable_while_written",
    "tests/test_house.py",
    "tests/test_progress.py",
    "tests/test_public_names.py::test_each_public_name_is_its_home_modules_object_whatever_was_imported_first",
    "tests/test_ranking.py::test_fewer_casualties_always_rank_above_whatever_the_times",
    "tests/test_ranking.py::test_real_campaign_matches_batch_recomputation",
    "tests/test_scenario_fuzzing.py",
    "tests/test_spec_citations.py::test_every_cited_section_exists_in_docs_spec",
    "tests/test_spec_citations.py::test_the_citations_are_found",
    "tests/test_suite.py::test_browser_and_sandbox_mark",
    "tests/test_suite.py::test_postgres_marks",
    "tests/test_suite.py::test_the_fast_tier_is_neither_empty_nor_the_whole_suite",  # collects the suite
)


def _uses_postgres(item):
    if POSTGRES_FIXTURES & set(item.fixturenames):
        return True
    callspec = getattr(item, "callspec", None)
    values = callspec.params.values() if callspec is not None else ()
    return any(isinstance(value, str) and value == POSTGRES_PARAMETER for value in values)


def markers_of(item):
    """The names of the markers ``item`` gets, by the fixtures it uses and where it is."""
    nodeid = item.nodeid
    names = []
    if nodeid.startswith(SLOW):
        names.append("slow")
    if nodeid.startswith(SANDBOX):
        names.append("sandbox")
    if _uses_postgres(item):
        names.append("postgres")
    if BROWSER_FIXTURES & set(item.fixturenames):
        names.append("browser")
    return names


def pytest_collection_modifyitems(config, items):
    for item in items:
        for name in markers_of(item):
            item.add_marker(getattr(pytest.mark, name))


@pytest.fixture(scope="session")
def basic_run(tmp_path_factory):
    """BASIC evaluated once with 2 workers: (campaign folder, results directory), never modified."""
    base = tmp_path_factory.mktemp("basic")
    path = write_campaign(base / "c", BASIC)
    done = ember_cli("evaluate", path, "-o", base / "res", "--workers", "2")
    assert done.returncode == 0, done.stderr
    return base / "c", base / "res"


@pytest.fixture
def basic_copy(basic_run, tmp_path):
    """A private copy of ``basic_run``: (campaign path, results directory)."""
    folder, results = basic_run
    shutil.copytree(folder, tmp_path / "c")
    shutil.copytree(results, tmp_path / "res")
    return tmp_path / "c" / "campaign.toml", tmp_path / "res"


def pytest_sessionstart(session):
    # Every EMBER process a test starts (a server, a command, a worker, a sandboxed policy's host) imports EMBER's
    # modules.  Compiled once here, as an installed EMBER's are, none compiles them again; where
    # PYTHONDONTWRITEBYTECODE is set (as on this project's machines) each process would, about 0.3 s of CPU a server.
    compileall.compile_dir(os.path.dirname(ember.__file__), quiet=1)
