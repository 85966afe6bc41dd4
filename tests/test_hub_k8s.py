"""The Kubernetes door on paper: hub/k8s/config.yaml against Zero to JupyterHub 4.4.0's values schema, and the
single-user image's recipe (hub/Dockerfile) pinned. Nothing here talks to a cluster or builds the image."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
K8S = REPO / "hub" / "k8s"
CHART = K8S / "z2jh-4.4.0"


def helm_merge(defaults: dict, values: dict) -> dict:
    """Helm's merge of a values file into the chart's defaults: maps key by key, anything else replaced."""
    out = copy.deepcopy(defaults)
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = helm_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def config() -> dict:
    return load(K8S / "config.yaml")


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    schema = load(CHART / "values.schema.yaml")
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def errors(validator, values: dict) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(values)]


def test_config_is_valid_for_the_chart(config, validator):
    assert not errors(validator, helm_merge(load(CHART / "values.yaml"), config))


def test_the_schema_catches_a_wrong_config(config, validator):
    """The check can fail: a misspelt key and a wrong type are both refused."""
    wrong = copy.deepcopy(config)
    wrong["singleuser"]["storage"]["extraVolumeMount"] = wrong["singleuser"]["storage"].pop("extraVolumeMounts")
    wrong["singleuser"]["image"]["tag"] = ["0.1.0"]
    found = errors(validator, helm_merge(load(CHART / "values.yaml"), wrong))
    assert any("extraVolumeMount" in e for e in found) and any(e.startswith("singleuser.image.tag") for e in found)


def test_course_settings(config):
    """One exchange volume in every pod, the students' and the instructor's nbgrader settings, a pinned image, and
    the per-user uid that keeps students out of each other's submissions; the same course as the local hub."""
    single = config["singleuser"]
    mounts = {m["name"]: m["mountPath"] for m in single["storage"]["extraVolumeMounts"]}
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in single["storage"]["extraVolumes"]}
    assert mounts == {"nbgrader-exchange": "/srv/nbgrader/exchange"} and claims == {
        "nbgrader-exchange": "nbgrader-exchange"
    }
    files = {f["mountPath"]: f["stringData"] for f in single["extraFiles"].values()}
    local = (REPO / "hub" / "jupyterhub_config.py").read_text(encoding="utf-8")
    course_id = re.search(r'^COURSE_ID = "(\w+)"', local, re.M).group(1)
    assert f'c.CourseDirectory.course_id = "{course_id}"' in files["/etc/jupyter/nbgrader_config.py"]
    assert 'c.Exchange.root = "/srv/nbgrader/exchange"' in files["/etc/jupyter/nbgrader_config.py"]
    assert (
        f'c.CourseDirectory.root = "/home/jovyan/{course_id}"'
        in files["/etc/jupyter/qkv-instructor/nbgrader_config.py"]
    )
    hook = config["hub"]["extraConfig"]["qkv-course"]
    compile(hook, "qkv-course", "exec")  # the hub would fail to start on a syntax error
    assert "spawner.uid = FIRST_UID + spawner.user.id" in hook
    assert 'spawner.environment["JUPYTER_CONFIG_PATH"] = "/etc/jupyter/qkv-instructor"' in hook
    image = single["image"]
    assert image["name"] and re.fullmatch(r"\d+\.\d+\.\d+", image["tag"]), image


def _pins(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8")
    assert "--hash=sha256:" in text, f"{path.name} has no hashes"
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", text, re.M))


def test_image_recipe_is_pinned():
    dockerfile = (REPO / "hub" / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^FROM quay\.io/jupyter/minimal-notebook:python-3\.11@sha256:[0-9a-f]{64}$", dockerfile, re.M)
    installs = re.findall(r"pip install ([^\\\n]+)", dockerfile)
    assert installs
    for line in installs:  # every install from a hashed lock, or torch alone by its pinned version, without deps
        assert ("--require-hashes" in line and " -r " in line) or (
            "--no-deps" in line and ("requirements-torch.txt" in line or line.endswith("/tmp/qkv "))
        ), line
    assert "fix-permissions" in dockerfile
    lab, single = _pins(REPO / "requirements-lab.txt"), _pins(REPO / "hub" / "requirements-singleuser.txt")
    assert {name: v for name, v in single.items() if name in lab and lab[name] != v} == {}  # the two locks agree
    hub = _pins(REPO / "hub" / "requirements-hub.txt")
    assert single["jupyterhub"] == hub["jupyterhub"] == "5.5.0"  # the chart's JupyterHub, also the local hub's
