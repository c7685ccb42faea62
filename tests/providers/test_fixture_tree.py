"""The recorded traffic in ``tests/fixtures/provider-traffic`` is complete, licensed and accounted for.

The replay tests assert the file set of each provider folder they know; these tests close the gaps
around them: a new folder, a file that is not YAML, a recording whose source licence is not shipped,
or a recording the README's provenance table does not list would otherwise pass unnoticed. And no
test or example may read recordings from outside the repository, so a clone with nothing beside it
runs everything.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from .fixtures import FIXTURES, PROVIDER_FOLDERS, fixture_files

ROOT = Path(__file__).resolve().parents[2]


def test_the_tree_holds_the_readme_the_licences_and_the_known_folders_only() -> None:
    assert FIXTURES.is_dir(), f"{FIXTURES} is missing"
    assert {p.name for p in FIXTURES.iterdir()} == {"README.md", "LICENSES", *PROVIDER_FOLDERS}


def test_every_file_of_a_provider_folder_is_a_recording() -> None:
    for folder in PROVIDER_FOLDERS:
        names = {p.name for p in (FIXTURES / folder).iterdir()}
        assert names == {f"{stem}.yaml" for stem in fixture_files(folder)}, folder


def _sources() -> dict[str, dict[str, str]]:
    found = {}
    for folder in PROVIDER_FOLDERS:
        for stem in fixture_files(folder):
            document = yaml.safe_load((FIXTURES / folder / f"{stem}.yaml").read_text())
            assert document["provider"] == folder or folder == "ollama", stem
            found[f"{folder}/{stem}.yaml"] = document["source"]
    return found


def test_every_recording_has_its_source_licence_and_every_licence_is_used() -> None:
    sources = _sources()
    licences = {p.stem for p in (FIXTURES / "LICENSES").glob("*.txt")}
    used = {source["repository"].replace("/", "__") for source in sources.values()}
    for path, source in sources.items():
        assert source["license"] in {"MIT", "Apache-2.0"}, path
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), path
    assert used <= licences, f"recordings without their licence text: {sorted(used - licences)}"
    assert licences <= used, f"licence texts no recording needs: {sorted(licences - used)}"


def test_the_readme_gives_the_provenance_of_every_recording() -> None:
    readme = (FIXTURES / "README.md").read_text()
    listed = set(re.findall(r"^\| `([\w-]+/\w+\.yaml)` \|", readme, flags=re.MULTILINE))
    assert listed == set(_sources())


def test_no_test_or_example_reads_recordings_from_outside_the_repository() -> None:
    outside = re.compile(r"""parents\[\d\]\s*/\s*["']shared["']|\.\./shared""")
    offenders = [
        str(path.relative_to(ROOT))
        for top in ("tests", "examples", "benchmarks")
        for path in (ROOT / top).rglob("*.py")
        if ".venv" not in path.parts and path != Path(__file__).resolve() and outside.search(path.read_text())
    ]
    assert offenders == []
