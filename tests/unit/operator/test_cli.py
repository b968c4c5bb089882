"""`ebb` reads KIP-107's offsets file exactly as kafka-delete-records.sh does and refuses bad files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ebb_operator import cli
from ebb_operator.kafka import TopicPartition


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "offsets.json"
    path.write_text(text)
    return path


def test_offsets_file_in_kip107_format(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '{"partitions":[{"topic":"foo","partition":1,"offset":1},'
        '{"topic":"foo","partition":0,"offset":-1}],"version":1}',
    )
    assert cli.load_offsets(path) == {TopicPartition("foo", 1): 1, TopicPartition("foo", 0): -1}


def test_version_defaults_to_1(tmp_path: Path) -> None:
    assert cli.load_offsets(_write(tmp_path, '{"partitions":[{"topic":"a","partition":0,"offset":3}]}'))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"partitions":[{"topic":"a","partition":0,"offset":1},{"topic":"a","partition":0,"offset":2}]}',
            "duplicate topic partitions: a-0",
        ),
        ('{"partitions":[]}', "not a valid offsets file"),
        ('{"partitions":[{"topic":"a","partition":0,"offset":-5}]}', "offset"),
        ('{"partitions":[{"topic":"a","partition":0,"offset":1}],"version":2}', "version"),
        ("not json", "not a valid offsets file"),
    ],
)
def test_bad_offsets_files_are_refused_before_anything_is_sent(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(cli.UsageError, match=message):
        cli.load_offsets(_write(tmp_path, text))


def test_cli_exits_2_with_a_readable_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, '{"partitions":[]}')
    rc = cli.main(["delete-records", "--bootstrap-server", "127.0.0.1:1", "--offset-json-file", str(path)])
    assert rc == 2
    assert "not a valid offsets file" in capsys.readouterr().err


def test_crds_command_prints_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["crds"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    kinds = {d["spec"]["names"]["kind"]: d["spec"]["scope"] for d in docs}
    assert kinds == {
        "CompactionConfig": "Namespaced",
        "DeleteRecords": "Namespaced",
        "RetentionPolicy": "Namespaced",
        "KafkaCluster": "Cluster",
    }


def test_rbac_command_prints_the_cluster_role(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["rbac"]) == 0
    role = yaml.safe_load(capsys.readouterr().out)
    assert role["kind"] == "ClusterRole"
    secrets = [r["verbs"] for r in role["rules"] if "secrets" in r["resources"]]
    assert secrets == [], "cluster-wide the operator touches no Secret (runs live in the jobs namespace)"
