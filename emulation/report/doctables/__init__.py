"""The generated tables of docs/: each a `Table` of emulation/report/docs.py.

Every builder is pure: the parsed files it names in, Markdown lines out. They reuse what the
report and the paper modules already compute (median sync, speed-ups, pairings, scaling
rows) and add only what a doc compares across folders. A builder raises on what it cannot
build (a run a table needs is absent), so a doc never shows a silently shortened table.
Sentences that carry measured numbers (how many, which range, which run) are built here
too, under their table, so the prose around a block never has to repeat a number.

One module per doc (common.py: what they share); this registry lists every table.
"""
from __future__ import annotations

from emulation.report.docs import Table
from emulation.report.doctables.bml import (
    BML_CUBIC, BML_FOLDERS, BML_RECV_FIRST, BML_REPEATS, BML_TRAINING, bml_jct_sensitivity, bml_jct_spread,
    bml_summary, bml_training)
from emulation.report.doctables.cluster import CLUSTER_ALGOS, CLUSTER_BENCH, cluster_algorithms, cluster_bench
from emulation.report.doctables.dfs import DFS, dfs_headline, dfs_runs
from emulation.report.doctables.forest import (
    FOREST, FOREST_PLANNER, FOREST_TIMES, FOREST_VARIANTS, S5_COALESCE_SOURCES, _forest_rel, forest_planner_optimum,
    forest_planner_scenarios, forest_planner_times, forest_s5_coalescing, forest_scenarios, forest_variants)
from emulation.report.doctables.gtopk import (
    GTOPK_CHARGED, GTOPK_CHARGED_P32, GTOPK_FATTREE, GTOPK_SCALING, gtopk_beside_paper, gtopk_charged,
    gtopk_charged_beside_paper, gtopk_compression, gtopk_convergence, gtopk_scaling_all)
from emulation.report.doctables.hd import HD_FOLDERS, hd_default
from emulation.report.doctables.mgwfbp import (
    MGWFBP_ALL, MGWFBP_MATRIX, MGWFBP_SETTINGS, MGWFBP_WFBP_DILATED, _sources, mgwfbp_matrix, mgwfbp_settings,
    mgwfbp_slower, mgwfbp_wfbp_dilated)
from emulation.report.doctables.projection import (
    ADDITIVITY, BLOCKSPARSE_ORDER_SOURCES, BML_SCALE, CUBIC_FAN_IN_SOURCES, CUBIC_SOURCES, FAN_IN_EGRESS,
    FAN_IN_OPTIONS, FAN_IN_SHAPE, FAN_IN_SOURCES, TCP_CC_SOURCES,
    PROJECTION_SOURCES, PS_RECV_FIRST_SOURCES, RUNTIMES, RUNTIMES_ALL, SAME_DAY_SOURCES, SELECTION_SOURCES,
    SMALL_SOURCES, STEP_COST, SWEEP, blocksparse_order, projection_blocksparse_fitted,
    projection_blocksparse_rounds, projection_blocksparse_stages, projection_blocksparse_cpu_unit, BLOCKSPARSE_STAGE_SOURCES,
    projection_blocksparse_receives, projection_bml_scale, projection_compute, projection_compute_fit,
    projection_compute_probe, projection_compute_same_day, projection_families, projection_fan_in,
    projection_fan_in_egress, projection_fan_in_options, projection_fan_in_shape, projection_latency_fit, projection_runtimes,
    projection_runtimes_all, projection_selection_probe, projection_small_messages, projection_sweep,
    projection_validation, ps_recv_first, simgrid_step_cost, projection_cubic_latency_fit,
    projection_cubic_fan_in, projection_tcp_cc, PS_SCAN_SOURCES, projection_ps_incast_scan)
from emulation.report.doctables.papers_scale import (
    FOREST_SCALE, GTOPK_SCALE, MGWFBP_SCALE, projection_forest_scale, projection_gtopk_scale, projection_mgwfbp_scale)
