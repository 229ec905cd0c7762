"""The result folders under docs/results are what the docs quote: each one that was kept whole
(every run's files but the pcap, `syncbed keep`) is analysed again here from its files, and
must come out with the verdicts it shows, and with no byte where the closed form has none
(issue #19: every number true). Folders recorded before runs were kept whole hold only their
summary; they are listed by name below, with why, so that a new folder cannot slip in
unchecked."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from emulation import analysis, cli

pytestmark = pytest.mark.unit

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
# keys that say where the bytes were read from, not what they were
SOURCE_KEYS = {"capture_counts_from"}
# Folders that hold summaries only, so they cannot be analysed again:
# - four MG-WFBP folders: recorded 2026-11-23/24, before `syncbed keep`, with the run files not
#   kept. Their host-NIC byte verdicts hold. On Fat-Tree with hash ECMP, their switch-port
#   verdicts show Gloo's notifications on reverse routes that the old closed form did not follow
#   (docs/FIDELITY.md #10). `bash scripts/mgwfbp_matrix.sh results/mgwfbp-matrix FOLDER` then
#   `syncbed keep` removes one from here, as it did for the other 14 of the matrix on 2026-11-25.
# - projection-*: SimGrid simulations, with no capture to re-read.
# - convergence-gtopk: `syncbed train` on localhost, with no capture either.
SUMMARY_ONLY_PREFIXES = (
    "projection-",  # simulations: no capture to re-analyse
    "convergence-gtopk",  # syncbed train on localhost: no emulated network, no capture
)


def summaries() -> list[Path]:
    return sorted(p.parent for p in RESULTS.rglob("summary.json") if "workers" not in p.parts)


def kept_whole(folder: Path) -> bool:
    summary = json.loads((folder / "summary.json").read_text())
    runs = summary.get("runs") or []
    return bool(runs) and all((folder / str(r.get("dir")) / "job.json").exists() for r in runs)


KEPT = [f for f in summaries() if kept_whole(f)]


def test_every_result_folder_is_kept_whole_or_named_as_summary_only():
    loose = [str(f.relative_to(RESULTS)) for f in summaries()
             if not kept_whole(f) and not str(f.relative_to(RESULTS)).startswith(SUMMARY_ONLY_PREFIXES)]
    assert not loose, f"result folders neither kept whole (syncbed keep) nor listed as summary-only: {loose}"
    assert KEPT, "no result folder is kept whole"


# Seconds a simulation computes may differ in their last bits when the same arithmetic is done in
# another order: since 2026-12-04 a step that repeats an earlier one takes the earlier step's
# duration added to its own start (`core.repeated_steps`) instead of SimGrid's own sum, 2e-16
# relative on the forest's 1.788 s. Floats are equal to 1e-12 relative, far below any digit a
# report prints; counts and bytes (ints) stay exact.
FLOAT_REL = 1e-12


def same(old, new) -> bool:
    """What a folder shows against what analysing it again gives: equal (floats to FLOAT_REL), but
    a record (a dict) may gain a field a later analysis adds (the verdict's `uncounted_loss_fraction`,
    docs/FIDELITY.md #23) as long as every field it had is unchanged; a verdict that a new check
    breaks is a change."""
    if isinstance(old, dict) and isinstance(new, dict):
        return all(same(v, new.get(k)) for k, v in old.items())
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(same(a, b) for a, b in zip(old, new))
    if isinstance(old, float) and isinstance(new, float):
        return math.isclose(old, new, rel_tol=FLOAT_REL, abs_tol=0.0)
    return old == new


# Drawing the figures took three quarters of re-analysing a folder (cProfile of `syncbed analyze`
# on tcp-cc/mgwfbp-fattree4-cubic: 122 of 160 s in make_plots), and this test alone 44 min on
# 2026-12-03 (the whole CI that day: 68 min). Every folder's verdicts, tables and report text are redone with
# `--no-plots`, which keeps the figures already drawn; these folders, one per kind of figure
# (BML's stage timeline, forest, gTop-k, MG-WFBP's overlap), have their figures drawn again too.
REDRAWN = ("ps-fan-in-bw/one-switch-bml-p4", "tcp-cc/forest-s3-half-speed-cubic",
           "gtopk-scaling-fattree-r2/same-hour-p8", "mgwfbp-fattree4/vgg16")


def test_the_folders_redrawn_are_kept_whole():
    assert set(REDRAWN) <= {str(f.relative_to(RESULTS)) for f in KEPT}


@pytest.mark.parametrize("folder", KEPT, ids=lambda f: str(f.relative_to(RESULTS)))
def test_a_kept_folder_analyses_again_to_the_verdicts_it_shows(folder, tmp_path):
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    before = json.loads((folder / "summary.json").read_text())
    redraw = str(folder.relative_to(RESULTS)) in REDRAWN
    if redraw:
        shutil.rmtree(copy / "plots")
    assert cli.main(["analyze", str(copy)] + ([] if redraw else ["--no-plots"])) == 0
    after = json.loads((copy / "summary.json").read_text())
    assert [r["dir"] for r in after["runs"]] == [r["dir"] for r in before["runs"]]
    for old, new in zip(before["runs"], after["runs"]):
        changed = sorted(k for k in set(old) | set(new) if k not in SOURCE_KEYS and not same(old.get(k), new.get(k)))
        assert not changed, f"{old['dir']}: re-analysis changed {changed[:6]}"
        for check in ("payload_ratio", "link_ratio"):
            if check in new:
                assert new[check]["unexpected"] == [], f"{new['dir']}: bytes on {new[check]['unexpected'][:4]}"
    assert (copy / "report.md").read_text() == (folder / "report.md").read_text()


def test_keep_refuses_a_folder_whose_runs_were_not_analysed_with_their_pcap(tmp_path):
    src = tmp_path / "res"
    (src / "01-run").mkdir(parents=True)
    (src / "summary.json").write_text(json.dumps({"runs": [{"dir": "01-run"}]}))
    with pytest.raises(analysis.NotARunFolder, match="capture_counts.json"):
        analysis.keep_copy(src, tmp_path / "dest")
