"""CRDs on the real API server: what the Ebb CRDs rely on (structural schema, CEL rules, status
subresource, printer columns) behaves as on a user's cluster, and bad objects are refused whole."""

from __future__ import annotations

import json
import re

import pytest

from harness.controlplane import CommandFailed, ControlPlane


def probe(name: str, **spec: object) -> str:
    return json.dumps(
        {"apiVersion": "tests.ebb.dev/v1", "kind": "Probe", "metadata": {"name": name}, "spec": spec}
    )


def test_valid_object_is_stored_with_defaults_and_shown_in_printer_columns(
    control_plane: ControlPlane, probe_crd: str, k8s_namespace: str
) -> None:
    ns = ("--namespace", k8s_namespace)
    control_plane.kubectl("apply", *ns, "-f", "-", stdin=probe("orders", topic="orders", retention="7d"))

    stored = control_plane.kubectl_json("get", *ns, "probe", "orders")
    assert stored["spec"] == {"topic": "orders", "retention": "7d", "minKeep": 0}  # schema default applied
    table = control_plane.kubectl("get", *ns, "prb").stdout  # the short name
    assert table.split("\n")[0].split() == ["NAME", "TOPIC", "PHASE", "AGE"]
    assert table.split("\n")[1].split()[:2] == ["orders", "orders"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"topic": "t", "retention": "7d", "minKeep": 5, "maxKeep": 2},
            "maxKeep must not be smaller than minKeep",
        ),
        ({"topic": "t", "retention": "a week"}, 'spec.retention: Invalid value: "a week"'),
        ({"topic": "t"}, "spec.retention: Required value"),
        ({"topic": "t", "retention": "1h", "minKeep": -1}, "spec.minKeep: Invalid value: -1"),
    ],
    ids=["cel-rule", "pattern", "required", "minimum"],
)
def test_invalid_object_is_rejected_with_a_readable_message_and_not_stored(
    control_plane: ControlPlane, probe_crd: str, k8s_namespace: str, spec: dict[str, object], message: str
) -> None:
    ns = ("--namespace", k8s_namespace)
    with pytest.raises(CommandFailed, match="is invalid") as refused:
        control_plane.kubectl("apply", *ns, "-f", "-", stdin=probe("bad", **spec))
    assert message in refused.value.stderr

    missing = control_plane.kubectl("get", *ns, "probe", "bad", check=False)
    assert missing.returncode != 0
    assert "NotFound" in missing.stderr


def test_transition_rule_keeps_a_field_immutable(
    control_plane: ControlPlane, probe_crd: str, k8s_namespace: str
) -> None:
    ns = ("--namespace", k8s_namespace)
    control_plane.kubectl("apply", *ns, "-f", "-", stdin=probe("p", topic="orders", retention="1h"))

    with pytest.raises(CommandFailed, match="topic is immutable"):
        control_plane.kubectl("patch", *ns, "probe", "p", "--type=merge", "-p", '{"spec":{"topic":"other"}}')

    # Other fields still change.
    control_plane.kubectl("patch", *ns, "probe", "p", "--type=merge", "-p", '{"spec":{"retention":"2h"}}')
    assert control_plane.kubectl_json("get", *ns, "probe", "p")["spec"] == {
        "topic": "orders",
        "retention": "2h",
        "minKeep": 0,
    }


def test_status_subresource_separates_status_from_spec_and_generation(
    control_plane: ControlPlane, probe_crd: str, k8s_namespace: str
) -> None:
    """An operator writes status through /status without bumping metadata.generation, and a spec change
    bumps it: observedGeneration is meaningful only because of this."""
    ns = ("--namespace", k8s_namespace)
    control_plane.kubectl("apply", *ns, "-f", "-", stdin=probe("s", topic="orders", retention="1h"))
    generation = control_plane.kubectl_json("get", *ns, "probe", "s")["metadata"]["generation"]

    control_plane.kubectl(
        "patch",
        *ns,
        "probe",
        "s",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"phase": "Ready", "observedGeneration": generation}}),
    )
    after_status = control_plane.kubectl_json("get", *ns, "probe", "s")
    assert after_status["status"] == {"phase": "Ready", "observedGeneration": generation}
    assert after_status["metadata"]["generation"] == generation
    assert control_plane.kubectl("get", *ns, "probe", "s").stdout.split("\n")[1].split()[2] == "Ready"

    # Status sent to the main resource is ignored, and a spec change bumps the generation.
    control_plane.kubectl(
        "patch",
        *ns,
        "probe",
        "s",
        "--type=merge",
        "-p",
        json.dumps({"spec": {"retention": "3h"}, "status": {"phase": "Forged"}}),
    )
    after_spec = control_plane.kubectl_json("get", *ns, "probe", "s")
    assert after_spec["status"] == {"phase": "Ready", "observedGeneration": generation}
    assert after_spec["metadata"]["generation"] == generation + 1


def test_unknown_fields_are_refused_by_strict_validation_and_pruned_otherwise(
    control_plane: ControlPlane, probe_crd: str, k8s_namespace: str
) -> None:
    ns = ("--namespace", k8s_namespace)
    typo = probe("u", topic="orders", retention="1h", minkeep=3)  # misspelt field

    with pytest.raises(CommandFailed, match=re.escape('unknown field "spec.minkeep"')):
        control_plane.kubectl("apply", *ns, "--validate=strict", "-f", "-", stdin=typo)

    control_plane.kubectl("apply", *ns, "--validate=false", "-f", "-", stdin=typo)
    assert "minkeep" not in control_plane.kubectl_json("get", *ns, "probe", "u")["spec"]