from emulation.report.doctables.results import (
    FIDELITY_FOLDERS, HTB_RING, MTU_LEVER, OVS_FORWARDING, P32_DILATED, P32_FOLDERS, PS_PAST_16, PS_PAST_16_RUN,
    RESULTS_INDEX, SWITCH_PRIORITY, TCP_CC_PAIRS, fidelity_bounds, mtu_lever, ovs_forwarding, p32_families,
    ps_past_16, results_index, switch_priority, tcp_cc)

TABLES = {t.id: t for t in [
    Table("gtopk-compression", GTOPK_FATTREE, gtopk_compression),
    Table("gtopk-convergence", ("convergence-gtopk/summary.json", "convergence-gtopk/seeds-p16/seed1/summary.json",
                                "convergence-gtopk/seeds-p16/seed2/summary.json"), gtopk_convergence),
    Table("gtopk-beside-paper", GTOPK_SCALING, gtopk_beside_paper),
    Table("gtopk-scaling", GTOPK_SCALING, gtopk_scaling_all),
    Table("gtopk-charged", GTOPK_CHARGED, gtopk_charged),
    Table("gtopk-charged-beside-paper", GTOPK_CHARGED_P32, gtopk_charged_beside_paper),
    Table("mgwfbp-settings", _sources(MGWFBP_SETTINGS), mgwfbp_settings),
    Table("mgwfbp-matrix", _sources(MGWFBP_MATRIX), mgwfbp_matrix),
    Table("mgwfbp-slower", _sources(MGWFBP_ALL), mgwfbp_slower),
    Table("mgwfbp-wfbp-dilated", _sources(MGWFBP_WFBP_DILATED.values())
          + tuple(f"{f}/summary.json" for f in MGWFBP_WFBP_DILATED), mgwfbp_wfbp_dilated),
    Table("forest-scenarios", tuple(_forest_rel(f) for f in FOREST), forest_scenarios),
    Table("forest-variants", tuple(_forest_rel(f) for f in FOREST_VARIANTS), forest_variants),
    Table("forest-s5-coalescing", S5_COALESCE_SOURCES, forest_s5_coalescing),
    Table("forest-planner-optimum", (FOREST_PLANNER,), forest_planner_optimum),
    Table("forest-planner-scenarios", (FOREST_PLANNER,), forest_planner_scenarios),
    Table("forest-planner-times", (FOREST_TIMES,), forest_planner_times),
    Table("dfs-runs", (DFS,), dfs_runs),
    Table("cluster-bench", tuple(f"{f}/summary.json" for f in CLUSTER_BENCH), cluster_bench),
    Table("cluster-algorithms", tuple(f"{f}/summary.json" for f in CLUSTER_ALGOS), cluster_algorithms),
    Table("dfs-headline", (DFS,), dfs_headline),
    Table("fidelity-bounds", tuple(f"{f}/summary.json" for f in FIDELITY_FOLDERS), fidelity_bounds),
    Table("ovs-forwarding", (OVS_FORWARDING,), ovs_forwarding),
    Table("p32-families", tuple(f"{f}/summary.json" for f in P32_FOLDERS + P32_DILATED), p32_families),
    Table("mtu-lever", tuple(f"{f}/{n}" for f in MTU_LEVER + HTB_RING for n in ("summary.json", "config.yaml")),
          mtu_lever),
    Table("switch-priority", tuple(f"{f}/{n}" for f in SWITCH_PRIORITY for n in ("summary.json", "config.yaml")),
          switch_priority),
    Table("tcp-cc", tuple(f"{f}/summary.json" for pair in TCP_CC_PAIRS for f in pair), tcp_cc),
    Table("ps-past-16", tuple(f"{f}/{n}" for f, _ in PS_PAST_16 for n in ("summary.json", f"{PS_PAST_16_RUN}/capture.json")),
          ps_past_16),
    Table("bml-summary", tuple(f"{f}/summary.json" for f in BML_FOLDERS + BML_REPEATS + BML_RECV_FIRST + BML_CUBIC),
          bml_summary),
    Table("hd-default", tuple(f"{f}/{name}" for f in HD_FOLDERS for name in ("summary.json", "config.yaml")),
          hd_default),
    Table("bml-training", tuple(f"{f}/summary.json" for f in BML_TRAINING), bml_training),
    Table("bml-jct-spread",
          tuple(f"{f}/summary.json" for f in BML_FOLDERS + BML_REPEATS + BML_RECV_FIRST + BML_CUBIC), bml_jct_spread),
    Table("bml-jct-sensitivity",
          tuple(f"{f}/summary.json" for f in BML_FOLDERS + BML_REPEATS + BML_RECV_FIRST + BML_CUBIC),
          bml_jct_sensitivity),
    Table("results-index", tuple(f"{f}/summary.json" for fs in RESULTS_INDEX.values() for f in fs), results_index),
    Table("projection-validation", PROJECTION_SOURCES, projection_validation),
    Table("projection-latency-fit", PROJECTION_SOURCES + ADDITIVITY, projection_latency_fit),
    Table("projection-families", PROJECTION_SOURCES, projection_families),
    Table("projection-small-messages", SMALL_SOURCES, projection_small_messages),
    Table("projection-fan-in", FAN_IN_SOURCES, projection_fan_in),
    Table("projection-cubic-latency-fit", CUBIC_SOURCES, projection_cubic_latency_fit),
    Table("projection-cubic-fan-in", CUBIC_FAN_IN_SOURCES, projection_cubic_fan_in),
    Table("projection-ps-incast-scan", PS_SCAN_SOURCES, projection_ps_incast_scan),
    Table("projection-tcp-cc", TCP_CC_SOURCES, projection_tcp_cc),
    Table("projection-blocksparse-receives", FAN_IN_SOURCES, projection_blocksparse_receives),
    Table("projection-blocksparse-fitted", FAN_IN_SOURCES, projection_blocksparse_fitted),
    Table("projection-blocksparse-rounds", TCP_CC_SOURCES, projection_blocksparse_rounds),
    Table("projection-blocksparse-stages", BLOCKSPARSE_STAGE_SOURCES, projection_blocksparse_stages),
    Table("projection-blocksparse-cpu-unit", TCP_CC_SOURCES, projection_blocksparse_cpu_unit),
    Table("projection-fan-in-options", (FAN_IN_OPTIONS,), projection_fan_in_options),
    Table("projection-fan-in-egress", PROJECTION_SOURCES + (FAN_IN_EGRESS,), projection_fan_in_egress),
    Table("projection-fan-in-shape", PROJECTION_SOURCES + (FAN_IN_SHAPE,), projection_fan_in_shape),
    Table("ps-recv-first", PS_RECV_FIRST_SOURCES, ps_recv_first),
    Table("blocksparse-order", BLOCKSPARSE_ORDER_SOURCES, blocksparse_order),
    Table("projection-compute-fit", PROJECTION_SOURCES, projection_compute_fit),
    Table("projection-compute", PROJECTION_SOURCES, projection_compute),
    Table("projection-compute-same-day", SAME_DAY_SOURCES, projection_compute_same_day),
    Table("projection-compute-probe", PROJECTION_SOURCES, projection_compute_probe),
    Table("projection-selection-probe", SELECTION_SOURCES, projection_selection_probe),
    Table("projection-sweep", SWEEP, projection_sweep),
    Table("projection-bml-scale", BML_SCALE, projection_bml_scale),
    Table("projection-runtimes", RUNTIMES, projection_runtimes),
    Table("projection-runtimes-all", (RUNTIMES_ALL,), projection_runtimes_all),
    Table("simgrid-step-cost", (STEP_COST,), simgrid_step_cost),
    Table("projection-mgwfbp-scale", MGWFBP_SCALE, projection_mgwfbp_scale),
    Table("projection-gtopk-scale", GTOPK_SCALE, projection_gtopk_scale),
    Table("projection-forest-scale", FOREST_SCALE, projection_forest_scale),
]}
