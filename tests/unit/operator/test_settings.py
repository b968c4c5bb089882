"""Settings are read once from the environment, with clear errors naming the variable."""

from __future__ import annotations

import pytest

from ebb_operator.handlers.runtime import Runtime
from ebb_operator.settings import OperatorSettings, SettingsError


def test_defaults_without_environment() -> None:
    s = OperatorSettings.from_env({})
    assert (s.resync_seconds, s.allow_inline_clusters, s.default_cluster, s.namespace) == (
        60.0,
        False,
        None,
        "default",
    )


def test_values_come_from_their_variables() -> None:
    s = OperatorSettings.from_env(
        {"EBB_RESYNC_SECONDS": "2", "EBB_ALLOW_INLINE_CLUSTERS": "true", "EBB_DEFAULT_CLUSTER": "ebb",
         "EBB_OPERATOR_NAMESPACE": "ebb-system", "EBB_OPERATOR_IMAGE": "ebb-operator:1"}
    )  # fmt: skip
    assert (s.resync_seconds, s.allow_inline_clusters, s.default_cluster) == (2.0, True, "ebb")
    assert (s.namespace, s.image) == ("ebb-system", "ebb-operator:1")


@pytest.mark.parametrize(("var", "value"), [("EBB_RESYNC_SECONDS", "soon"), ("EBB_RESYNC_SECONDS", "0"),
                                            ("EBB_ALLOW_INLINE_CLUSTERS", "yes")])  # fmt: skip
def test_bad_values_name_the_variable(var: str, value: str) -> None:
    with pytest.raises(SettingsError, match=var):
        OperatorSettings.from_env({var: value})


def test_the_kafka_request_timeout_reaches_the_admin_clients() -> None:
    settings = OperatorSettings.from_env({"EBB_KAFKA_REQUEST_TIMEOUT_SECONDS": "6"})
    assert Runtime.create(settings).admins.request_timeout == 6.0
    assert Runtime.create(OperatorSettings.from_env({})).admins.request_timeout == 15.0


def test_the_webhook_is_off_unless_a_port_is_set_and_defaults_to_the_charts_service() -> None:
    assert OperatorSettings.from_env({}).webhook_port is None
    s = OperatorSettings.from_env({"EBB_WEBHOOK_PORT": "9443", "EBB_OPERATOR_NAMESPACE": "ebb-system"})
    assert (s.webhook_port, s.webhook_managed, s.webhook_cert_dir) == (9443, False, None)
    assert s.webhook_address == "ebb-operator-webhook.ebb-system.svc"
    local = OperatorSettings.from_env(
        {"EBB_WEBHOOK_PORT": "9443", "EBB_WEBHOOK_HOST": "127.0.0.1", "EBB_WEBHOOK_MANAGED": "true"}
    )
    assert (local.webhook_address, local.webhook_managed) == ("127.0.0.1", True)


@pytest.mark.parametrize("port", ["0", "65536", "https", "-1"])
def test_a_bad_webhook_port_names_the_variable(port: str) -> None:
    with pytest.raises(SettingsError, match=r"EBB_WEBHOOK_PORT='.*': expected a port number"):
        OperatorSettings.from_env({"EBB_WEBHOOK_PORT": port})


def test_leader_election_is_on_by_default_with_client_gos_proportions() -> None:
    s = OperatorSettings.from_env({})
    assert s.leader_election and s.lease_name == "ebb-operator" and s.log_format == "plain"
    assert s.lease_seconds > s.renew_deadline_seconds > 1.2 * s.retry_period_seconds


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"EBB_LEADER_LEASE_SECONDS": "8"},
            "EBB_LEADER_LEASE_SECONDS .8. must be greater than EBB_LEADER_RENEW",
        ),
        (
            {"EBB_LEADER_RETRY_PERIOD_SECONDS": "7"},
            "EBB_LEADER_RENEW_DEADLINE_SECONDS .8. must be greater than 1.2",
        ),
        ({"EBB_LEADER_ELECTION": "maybe"}, "EBB_LEADER_ELECTION='maybe': expected true or false"),
        ({"EBB_LOG_FORMAT": "xml"}, "EBB_LOG_FORMAT='xml': expected one of plain, json"),
    ],
)
def test_leader_and_log_settings_that_cannot_work_are_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        OperatorSettings.from_env(env)


def test_local_analysis_runs_one_at_a_time_with_c1_unless_told_otherwise() -> None:
    s = OperatorSettings.from_env({})
    assert (s.local_analysis_runs, s.local_analysis_java_options) == (1, "-XX:TieredStopAtLevel=1")
    # Set but empty: the JVM's own defaults, not ours.
    told = OperatorSettings.from_env({"EBB_LOCAL_ANALYSIS_RUNS": "3", "EBB_LOCAL_ANALYSIS_JAVA_OPTIONS": ""})
    assert (told.local_analysis_runs, told.local_analysis_java_options) == (3, "")
