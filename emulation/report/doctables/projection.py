"""docs/PROJECTION.md: validation, the round-latency fit, families, sweeps, run times."""
from __future__ import annotations

import dataclasses
import statistics
from emulation.analysis import host_tcp_counters
from emulation.papers import common
from emulation.report.doctables.cells import find, pct, runs_of, span, spread, verdict
from emulation.report.doctables.forest import FOREST
from emulation.results.columns import NA, fmt, table
from emulation.results.load import MB, num
from emulation.simulator.calibration import bcube_n, incast_label, one_switch_input as _one_input
from emulation.simulator.fanin import capped_startup, incast_startup, past_slack as charged_past_slack


# experiments/dfs_resnet18_digits.yaml run again on 2026-11-28: four times with 40 iterations, then
# the whole file (150) with the fixed receives (the DFS paper's table), all in the held-out half;
# then 40 iterations named into the fit half, the first fit-half folder to log aggregate and codec;
# on 2026-11-29, 40 iterations held out after the block-sparse executors posted a step's receives
# before its sends; that afternoon the whole file (150) with them, named into the fit half (the
# DFS paper's table since, and the block-sparse executor's own fan-in fit)
DFS_AGAIN = ("dfs-resnet18-digits-held-out", "dfs-resnet18-digits-codec-logged", "dfs-resnet18-digits-concurrent-recv",
             "dfs-resnet18-digits-concurrent-recv-again", "dfs-resnet18-digits-recv-fixed",
             "dfs-resnet18-digits-fit-half", "dfs-resnet18-digits-receives-first", "dfs-resnet18-digits-paper-table")
# the ResNet-50 gTop-k file again at P = 8 and 16, 2026-11-29, named so that both are held out:
# the cost models of the selection and merge (fitted on 2026-11-24's P = 8 and 16) on another day
GTOPK_AGAIN = tuple(f"gtopk-scaling-fattree-r2/p{p}" for p in (8, 16))
# Every other kept folder with a faithful run, added 2026-11-29 (the issue asks for every faithful
# run in docs/results; the list above was the folders chosen one by one until then). Left out:
# cluster-two-servers/* (their runs span two machines joined by a tunnel, which the projection's
# network, the topology alone, does not hold), dfs-resnet18-digits-same-day (the block-sparse
# cost models' same-day fit, kept out of the split on purpose: "Compute and data-dependent bytes")
# and blocksparse-order/sends-first (run with the block-sparse executors of before 2026-11-29
# 10:36 on purpose, the "before" of blocksparse-order/receives-first: it measures code that no
# longer runs).
EVERY_FAITHFUL = (
    "bml-repeats/bml-bcube32-vs-ps-fattree-vgg19-r2", "bml-repeats/bml-bcube32-vs-ps-fattree-vgg19-r3",
    "bml-repeats/bml-bcube42-vs-ps-fattree-vgg19-r2", "bml-repeats/bml-bcube42-vs-ps-fattree-vgg19-r3",
    "ddp-resnet20-digits", "forest-scenarios/forest-s3-half-speed", "forest-scenarios/forest-s5-dilated",
    "forest-scenarios/forest-s5-half-speed", "forest-scenarios/forest-s5-variants",
    "gtopk-charged/alexnet-p32", "gtopk-charged/resnet20-p32", "gtopk-charged/resnet50-p32",
    "gtopk-charged/vgg16-p32-bw5", "gtopk-charged/vgg16-p32", "gtopk-scaling-fattree-r2/code-2026-11-24-p8",
    "gtopk-scaling-fattree-r2/same-hour-p8", "gtopk-scaling/alexnet/p16", "gtopk-scaling/alexnet/p4",
    "gtopk-scaling/alexnet/p8", "gtopk-scaling/resnet20/p16", "gtopk-scaling/resnet20/p4",
    "gtopk-scaling/resnet20/p8", "gtopk-scaling/resnet50/p16", "gtopk-scaling/resnet50/p4",
    "gtopk-scaling/resnet50/p8", "gtopk-scaling/vgg16/p16", "gtopk-scaling/vgg16/p4", "gtopk-scaling/vgg16/p8",
    "hash-ecmp/bml-bcube32-vs-ps-fattree", "hash-ecmp/bml-bcube42-vs-ps-fattree", "hd-default-two-level",
    "hd-default", "htb-ring32-bw10", "mgwfbp-bcube42-googlenet", "mgwfbp-bcube42-resnet50",
    "mgwfbp-fattree16-densenet201", "mgwfbp-fattree16-googlenet", "mgwfbp-fattree16-inception_v3",
    "mgwfbp-fattree16-resnet152", "mgwfbp-fattree16-resnet50", "mgwfbp-fattree4/densenet201",
    "mgwfbp-fattree4/googlenet", "mgwfbp-fattree4/inception_v3", "mgwfbp-fattree4/lstm_ptb",
    "mgwfbp-fattree4/resnet152", "mgwfbp-fattree4/resnet50", "mgwfbp-fattree4/vgg16",
    "mgwfbp-fattree8-densenet201", "mgwfbp-fattree8-inception_v3", "mgwfbp-fattree8-infocom",
    "mgwfbp-fattree8-resnet152", "mgwfbp-wfbp-dilated/bcube42-googlenet",
    "mgwfbp-wfbp-dilated/fattree16-densenet201", "mgwfbp-wfbp-dilated/fattree4-densenet201",
    "mgwfbp-wfbp-dilated/fattree8-densenet201", "mgwfbp-wfbp-dilated/fattree8-infocom", "mtu-lever/mtu32000",
    "mtu-lever/mtu64000", "p32-fattree6-wfbp-dilated/bw1.25", "p32-fattree6-wfbp-dilated/bw2.5",
    "p32-fattree6", "small-messages/bcube32-check-r2", "small-messages/syncs50-16k-r1",
    "small-messages/syncs50-16k-r2", "small-messages/syncs50-64k-r1", "small-messages/syncs50-64k-r2",
    "switch-priority/gtopk-p32-realtime-r2", "switch-priority/gtopk-p32-realtime", "train-lenet5-digits-r2",
    # 2026-11-29: PS on four workers of a Fat-Tree at 20 Mbit/s, held out (p4-bw100 was not faithful)
    "ps-fan-in-bw/p4-bw20",
    # 2026-11-29: PS and ring on four workers of one switch (BCube(4,1)), 20 Mbit/s; BML beside PS
    # there; PS again after its executor posted its receives first; three files run again with it
    "ps-fan-in-bw/one-switch-p4", "ps-fan-in-bw/one-switch-bml-p4", "ps-fan-in-bw/one-switch-recv-first-p4",
    "ps-recv-first/default", "ps-recv-first/bml-bcube32-vs-ps-fattree", "ps-recv-first/bml-bcube42-vs-ps-fattree",
    # the same three files again later that day (two in the fit half), so that PS with its receives
    # first has runs on both sides of the split
    "ps-recv-first/default-r2", "ps-recv-first/bml-bcube32-vs-ps-fattree-r2",
    "ps-recv-first/bml-bcube42-vs-ps-fattree-r2",
    # and once more that afternoon (13:23-13:32 UTC, a quieter hour), named so that all three fall
    # in the fit half: more PS with its receives first to fit e on
    "ps-recv-first/default-r3", "ps-recv-first/bml-bcube32-vs-ps-fattree-r4",
    "ps-recv-first/bml-bcube42-vs-ps-fattree-r3",
    # 2026-11-29: the block-sparse executors with a step's receives before its sends, ResNet-18
    "blocksparse-order/receives-first",
)
PROJECTED = ("default", "bml-bcube32-vs-ps-fattree", "bml-bcube42-vs-ps-fattree", "dfs-resnet18-digits", *DFS_AGAIN,
             "train-lenet5-digits", "mgwfbp-fattree8", "mgwfbp-fattree8-resnet50",
             *(f"forest-scenarios/{f}" for f in FOREST),
             *(f"gtopk-scaling-fattree/p{p}" for p in (4, 8, 16, 32)), *GTOPK_AGAIN,
             "small-messages/bcube32", "small-messages/bcube32-check", *EVERY_FAITHFUL)


# The validation's files run again with CUBIC in the hosts (docs/FIDELITY.md #22; every folder
# above ran BBR, this machine's kernel default, until 2026-11-29): a validation of their own, the
# round latency and the fan-in efficiency fitted on their own fit half (`CUBIC_FAN_IN`).
# 2026-11-29: the hd file, the default file and both BML files twice, each beside its BBR run of
# that afternoon; tcp-cc/hd-kernel-bbr (that BBR run) is left out of both validations (it ran BBR
# on purpose). 2026-12-01, a quiet hour (CPU probe 14-20 ms at its fastest), one after the other,
# each named into the half noted: the default file again (fit), hd on the two-level Fat-Tree
# (fit), the BCube(4,2) BML file a third time (held out), forest scenario 3 at half speed (fit)
# and whole (held out), gTop-k on ResNet-50 at P = 8 (fit), MG-WFBP's 8-worker GoogLeNet file
# (held out), the small-message file (fit), LeNet-5 training (held out) and the DFS file at 40
# iterations (fit). 2026-12-02, another quiet hour: BML on BCube(2,3) and BCube(2,4) (held out;
# experiments/bml_stages_*.yaml; BCube(2,4) again at 10 and at 5 Mbit/s, its BML runs at 20 and
# 10 not faithful), the BCube(4,2) BML file a fourth time (fit) and the BCube(3,2) one a third
# (held out), forest scenarios 1 (fit), 4 (held out) and 5's slow level (fit), gTop-k on VGG-16
# at P = 8 (held out) and MG-WFBP's 4-worker matrix (held out). 2026-12-02 07:45-08:20, after a
# fresh-clone CI: PS against P on the two-level Fat-Tree (experiments/ps_incast_fattree.yaml;
# P = 4 and 8 held out, 12 fit), forest scenarios 2 and 5 dilated (fit), gTop-k on ResNet-50
# (held out) and VGG-16 (fit) at P = 16, MG-WFBP's GoogLeNet at 16 workers (fit) and ResNet-50
# at 8 (held out). 2026-12-02 11:38-12:03 and 12:47-12:57, each after a fresh-clone CI: PS
# against P on Fat-Tree k=6 (experiments/ps_incast_fattree6.yaml, halves in the comments below),
# MG-WFBP's DenseNet-201 at 8 workers (fit) and forest scenario 5 at half speed (held out).
BW5_SCAN = (24, 32, 40, 20, 28, 48, 16)  # the k=6 PS scan at 5 Mbit/s, in the order it ran (2026-12-03)
# pre-registered in commit 7bdcd60c's message: form D against the same form with its share fitted
# per topology kind on the same fit-half runs, at 36 and 44 workers on k=6 (10 Mbit/s, 2 MiB)
SHARE_KIND_TEST = ("tcp-cc/ps-k6-p36-bw10-cubic", "tcp-cc/ps-k6-p44-bw10-spread-cubic")
CUBIC_FOLDERS = ("tcp-cc/hd-cubic", "tcp-cc/default-cubic", "tcp-cc/bml-bcube32-vs-ps-fattree-cubic",
                 "tcp-cc/bml-bcube32-vs-ps-fattree-cubic-r2", "tcp-cc/bml-bcube42-vs-ps-fattree-cubic",
                 "tcp-cc/bml-bcube42-vs-ps-fattree-cubic-r2",
                 *(f"tcp-cc/{f}" for f in (
                     "default-cubic-dec01", "hd-two-level-cubic", "bml-bcube42-vs-ps-fattree-cubic-r3",
                     "forest-s3-half-speed-cubic", "forest-s3-oversubscribed-cubic", "gtopk-resnet50-p8-cubic",
                     "mgwfbp-fattree8-googlenet-cubic", "small-messages-bcube32-cubic", "train-lenet5-digits-cubic",
                     "dfs-resnet18-digits-iters40-cubic", "bml-stages-bcube23-cubic", "bml-stages-bcube24-cubic",
                     "bml-bcube42-vs-ps-fattree-cubic-r4", "bml-stages-bcube24-bw10",
                     "bml-bcube32-vs-ps-fattree-cubic-r3", "forest-s1-homogeneous-cubic", "forest-s4-background-cubic",
                     "gtopk-vgg16-p8-cubic", "forest-s5-bcube-slow-level-cubic", "mgwfbp-fattree4-cubic",
                     "bml-stages-bcube24-5mbit", "ps-scan-p4-cubic", "ps-scan-p8-cubic", "ps-scan-p12-cubic",
                     "forest-s2-slow-hosts-cubic", "forest-s5-dilated-cubic", "gtopk-resnet50-p16-cubic",
                     "gtopk-vgg16-p16-cubic", "mgwfbp-fattree16-googlenet-cubic", "mgwfbp-fattree8-resnet50-cubic",
                     # 11:38-12:03: the PS scan on Fat-Tree k=6 at 10 Mbit/s (P = 24, 32 held out; 8, 16 fit)
                     "ps-scan-p24-cubic", "ps-scan-p32-cubic", "ps-scan-k6-p16-cubic", "ps-scan-k6-p8-cubic",
                     "mgwfbp-fattree8-densenet201-cubic", "forest-s5-half-speed-cubic",
                     # 12:47-12:57: the k=6 scan at 20 Mbit/s (P = 8 fit, 16 held out and not faithful) and
                     # 5 Mbit/s (P = 24 held out), and P = 24 at 10 Mbit/s again (fit)
                     "ps-scan-k6-p8-bw20-cubic", "ps-scan-k6-p16-bw20-cubic", "ps-scan-p24-bw5-cubic",
                     "ps-scan-p24-cubic-r2")),
                 # 2026-12-02 15:20-15:45: with ovs-vswitchd's send buffer at 64 MiB (docs/FIDELITY.md #23),
                 # the k=6 scan again (P = 24, 32 twice, 16 fit; 28 and the first 32, not faithful, held
                 # out; 20 fit) and forest scenario 3's oversubscribed Fat-Tree (held out)
                 *(f"ovs-sndbuf/{f}" for f in (
                     "ps-p24-64m", "ps-p32-64m", "ps-p32-64m-r2", "forest-s3-oversubscribed-64m", "ps-p24-64m-r2",
                     "ps-k6-p16-64m", "ps-p28-64m", "ps-p32-64m-r4", "ps-p20-64m")),
                 # 2026-12-02 17:45-18:28, after the stop's fresh-clone CI had landed: forest scenario 3
                 # at half the link speeds with all four algorithms (PS on the oversubscribed core
                 # again; held out), MG-WFBP's 8-worker Inception-v3 and ResNet-152 (held out), PS at
                 # 40 workers on k=6 (held out) and the BCube(4,2) BML file's VGG-19 at half speed (fit)
                 *(f"ovs-sndbuf/{f}" for f in ("forest-s3-half-speed-64m", "ps-p40-64m")),
                 *(f"tcp-cc/{f}" for f in ("mgwfbp-fattree8-inception_v3-cubic", "mgwfbp-fattree8-resnet152-cubic",
                                           "bml-bcube42-vgg19-half-speed-cubic")),
                 # 19:16-19:25, after that stop's fresh-clone CI, PS and ring on forest scenario 3's
                 # oversubscribed core, all held out: at half speed with the hosts' minimum RTO at 10 s
                 # (are its spurious timeouts what PS loses there?), at a quarter speed (per byte or
                 # per flow?), and at half speed again
                 "rto-min/forest-s3-half-speed-rto10000",
                 *(f"ovs-sndbuf/{f}" for f in ("forest-s3-quarter-speed-64m", "forest-s3-half-speed-64m-r2")),
                 # 2026-12-02 20:53-21:08, PS and ring, each named into its half before it ran: forest
                 # scenario 3 at half speed with the core at 2:1, 8:1 and 4:1 again (fit: what e_o is
                 # fitted on, the 4:1 runs above held out), and PS at 48 and 54 workers on k=6 (held
                 # out; 54 not faithful); 22:03-22:17: PS at 54 at 5 Mbit/s (held out) and MG-WFBP's
                 # 16-worker ResNet-50 (fit)
                 *(f"ovs-sndbuf/{f}" for f in ("forest-s3-half-speed-2to1-64m", "forest-s3-half-speed-8to1-64m",
                                               "forest-s3-half-speed-64m-r4", "ps-p48-bw10-64m", "ps-p54-bw10-64m",
                                               "ps-p54-bw5-64m")),
                 "tcp-cc/mgwfbp-fattree16-resnet50-cubic",
                 # 22:53-22:59, after that fresh-clone CI: PS and ring on a second oversubscribed Fat-Tree, k=6 with
                 # its core at 4:1, 24 workers (held out: does e_o, fitted on k=4, carry over?)
                 "ovs-sndbuf/ps-k6-p24-core4to1-64m",
                 # 2026-12-03 02:28-02:40, PS and ring: which oversubscribed cores lose? Scenario 3's at
                 # 4:1 with 8 workers (held out), k=6's at 4:1 with three full pods (fit; not faithful at
                 # 10 Mbit/s, nor again at 5 Mbit/s with the core at 1.25); 02:48-02:53, scenario 3's
                 # with 9 (held out) and 10 workers spread (fit), whose busiest core links feed less
                 # loaded ones: the test of fanin.in_series, chosen with the projection before they ran
                 *(f"ovs-sndbuf/{f}" for f in ("forest-s3-half-speed-p8-64m", "ps-k6-p27-core4to1-ordered-64m",
                                               "ps-k6-p27-core4to1-ordered-bw5-64m", "forest-s3-half-speed-p9-64m",
                                               "forest-s3-half-speed-p10-64m")),
                 # 02:53-03:20, three more of the validation's files with CUBIC, each in the fit half by
                 # its name: MG-WFBP's INFOCOM GoogLeNet at 8 workers, gTop-k's ResNet-20 at P = 32 on
                 # k=6, MG-WFBP's Inception-v3 at 16 workers
                 *(f"tcp-cc/{f}" for f in ("mgwfbp-fattree8-infocom-cubic", "gtopk-resnet20-p32-cubic",
                                           "mgwfbp-fattree16-inception_v3-cubic")),
                 # 2026-12-03 06:11-06:35, PS and ring: the k=6 scan at 5 Mbit/s (does the loss per
                 # converging flow follow the link rate?), P = 20, 24, 28 and 32 in the fit half by
                 # their names, 16, 40 and 48 held out
                 *(f"ovs-sndbuf/ps-p{p}-bw5-64m" for p in BW5_SCAN),
                 # 06:50-07:21, two more of the validation's files: gTop-k's ResNet-50 at P = 32 on k=6
                 # at 4 Mbit/s (held out by its name) and MG-WFBP's DenseNet-201 at 16 workers (fit)
                 "tcp-cc/gtopk-resnet50-p32-cubic", "tcp-cc/mgwfbp-fattree16-densenet201-cubic",
                 # 2026-12-03 09:04-10:03, more of the validation's files, each in the fit half by its
                 # name: gTop-k's VGG-16 and AlexNet at P = 32 on k=6 at 5 Mbit/s, MG-WFBP's ResNet-152 at
                 # 16 workers, forest scenario 5's chunk and tree-count variants
                 *(f"tcp-cc/{f}" for f in ("gtopk-vgg16-p32-cubic", "gtopk-alexnet-p32-cubic",
                                           "mgwfbp-fattree16-resnet152-cubic", "forest-s5-variants-cubic")),
                 # 2026-12-03 16:04-17:25, the DFS paper's whole file (150 iterations), held out by its
                 # name; then PS and ring, each held out by its name, the test of the incast start-up's
                 # forms pre-registered in commit a64f74a1's message: k=6 at 2.5 Mbit/s, BCube(2,3) and
                 # BCube(4,2) at 5 Mbit/s ("The PS scan")
                 *(f"tcp-cc/{f}" for f in ("dfs-resnet18-digits-150-cubic", "ps-k6-p16-bw2.5-cubic",
                                           "ps-bcube23-5mbit-cubic", "ps-bcube42-2mib-bw5-cubic",
                                           # 17:22, pre-registered in commit bbcc9aaf's message: BCube(2,4)
                                           # at 2.5 Mbit/s, where the forms' charges differ most on n = 2
                                           "ps-bcube24-2.5mbit-2mib-cubic")),
                 # 2026-12-04 00:35-00:45, pre-registered in commit 3238cf34's message, held out by
                 # their names: PS and ring at 8 MiB on k=6 at 10 Mbit/s, P = 16 and 24 (is the start-up
                 # a cost per flow at four times the gradient, and does form C hold there?)
                 *(f"tcp-cc/{f}" for f in ("ps-k6-p16-8mib-cubic", "ps-k6-p24-8mib-bw10-cubic")),
                 # 2026-12-04 04:35-04:42, pre-registered (commit message before it ran): forest scenario 5
                 # again with the CPU-independent forest planner (forest._exp), every algorithm, held out
                 "tcp-cc/forest-s5-bcube-slow-level-r2-cubic",
                 # 04:46-04:48, pre-registered: PS and ring at P = 9 under 2 MiB (0.25, 0.5, 1 MiB), what
                 # PS loses per converging flow there; held out by the names they were kept under (every
                 # PS run not faithful: ovs-vswitchd near a core)
                 *(f"tcp-cc/ps-small-p9-mb{mb}-cubic" for mb in ("0-25", "0-5", "1")),
                 # 09:30-09:44, pre-registered in commits 28635f37 and b8f8fe31: the same at 5 Mbit/s, where
                 # PS is faithful (but at 0.0625 MiB), 0.0625 to 2 MiB; halves by name (0.125, 0.5, 2 fit)
                 *(f"tcp-cc/ps-small-p9-bw5-mb{mb}-cubic" for mb in ("0-0625", "0-125", "0-1875", "0-25", "0-5", "1",
                                                                     "2")),
                 # 11:08-, pre-registered in commit abe45fa7: form D away from where it was fitted, held out
                 "tcp-cc/ps-small-k4-p16-bw5-mb0-25-cubic", "tcp-cc/ps-bcube32-bw5-mb0-25-cubic",
                 # 2026-12-04 evening, fit half by their names: PS under 2 MiB on BCube
                 "tcp-cc/ps-bcube32-bw5-mb0-125-cubic", "tcp-cc/ps-bcube32-bw5-mb0-5-cubic",
                 "tcp-cc/ps-bcube42-bw5-mb0-25-cubic", "tcp-cc/ps-bcube23-bw5-mb0-25-cubic",
                 # held out by their names, pre-registered in commits d80f34c8 and 47aad58e
                 "tcp-cc/ps-bcube32-bw5-mb0-75-cubic", "tcp-cc/ps-bcube42-bw5-mb1-cubic",
                 "tcp-cc/ps-bcube24-bw5-mb0-5-cubic", "tcp-cc/ps-bcube23-bw5-mb1-cubic",
                 # held out by its name, pre-registered in the commit before it: four-worker PS at 100 Mbit/s
                 "tcp-cc/ps-p4-bw100-mb16-cubic",
                 # held out by its name, pre-registered in the commit before it: form D at P = 16, 2.5 Mbit/s
                 "tcp-cc/ps-small-k4-p16-bw2-5-mb0-25-cubic",
                 # held out by its name, pre-registered in the commit before it: the two-port rule at 0.125 MiB
                 "tcp-cc/ps-bcube23-bw5-mb0-125-cubic-r2",
                 # 2026-12-05 01:16-01:21, held out by their names, pre-registered in commit 7bdcd60c: a
                 # share of the incast cap per topology kind against form D, k=6 at 10 Mbit/s, P = 36 and 44
                 *SHARE_KIND_TEST,
                 # 2026-12-05 06:47-06:50, held out by its name, pre-registered in commit 5c54d67f: the
                 # block-sparse steps' two rounds on the DFS file's ResNet-20 row (its first run, 06:45,
                 # failed the link calibration: not faithful, not kept)
                 "tcp-cc/dfs-resnet20-rounds-cubic",
                 # 07:08-07:11, held out by its name, pre-registered in the commit before it: the same
                 # row at 200 Mbit/s, where the rounds are a larger share of the sync
                 "tcp-cc/dfs-resnet20-rounds-bw200-cubic",
                 # 2026-12-05 09:59-10:04, held out by their names, pre-registered in commit 625ac617:
                 # the start-up per round in units of the hour's CPU speed (projection-blocksparse-cpu-unit)
                 "tcp-cc/dfs-resnet20-speed-cubic", "tcp-cc/dfs-resnet20-speed-bw200-cubic")


def host_tcp(run: dict) -> str:
    """The TCP congestion control a measured run's hosts used: recorded since 2026-11-29 (config
    `tcp_cc`); before, nothing set it and the hosts inherited this machine's kernel default,
    BBR (our reading: docs/FIDELITY.md #22)."""
    return run.get("tcp_congestion_control") or "bbr"


TOLERANCE = 0.10  # the issue's target for dense algorithms at the emulated scale


LATENCY_MIN_BYTES = 2 * MB  # below this a ring's rounds, not its bytes, set the time: not fitted


LAYERWISE = ("wfbp", "single", "fusion", "mgwfbp")


def projected_name(folder: str) -> str:
    """docs/results/projection-vs-measured/<name>/ of a measured folder (scripts/project_measured.sh)."""
    return folder.removeprefix("forest-scenarios/").replace("/", "-")


def in_fit_half(name: str) -> bool:
    """The split: a folder's runs fit the round latency when the CRC-32 of its name is even, and
    are held out otherwise. By folder, so no experiment is on both sides; by a hash of the name,
    so adding a folder moves no other."""
    import zlib
    return zlib.crc32(name.encode()) % 2 == 0


def fit_round_latency(points) -> float:
    """L minimizing sum ((simulated + L x rounds) / measured - 1)^2 over `points`, each (measured s,
    simulated s with no latency, message rounds per sync): the start-up of one round, fitted on
    the relative error the validation reports, on exactly what it validates (simulated + L x
    rounds; no factor on the bandwidth term). Relative, so that a run of tens of seconds does not
    outweigh dozens of a second (until 2026-11-29 the fit was on seconds with a free factor c:
    one 28-s ring moved its L from 5.05 ms to -1.1 ms). Pure (closed form of one-parameter least
    squares); ValueError without a run that has rounds."""
    pts = [(float(m), float(s), float(k)) for m, s, k in points if float(m) > 0]
    xs = [k / m for m, _, k in pts]
    if not any(xs):
        raise ValueError(f"fitting a round latency needs a run with message rounds, got {len(pts)} run(s)")
    ys = [1.0 - s / m for m, s, _ in pts]
    return sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)


def fit_incast(points) -> tuple[float, float]:
    """(t, b) minimizing sum ((base + x (t + 8 b / r)) / measured - 1)^2 with t, b >= 0 over
    `points`, each (measured s, base s: simulated plus L x rounds, x: flows into a step's busiest
    NIC beyond the first summed over a sync, r: the hosts' link rate in Mbit/s): an incast
    start-up of t seconds plus b bytes at the link rate per converging flow (`fanin.incast_startup`),
    on the relative error as L is (`fit_round_latency`). Linear in (t, b): scipy's non-negative
    least squares, on columns scaled to one. Where every run has one rate, t and b are not told
    apart and the fit keeps the time alone (b = 0). Pure; ValueError without a run with
    converging flows."""
    import numpy as np
    from scipy.optimize import nnls

    pts = [(float(m), float(s), float(x), float(r)) for m, s, x, r in points if float(m) > 0]
    if not any(x for _, _, x, _ in pts):
        raise ValueError(f"fitting an incast start-up needs a run with converging flows, got {len(pts)} run(s)")
    a = np.array([[x / m, 8 * x / (r * 1e6) / m] for m, _, x, r in pts])
    y = np.array([1.0 - s / m for m, s, _, _ in pts])
    scale = np.where(a.max(axis=0) > 0, a.max(axis=0), 1.0)
    if len({r for _, _, x, r in pts if x}) < 2:  # one rate: a time alone (the bytes would be the same fit)
        scale[1], a[:, 1] = 1.0, 0.0
    sol, _ = nnls(a / scale, y)
    t, b = (float(v) for v in sol / scale)
    return t, b


def fit_incast_past_slack(points) -> tuple[float, float]:
    """(t, b) minimizing sum ((base + max(0, x (t + 8 b / r) - h)) / measured - 1)^2 with t, b >= 0
    over `points`, each (measured, base, x, r) as `fit_incast`'s and h: the seconds a sync's
    busiest link needs beyond its NICs' (its bound less its non-blocking bound), so that the
    start-up is charged only past that slack (a NIC's stalls hidden behind a busier uplink cost
    nothing until they outlast it; docs/PROJECTION.md, "The PS scan"). Piecewise linear in
    (t, b): scipy's bounded least squares from `fit_incast`'s answer and from a grid of starts,
    the best kept. Pure; ValueError without a run with converging flows."""
    import numpy as np
    from scipy.optimize import least_squares

    pts = np.array([[float(m), float(s), float(x), float(r), max(0.0, float(h))]
                    for m, s, x, r, h in points if float(m) > 0])
    if not len(pts) or not pts[:, 2].any():
        raise ValueError(f"fitting an incast start-up needs a run with converging flows, got {len(pts)} run(s)")
    m, s, x, r, h = pts.T
    one_rate = len(set(r[x > 0])) < 2
    bscale = 1e4  # b in units of 10 kB, so that both unknowns are of order 0.01-1

    def resid(v):
        t, b = v[0], 0.0 if one_rate else v[1] * bscale
        return (s + np.maximum(0.0, x * (t + 8 * b / (r * 1e6)) - h)) / m - 1.0

    t0, b0 = fit_incast([(a, c, d, e) for a, c, d, e, _ in pts])
    starts = [(t0, b0 / bscale)] + [(tt, bb) for tt in (0.0, 0.01, 0.03, 0.1) for bb in (0.0, 1.0, 4.0)]
    best = min((least_squares(resid, np.array(v, float), bounds=([0, 0], [np.inf, np.inf]), method="trf")
                for v in starts), key=lambda res: float(np.sum(res.fun ** 2)))
    return float(best.x[0]), 0.0 if one_rate else float(best.x[1] * bscale)


def fit_incast_share(points, hi: float = 4.0) -> float:
    """c minimizing sum ((base + past_slack(x min(S, c f), h)) / measured - 1)^2 over `points`,
    each (measured s, base s: simulated plus L x rounds, x: extra converging flows per sync, S:
    the incast start-up per flow in seconds, f: one converging flow's bytes at the hosts' link
    rate in seconds, h: the sync's slack): the share of its own bytes a flow's start-up is capped
    at (`fanin.capped_startup`), with S fixed (fitted on the runs of 2 MiB or more). Piecewise
    smooth in c and flat past where no run's cap binds: a grid over [0, hi] then scipy's bounded
    search around its best; the smallest c of the flat best is kept. Pure; ValueError without a
    run with converging flows."""
    import numpy as np
    from scipy.optimize import minimize_scalar

    pts = np.array([[float(m), float(b), float(x), float(S), float(f), max(0.0, float(h))]
                    for m, b, x, S, f, h in points if float(m) > 0])
    if not len(pts) or not (pts[:, 2] > 0).any():
        raise ValueError(f"fitting an incast share needs a run with converging flows, got {len(pts)} run(s)")
    m, b, x, S, f, h = pts.T

    def cost(c: float) -> float:
        charged = np.maximum(0.0, x * np.minimum(S, c * f) - h)
        return float(np.sum(((b + charged) / m - 1.0) ** 2))

    grid = np.linspace(0.0, hi, 4001)
    costs = np.array([cost(c) for c in grid])
    i = int(np.argmin(costs))
    lo_, hi_ = grid[max(0, i - 1)], grid[min(len(grid) - 1, i + 1)]
    res = minimize_scalar(cost, bounds=(lo_, hi_), method="bounded", options={"xatol": 1e-6})
    best = float(res.x) if res.fun <= costs[i] else float(grid[i])
    flat = grid[costs <= cost(best) + 1e-12]  # past every cap the cost stops changing: keep the least c
    return float(min(best, flat.min())) if len(flat) else best


def _sources(folders) -> tuple:
    return tuple(rel for f in folders
                 for rel in (f"{f}/summary.json", f"projection-vs-measured/{projected_name(f)}/summary.json"))


PROJECTION_SOURCES = _sources(PROJECTED)
CUBIC_SOURCES = _sources(CUBIC_FOLDERS)


# Executors changed after some folders were measured: (algorithms, when the change landed, what
# changed). A run of one of them in a folder started before that moment measured code that no
# longer runs: it stays in every table, marked, and out of the fan-in fit and the counts of the
# algorithm as it runs today (docs/PROJECTION.md, "Fan-in").
EXECUTOR_CHANGES = ((("ps",), "2026-11-29T07:20:00", "sends first"),
                    (("dfs", "omnireduce", "topk_ps"), "2026-11-29T10:36:00", "sends first"))


def superseded(algorithm: str | None, started: str | None) -> str | None:
    """What changed in `algorithm`'s executor since a folder started at `started` (ISO time), or None."""
    for algos, since, what in EXECUTOR_CHANGES:
        if algorithm in algos and started is not None and started < since:
            return what
    return None


def algo_label(r: dict, key: str = "algorithm") -> str:
    """A row's algorithm (or its `key`, e.g. "algo_spec"), marked when its executor has been
    replaced since it was measured."""
    return r[key] + (f" ({r['superseded']}, superseded)" if r.get("superseded") else "")


def _validation(data: dict, folders: tuple = PROJECTED, cc: str = "bbr") -> list[dict]:
    """Every run of `folders` simulated against measured: the projection's row, its rounds, the
    measured run, the folder's side of the split. Refuses a projection older than its measured
    folder, and a run whose hosts ran another congestion control than `cc` (each validation
    holds one: `CUBIC_FOLDERS`)."""
    out = []
    for folder in folders:
        name = projected_name(folder)
        proj = data[f"projection-vs-measured/{name}/summary.json"]
        measured = runs_of(data, f"{folder}/summary.json")
        sims = {(r["topology"], r["algo_spec"], r["model"]): r for r in proj.get("runs", [])}
        for v in proj.get("validation") or []:
            key = (v["topology"], v["algo_spec"], v["model"])
            m = find(measured, folder, topology=key[0], spec=key[1], model=key[2])
            now = num(m.get("median_sync_seconds"))
            if now is None or abs(now - v["measured_seconds"]) > 1e-9 * max(1.0, now):
                raise ValueError(f"projection-vs-measured/{name} simulated other runs than docs/results/{folder} "
                                 f"now holds ({key[1]} on {key[0]}: {v['measured_seconds']} s then, {now} s now): "
                                 f"rerun `bash scripts/project_measured.sh {folder}`")
            if host_tcp(m) != cc:
                raise ValueError(f"docs/results/{folder}: {key[1]} on {key[0]} ran {host_tcp(m)} in its hosts; this "
                                 f"validation holds {cc} runs only")
            sim = sims[key]
            if sim.get("round_latency_seconds"):
                raise ValueError(f"projection-vs-measured/{name} was simulated with a round latency; the fit needs 0")
            started = data[f"{folder}/summary.json"].get("started")
            out.append({**v, "experiment": name, "folder": folder, "fit": in_fit_half(name), "run": m, "sim": sim,
                        "rounds": sim.get("rounds_per_sync"), "algorithm": m.get("algorithm"),
                        # the slowest of the hosts' NIC links, where the incast start-up's bytes are
                        # charged (core.incast_of)
                        "link_mbps": min(sim["link_mbps"]) if isinstance(sim.get("link_mbps"), list)
                        else num(sim.get("link_mbps")),
                        "gradient_bytes": num(m.get("gradient_bytes")) or 0,
                        "superseded": superseded(m.get("algorithm"), started)})
    return out


def _fit_points(rows, fit: bool) -> list[dict]:
    return [r for r in rows if r["fit"] == fit and r["algorithm"] in ("ring", "gloo") and r["rounds"]
            and r["gradient_bytes"] >= LATENCY_MIN_BYTES and r["faithful"] is True]


def _fitted(rows) -> tuple[float, list, list]:
    """(L, fit-half points, held-out points)."""
    fit, held = _fit_points(rows, True), _fit_points(rows, False)
    lat = fit_round_latency([(r["measured_seconds"], r["simulated_seconds"], r["rounds"]) for r in fit])
    return lat, fit, held


def _with_latency(r: dict, lat: float) -> float | None:
    """What `syncbed project --round-latency lat` gives: every round's start-up before its step
    (serial steps, constant background), so the zero-latency time plus lat x rounds."""
    return None if r["rounds"] is None or r["simulated_seconds"] is None else r["simulated_seconds"] + lat * r["rounds"]


def projection_validation(data: dict) -> list[str]:
    """Every measured run with a simulated form: simulated (no latency, and with the latency fitted
    on the other half of the folders) against measured."""
    rows = _validation(data)
    lat, _, _ = _fitted(rows)
    cells = []
    for r in rows:
        with_lat = _with_latency(r, lat)
        it = (f"{fmt(r.get('measured_iteration_seconds'), '.3f')} / {fmt(r.get('simulated_iteration_seconds'), '.3f')}"
              if r.get("measured_iteration_seconds") is not None else "")
        cells.append([r["experiment"], "fit" if r["fit"] else "held out", r["topology"], algo_label(r, "algo_spec"),
                      str(r["model"]), str(r["workers"]), fmt(r["measured_seconds"], ".3f"),
                      fmt(r["simulated_seconds"], ".3f"), fmt(r["sim_over_measured"], ".2f"),
                      fmt(r["rounds"], "g"), fmt(with_lat, ".3f"),
                      fmt(common.ratio(with_lat, r["measured_seconds"]), ".2f"), fmt(r["measured_over_bound"], ".2f"),
                      it, verdict(r["run"])])
    return table(["experiment", "half", "topology", "algorithm", "model", "N", "measured s", "simulated s (L = 0)",
                  "sim/meas", "rounds", f"simulated s (L = {lat * 1e3:.2f} ms)", "sim/meas", "meas/bound",
                  "iteration meas / sim s", "faithful"], cells)


def _ratios(rows, lat=None) -> list[float]:
    out = []
    for r in rows:
        sim = r["simulated_seconds"] if lat is None else _with_latency(r, lat)
        x = common.ratio(sim, r["measured_seconds"])
        if x is not None:
            out.append(x)
    return out


def _mean_error(ratios) -> float | None:
    return statistics.mean(abs(x - 1) for x in ratios) if ratios else None


def _within(ratios) -> int:
    return sum(1 for x in ratios if abs(x - 1) <= TOLERANCE)


def projection_latency_fit(data: dict) -> list[str]:
    """The round latency fitted on one half of the folders, checked on the other half."""
    return _latency_fit(_validation(data)) + _additivity(data)


def projection_cubic_latency_fit(data: dict) -> list[str]:
    """The same on the folders run with CUBIC in the hosts: their own L."""
    return _latency_fit(_validation(data, CUBIC_FOLDERS, "cubic"))


def _latency_fit(rows: list[dict]) -> list[str]:
    lat, fit, held = _fitted(rows)
    lines = [f"Fit: simulated (L = 0) + L x rounds against measured, least squares of the relative error over the "
             f"{len(fit)} faithful ring and gloo runs with gradients of 2 MiB or more in the fit half "
             f"({', '.join(sorted({r['experiment'] for r in fit}))}): **L = {lat * 1e3:.2f} ms per round**.", ""]
    cells = []
    for half, pts in (("fit", fit), ("held out", held)):
        r0, rl = _ratios(pts), _ratios(pts, lat)
        cells.append([half, str(len(pts)), ", ".join(sorted({r["experiment"] for r in pts})) or NA,
                      span(r0), pct(_mean_error(r0)), f"{_within(r0)} of {len(r0)}", span(rl), pct(_mean_error(rl)),
                      f"{_within(rl)} of {len(rl)}"])
    lines += table(["half", "runs", "experiments", "sim/meas, L = 0", "mean abs(sim/meas - 1)",
                    f"within {TOLERANCE:.0%}", f"sim/meas, L = {lat * 1e3:.2f} ms", "mean abs(sim/meas - 1)",
                    f"within {TOLERANCE:.0%}"], cells)
    exps = sorted({r["experiment"] for r in fit})
    if len(exps) > 1:  # how far one folder moves the fit: each fit-half folder left out in turn
        loo = {x: fit_round_latency([(r["measured_seconds"], r["simulated_seconds"], r["rounds"])
                                     for r in fit if r["experiment"] != x]) for x in exps}
        lo, hi = min(loo, key=loo.get), max(loo, key=loo.get)
        lines += ["", f"Each fit-half folder left out in turn, L = {loo[lo] * 1e3:.2f} ms (without {lo}) to "
                      f"{loo[hi] * 1e3:.2f} ms (without {hi})."]
    with_lat = [(r, common.ratio(_with_latency(r, lat), r["measured_seconds"])) for r in held]
    outside = [f"{r['experiment']} {r['topology']} {r['algo_spec']} {r['model']} ({x:.2f})"
               for r, x in with_lat if abs(x - 1) > TOLERANCE]
    lines += ["", "Held out and outside 10% with the fitted L: " + ("; ".join(outside) or "none") + "."]
    by_p: dict = {}
    for r in fit + held:  # what each run implies per round: (measured - simulated at L = 0) / rounds
        by_p.setdefault(r["workers"], []).append((r["measured_seconds"] - r["simulated_seconds"]) / r["rounds"])
    lines += ["", "The start-up per round each of these runs implies, (measured - simulated at L = 0) / rounds, by P "
              "(both halves): " + "; ".join(f"P = {p}: median {1e3 * statistics.median(v):.1f} ms, "
                                            f"{span([1e3 * x for x in v], '.1f')} ms "
                                            f"({len(v)} run{'' if len(v) == 1 else 's'})"
                                            for p, v in sorted(by_p.items())) + "."]
    return lines


ADDITIVITY = tuple(f"projection-validation/{projected_name(f)}/summary-latency{x}.json"  # the folders of 2026-11-23
                   for f in PROJECTED if f not in ("gtopk-scaling-fattree/p32", *DFS_AGAIN, *GTOPK_AGAIN, *EVERY_FAITHFUL)
                   and not f.startswith("small-messages/")
                   for x in ("0", "3.1ms"))


def _additivity(data: dict) -> list[str]:
    """The claim `_with_latency` rests on, checked on the earlier projections run both ways."""
    worst, n = 0.0, 0
    for rel0 in ADDITIVITY[::2]:
        zero, lat = data[rel0], data[rel0.replace("latency0", "latency3.1ms")]
        base = {(r["topology"], r["algo_spec"], r["model"]): r for r in zero.get("runs", [])}
        for r in lat.get("runs", []):
            b = base.get((r["topology"], r["algo_spec"], r["model"]))
            if b is None or r.get("rounds_per_sync") is None:
                continue
            n += 1
            step = r["round_latency_seconds"]
            worst = max(worst, abs(r["simulated_seconds"] - (b["simulated_seconds"] + step * r["rounds_per_sync"])))
    if not n:
        raise ValueError("no earlier projection run both with and without a round latency to check additivity")
    return ["", f"The column with L is the zero-latency simulation plus L x rounds: `syncbed project --round-latency "
                f"L` charges each round's start-up before its step, and steps run one after another. Checked on the "
                f"{n} runs projected both ways in `docs/results/projection-validation/` (L = 0 and 3.1 ms): largest "
                f"difference {worst * 1e6:.1f} us."]


def _family(r: dict) -> str:
    a = r["algorithm"]
    if a in ("ring", "gloo"):
        return "ring, gloo (2 MiB and more)" if r["gradient_bytes"] >= LATENCY_MIN_BYTES else \
            "ring, gloo (under 2 MiB)"
    if a in ("gtopk", "topk"):
        return "gTop-k, Top-k (density 0.001)"
    if r["sim"].get("bytes_source") == "logged":  # data-dependent: its logged bytes replayed
        return "DFS, OmniReduce, Top-k PS (logged bytes)"
    if a in LAYERWISE:
        return "layer-wise (sync after backprop)"
    return {"ps": "PS", "bml": "BML", "forest": "forest"}.get(a, a)


def projection_families(data: dict) -> list[str]:
    """Simulated / measured by family of algorithm: where the flow model holds and where not."""
    rows = _validation(data)
    lat, _, _ = _fitted(rows)
    fams: dict = {}
    for r in rows:
        fams.setdefault(_family(r), []).append(r)
    cells = []
    for fam, rs in fams.items():
        faithful = [r for r in rs if r["faithful"] is True]
        r0 = _ratios(rs)
        it = [x for x in (r.get("iteration_sim_over_measured") for r in faithful) if x is not None]
        cells.append([fam, str(len(rs)), str(len(faithful)), span(r0), span(_ratios(faithful)),
                      f"{_within(r0)} of {len(r0)}", span(_ratios(rs, lat)) if any(r["rounds"] for r in rs) else NA,
                      span([r["measured_over_bound"] for r in rs]), span(it, ".3f") if it else NA])
    dense = fams.get("ring, gloo (2 MiB and more)", [])
    outside = [f"{r['experiment']} {r['topology']} {r['algo_spec']} {r['model']} ({r['sim_over_measured']:.2f}, "
               f"{verdict(r['run']).strip('*').lower()})" for r in dense
               if r["sim_over_measured"] is not None and abs(r["sim_over_measured"] - 1) > TOLERANCE]
    return table(["family", "runs", "faithful", "sim/meas, L = 0", "faithful runs only", f"within {TOLERANCE:.0%}",
                  f"sim/meas, L = {lat * 1e3:.2f} ms", "meas/bound", "iteration sim/meas, faithful"], cells) + [
        "", "Ring and gloo with 2 MiB or more outside 10% at L = 0 (sim/meas, faithful): "
            + ("; ".join(outside) or "none") + "."]


SMALL_MESSAGES = ("small-messages/bcube32", "small-messages/bcube32-check")  # in PROJECTED: fit, held out
SMALL_REPEAT = "small-messages/bcube32-check-r2"  # the held-out file run again right after (projected since 2026-11-29)
SMALL_50 = tuple(f"small-messages/syncs50-{k}-r{i}" for k in ("16k", "64k") for i in (1, 2))  # 50 syncs a run
SMALL_REPEATS_FROM = 256 * 1024  # gradient bytes from which the held-out file repeated within about 10%
SMALL_SOURCES = PROJECTION_SOURCES + tuple(f"{f}/summary.json" for f in (SMALL_REPEAT, *SMALL_50))


def projection_small_messages(data: dict) -> list[str]:
    """Rings and gloos of 8 KiB to 2 MiB on one BCube: each run's start-up per round beyond the
    bandwidth term, the fitted L's ratio, the run's own spread, and the held-out file measured twice."""
    rows = _validation(data)
    lat, _, _ = _fitted(rows)
    mine = [r for r in rows if r["folder"] in SMALL_MESSAGES]
    first = {(r["algo_spec"], r["model"]): r for r in mine if r["folder"] == SMALL_MESSAGES[1]}
    repeat = []
    for m in runs_of(data, f"{SMALL_REPEAT}/summary.json"):
        r = first[(common.label(m), m["model"])]  # the same plan: the held-out folder's simulation holds
        repeat.append({**r, "experiment": projected_name(SMALL_REPEAT), "run": m, "faithful": m.get("faithful"),
                       "measured_seconds": num(m.get("median_sync_seconds")), "repeat_of": r})
    cells, ratios, held = [], {"small": [], "large": []}, {"small": [], "large": []}
    for r in mine + repeat:
        if not r["fit"] and r["faithful"] is True:
            held["small" if r["gradient_bytes"] < SMALL_REPEATS_FROM else "large"].append(
                common.ratio(_with_latency(r, lat), r["measured_seconds"]))
        meas, sim, k = r["measured_seconds"], r["simulated_seconds"], r["rounds"]
        n = r["run"]["workers"]
        again = ""
        if "repeat_of" in r:
            x = common.ratio(meas, r["repeat_of"]["measured_seconds"])
            again = fmt(x, ".2f")
            ratios["small" if r["gradient_bytes"] < SMALL_REPEATS_FROM else "large"].append(x)
        half = "fit" if r["fit"] else "held out"
        cells.append([r["experiment"], half + (" (run again)" if "repeat_of" in r else ""), r["algorithm"],
                      fmt(r["gradient_bytes"] / 1024, "g"), fmt(r["gradient_bytes"] / n / 1024, ".1f"), str(k),
                      fmt(meas, ".3f"), fmt(sim, ".3f"), fmt((meas - sim) / k * 1e3, ".2f"),
                      fmt(common.ratio(_with_latency(r, lat), meas), ".2f"), pct(spread(r["run"].get("sync_seconds")), 0),
                      again, verdict(r["run"])])
    lines = table(["experiment", "half", "algorithm", "gradient KiB", "segment KiB", "rounds", "measured s",
                   "simulated s (L = 0)", "start-up per round ms", f"sim/meas, L = {lat * 1e3:.2f} ms",
                   "syncs' spread (max - min) / median", "this / first run", "faithful"], cells)
    return lines + ["", f"Held out, faithful runs of both runs of the file, with L = {lat * 1e3:.2f} ms: "
                        f"{_within(held['large'])} of {len(held['large'])} within {TOLERANCE:.0%} at 256 KiB and 1 MiB "
                        f"({span(held['large'])}), {_within(held['small'])} of {len(held['small'])} below 256 KiB "
                        f"({span(held['small'])}). The same file run twice, one run after the other: second / first "
                        f"median {span(ratios['small'])} below 256 KiB, {span(ratios['large'])} at 256 KiB and 1 MiB.",
                    "", *_small_fifty(data, first, lat)]


def _small_fifty(data: dict, first: dict, lat: float) -> list[str]:
    """The two smallest held-out sizes with 50 syncs a run, each run twice (run 1 of both sizes, then run 2)."""
    got: dict = {}
    for f in SMALL_50:
        for m in runs_of(data, f"{f}/summary.json"):
            got.setdefault((m["algorithm"], m["gradient_bytes"]), []).append(m)
    cells = []
    for (algo, size), ms in sorted(got.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        r = first[(common.label(ms[0]), ms[0]["model"])]
        meas = [num(m.get("median_sync_seconds")) for m in ms]
        cells.append([algo, fmt(size / 1024, "g"), " / ".join(fmt(x, ".3f") for x in meas),
                      fmt(common.ratio(meas[1], meas[0]), ".2f"),
                      " / ".join(fmt((x - r["simulated_seconds"]) / r["rounds"] * 1e3, ".2f") for x in meas),
                      " / ".join(fmt(common.ratio(_with_latency(r, lat), x), ".2f") for x in meas),
                      " / ".join(verdict(m) for m in ms)])
    return ["With 50 syncs a run instead of 10 (`--iters 50`, the two smallest held-out sizes, each run twice):", "",
            *table(["algorithm", "gradient KiB", "measured s, run 1 / run 2", "run 2 / run 1",
                    "start-up per round ms", f"sim/meas, L = {lat * 1e3:.2f} ms", "faithful"], cells)]


SWEEP = ("projection-fattree-sweep/summary.json", "projection-fattree-sweep-30us/summary.json",
         "projection-ps-fattree16-512/summary.json")


def projection_sweep(data: dict) -> list[str]:
    """Ring, gloo and PS on Fat-Trees k = 4..24, bandwidth only and with 30 us per round."""
    zero, lat = (data[SWEEP[0]]["runs"], data[SWEEP[1]]["runs"])
    ps512 = data[SWEEP[2]]["runs"]
    skipped = {(s["topology"].replace("fattree,k=", "fattree(") + ")", s["algo_spec"]): s["why"]
               for s in data[SWEEP[0]].get("skipped", [])}
    keys = sorted({(r["topology"], r["workers"]) for r in zero + ps512}, key=lambda k: (k[1], k[0]))

    def hosts(topo: str) -> int:  # fattree(k): k^3/4 hosts; a skip names the topology, for all its hosts
        return int(topo.split("(")[1].rstrip(")")) ** 3 // 4

    def cell(runs, topo, p, algo):
        r = next((r for r in runs if r["topology"] == topo and r["workers"] == p and r["algo_spec"] == algo), None)
        if r is not None:
            return fmt(r["simulated_seconds"], ".4f")
        why = skipped.get((topo, algo)) if p == hosts(topo) else None
        return ("refused (memory)" if "GiB" in why else "refused (time)") if why else ""

    rows = []
    for topo, p in keys:
        first = next(r for r in zero + ps512 if r["topology"] == topo and r["workers"] == p)
        rows.append([topo, str(p), cell(zero, topo, p, "ring"), cell(zero, topo, p, "gloo"),
                     cell(ps512, topo, p, "ps") or cell(zero, topo, p, "ps"), fmt(first["bound_seconds"], ".4f"),
                     cell(lat, topo, p, "ring"), cell(lat, topo, p, "gloo"), cell(lat, topo, p, "ps")])
    over = [r["sync_over_bound"] for r in zero + ps512]
    return table(["Fat-Tree", "P", "ring L=0", "gloo L=0", "PS L=0", "bound (first run)", "ring L=30 us",
                  "gloo L=30 us", "PS L=30 us"], rows) + [
        "", f"With L = 0 every run is at {span(over, '.4f', 'x')} its busiest-link bound."]


BML_SCALE = ("projection-bml-bcube83/summary.json", "projection-bml-bcube83-30us/summary.json",
             "projection-ps-fattree16-512/summary.json")


def projection_bml_scale(data: dict) -> list[str]:
    """BML on BCube(8,3) against PS on a Fat-Tree with the same 512 servers."""
    zero, lat, ps = (data[s]["runs"] for s in BML_SCALE)
    b0, r0 = find(zero, BML_SCALE[0], algo_spec="bml"), find(zero, BML_SCALE[0], algo_spec="ring")
    b1, r1 = find(lat, BML_SCALE[1], algo_spec="bml"), find(lat, BML_SCALE[1], algo_spec="ring")
    p = find(ps, BML_SCALE[2], algo_spec="ps")
    k = 3
    return table(["", "BML, BCube(8,3)", "ring, BCube(8,3)", "PS, Fat-Tree k=16 (512 of 1024 hosts)", "BML / PS",
                  "claim"], [
        ["sync s, L = 0", fmt(b0["simulated_seconds"], ".4f"), fmt(r0["simulated_seconds"], ".4f"),
         fmt(p["simulated_seconds"], ".4f"),
         f"**{fmt(common.ratio(b0['simulated_seconds'], p['simulated_seconds']), '.3f')}**",
         f"1/k = {1 / k:.3f}"],
        ["sync s, L = 30 us", fmt(b1["simulated_seconds"], ".4f"), fmt(r1["simulated_seconds"], ".4f"), "not rerun", "",
         ""],
        ["bound s", fmt(b0["bound_seconds"], ".4f"), fmt(r0["bound_seconds"], ".4f"), fmt(p["bound_seconds"], ".4f"),
         "", ""],
        ["x bound, L = 0", fmt(b0["sync_over_bound"], ".4f"), fmt(r0["sync_over_bound"], ".4f"),
         fmt(p["sync_over_bound"], ".4f"), "", ""]])


# projections by orbits (issue #23, scripts/project_ps_orbits.sh): each folder also keeps
# command.json, the whole command as `/usr/bin/time -v` measured it
TIMED = ("projection-ps-fattree16-1024", "projection-ps-fattree24-3456", "projection-ps-fattree16-512-orbits",
         "projection-ps-fattree24-1440", "projection-ps-bcube83-orbits", "projection-ps-bcube83-listed")
RUNTIMES = ("projection-fattree-sweep/summary.json", "projection-ps-fattree16-512/summary.json",
            "projection-bml-bcube83/summary.json") + tuple(f"{f}/summary.json" for f in TIMED) \
    + tuple(f"{f}/command.json" for f in TIMED)


def projection_runtimes(data: dict) -> list[str]:
    """What each projection cost on this machine, from its simulator record; "reduced to" the
    SimGrid communications per step where a reduction ran; the whole command (`/usr/bin/time
    -v`: wall and peak resident set) where the folder keeps one (command.json), and under which
    conditions it was timed, below the table."""
    rows, notes = [], []
    for rel in RUNTIMES:
        if not rel.endswith("summary.json"):
            continue
        folder = rel.split("/")[0]
        cmd = data.get(f"{folder}/command.json") or {}
        tv = cmd.get("time_v") or {}
        if cmd:
            notes.append(f"`{folder}`: `{cmd['command']}`, timed {cmd['conditions']}")
        for r in data[rel]["runs"]:
            s = r.get("simulator") or {}
            red = s.get("reduction") or {}
            rows.append([f"`{folder}`", r["topology"], str(r["workers"]), r["algo_spec"],
                         f"{s.get('messages', 0):,}" + (f" ({s['steps']} steps)" if (s.get("steps") or 1) > 2 else ""),
                         " + ".join(map(str, red.get("classes_per_step") or [])) or "-",
                         fmt(s.get("route_seconds"), ".1f"), fmt(s.get("simgrid_cpu_seconds"), ".2g"),
                         fmt(s.get("wall_seconds"), ".3g"), fmt(r["simulated_seconds"], ".4f"),
                         fmt(r["sync_over_bound"], ".4f"), fmt((s.get("child_maxrss_bytes") or 0) / MB, ".0f"),
                         fmt((s.get("memory_estimate_bytes") or 0) / MB, ".0f"),
                         fmt(tv.get("wall_seconds"), ".3g") if tv else "-",
                         fmt(tv["max_rss_kbytes"] * 1024 / MB, ".0f") if tv else "-"])
    return table(["results folder", "topology", "P", "algo", "messages", "reduced to", "routes s", "SimGrid CPU s",
                  "projection wall s", "simulated s", "x bound", "child peak MB", "estimated MB",
                  "command wall s", "command peak MB"], rows) + [
        "", "Whole commands (`/usr/bin/time -v`): " + "; ".join(notes) + "."]


# ---- compute and data-dependent bytes (docs/PROJECTION.md, "Compute and data-dependent bytes") ----
# The machine every docs/results run ran on has 2 cores (each run's cpu.json: "cores"), which its
# P workers' compressors share: the size a run's compute scaled with is costs.work(elements, P, 2)
EMULATION_CORES = 2

# which compressors share one cost model: the same executor code (topk and gtopk both select with
# SparseSet.topk and merge into a dense result); each block-sparse algorithm its own
COMPRESSORS = {"topk": "top-k", "gtopk": "top-k", "dfs": "dfs", "omnireduce": "omnireduce", "topk_ps": "topk_ps"}


def _compute_rows(data: dict) -> list[dict]:
    """The validation rows of algorithms that declare compute or whose bytes are data-dependent."""
    from workloads.algorithms import base

    return [r for r in _validation(data) if base.get(r["algorithm"]).compute or r["sim"].get("bytes_source") == "logged"]


def charged_figure(m: dict, key: str) -> float | None:
    """The seconds of compute `key` a measured run (summary.json's `m`) stands for, as the replay
    charges them (sweep.replayed): the slowest rank's per sync (`<key>_slowest`) where logged, since
    the sync waits for it, else the mean. None where the run was charged a real setting's cost
    (`<key>_charged`, `real_compress_s`): its sync waited for that charge, not for this CPU, so it
    neither fits nor checks a cost model of this CPU (its `<key>_cpu`, the thread CPU time under
    the charge, is not what a sync waits for either)."""
    if m.get(f"{key}_charged") is not None:
        return None
    slowest = num(m.get(f"{key}_slowest"))
    return slowest if slowest is not None else num(m.get(key))


def _compute_points(rows, key: str) -> list:
    """(compressor, work, seconds, row) of every run that logged `key`: `charged_figure`, the
    slowest rank's seconds where logged, so a cost model stands for what the replay charges."""
    from emulation.simulator import costs

    out = []
    for r in rows:
        secs = charged_figure(r["run"], key)
        elements = (r["gradient_bytes"] or 0) // 4
        if secs is None or not elements:
            continue
        out.append((COMPRESSORS.get(r["algorithm"], r["algorithm"]), costs.work(elements, r["workers"], EMULATION_CORES),
                    secs, r))
    return out


def fitted_costs(data: dict) -> dict:
    """{(compressor, compute key): (CostModel, fit rows)} fitted on the fit half's runs only
    (`in_fit_half`), for each compressor with runs at two sizes or more there."""
    from emulation.simulator import costs
    from workloads.algorithms import base

    rows = _compute_rows(data)
    keys = sorted({c.key for r in rows for c in base.get(r["algorithm"]).compute})
    out = {}
    for key in keys:
        pts = _compute_points(rows, key)
        for comp in sorted({p[0] for p in pts}):
            fit = [p for p in pts if p[0] == comp and p[3]["fit"]]
            try:
                out[(comp, key)] = (costs.fit([(w, s) for _, w, s, _ in fit]), [p[3] for p in fit])
            except ValueError:
                continue
    return out


def projection_compute_fit(data: dict) -> list[str]:
    """The compute cost models, fitted on the fit half, and their error on every run."""
    fits = fitted_costs(data)
    rows = _compute_rows(data)
    cells = []
    for (comp, key), (model, fit_rows) in sorted(fits.items()):
        pts = [p for p in _compute_points(rows, key) if p[0] == comp]
        held = [(p[2], model.seconds(p[1])) for p in pts if not p[3]["fit"]]
        cells.append([comp, key, f"{model.c0 * 1e3:.2f} ms", f"{model.c1 * 1e9:.2f} ns",
                      ", ".join(sorted({r["experiment"] for r in fit_rows})), str(len(fit_rows)),
                      ", ".join(f"{r['experiment']} {r['algo_spec']} (P = {r['workers']}): {fmt(p[2], '.3f')} / "
                                f"{fmt(model.seconds(p[1]), '.3f')}" for p in pts for r in [p[3]] if not r["fit"]) or
                      "none held out", span([m / s for s, m in held]) if held else NA])
    return table(["compressor", "compute", "c0", "c1 (per element x P/2)", "fitted on (fit half)", "runs",
                  "held out: measured / modelled s", "modelled/measured"], cells) + [
        "", f"seconds = c0 + c1 x elements x max(1, P / {EMULATION_CORES}): the P workers of a run share this "
            f"machine's {EMULATION_CORES} cores (costs.work); least squares (costs.fit) over the fit half's runs; "
            "compressors with fewer than two sizes in the fit half have no model."]


SAME_DAY = ("dfs-resnet18-digits-same-day", "dfs-resnet18-digits-held-out")  # (fit, held out), both 2026-11-28
SAME_DAY_SOURCES = tuple(f"{f}/summary.json" for f in SAME_DAY)


def projection_compute_same_day(data: dict) -> list[str]:
    """The block-sparse cost models fitted on one folder and checked on another of the same day
    (the same file run twice), apart from the split: whether the model's form holds when the CPU
    is the same."""
    from emulation.simulator import costs
    from workloads.algorithms import base

    fit_runs, held_runs = (runs_of(data, rel) for rel in SAME_DAY_SOURCES)
    cells = []
    for algo in sorted({r["algorithm"] for r in held_runs if base.get(r["algorithm"]).compute}):
        for key in [c.key for c in base.get(algo).compute]:
            def points(runs):
                return [(costs.work((num(r.get("gradient_bytes")) or 0) // 4, r["workers"], EMULATION_CORES),
                         charged_figure(r, key), r) for r in runs
                        if r["algorithm"] == algo and charged_figure(r, key) is not None]
            fit, held = points(fit_runs), points(held_runs)
            try:
                model = costs.fit([(w, y) for w, y, _ in fit])
            except ValueError:
                continue
            ratios = [model.seconds(w) / y for w, y, _ in held if y]
            cells.append([COMPRESSORS.get(algo, algo), key, f"{model.c0 * 1e3:.2f} ms", f"{model.c1 * 1e9:.2f} ns",
                          str(len(fit)), ", ".join(f"{r['model']} {fmt(y, '.3f')} / {fmt(model.seconds(w), '.3f')}"
                                                   for w, y, r in held) or NA,
                          span(ratios) if ratios else NA, f"{_within(ratios)} of {len(ratios)}"])
    return table(["compressor", "compute", "c0", "c1 (per element x P/2)", f"runs of {SAME_DAY[0]}",
                  f"{SAME_DAY[1]}: measured / modelled s", "modelled/measured", f"within {TOLERANCE:.0%}"], cells)


def probe_ratios(points) -> dict:
    """{compressor: (fit points, held-out points, modelled/measured of the held-out ones by the
    model in seconds, by the model in probe units)} from `points` (compressor, work, seconds,
    probe seconds, in the fit half), both models least squares (costs.fit) over the fit half's
    points; the one in probe units (seconds / probe) is charged each held-out point's own probe.
    A compressor whose fit half cannot give a model is left out."""
    from emulation.simulator import costs

    out = {}
    for comp in sorted({p[0] for p in points}):
        fit = [p for p in points if p[0] == comp and p[4]]
        held = [p for p in points if p[0] == comp and not p[4] and p[2]]
        try:
            in_s = costs.fit([(w, y) for _, w, y, _, _ in fit])
            in_units = costs.fit([(w, y / pr) for _, w, y, pr, _ in fit])
        except ValueError:
            continue
        out[comp] = (fit, held, [in_s.seconds(w) / y for _, w, y, _, _ in held],
                     [pr * in_units.seconds(w) / y for _, w, y, pr, _ in held])
    return out


def projection_compute_probe(data: dict) -> list[str]:
    """The cost models again, fitted only on the fit half's runs that recorded the CPU probe
    (`cpu_probe_seconds`, since 2026-11-29), once in seconds and once in units of the run's probe
    (`probe_ratios`): whether the probe at a run's start accounts for the compute speed moving
    between runs."""
    from workloads.algorithms import base

    rows = [r for r in _compute_rows(data) if num(r["run"].get("cpu_probe_seconds"))]
    cells = []
    for key in sorted({c.key for r in rows for c in base.get(r["algorithm"]).compute}):
        pts = [(comp, w, y, num(r["run"]["cpu_probe_seconds"]), r["fit"], r)
               for comp, w, y, r in _compute_points(rows, key)]
        for comp, (fit, held, by_s, by_units) in probe_ratios([p[:5] for p in pts]).items():
            def runs(of):
                names = sorted({p[5]["experiment"] for p in pts if p[0] == comp and p[4] == of})
                return f"{sum(1 for p in pts if p[0] == comp and p[4] == of)} ({', '.join(names)})"
            probes = [p[3] * 1e3 for p in fit + held]
            cells.append([comp, key, runs(True), runs(False), span(probes, ".1f", " ms"),
                          span(by_s) if by_s else NA, f"{_within(by_s)} of {len(by_s)}",
                          span(by_units) if by_units else NA, f"{_within(by_units)} of {len(by_units)}"])
    return table(["compressor", "compute", "fit half: runs with a probe", "held out: runs with a probe",
                  "their probes", "modelled/measured, model in seconds", f"within {TOLERANCE:.0%}",
                  "modelled/measured, model in probe units", f"within {TOLERANCE:.0%}"], cells) + [
        "", "Both models by least squares (costs.fit) over the same fit-half runs, seconds = c0 + c1 x "
            f"elements x max(1, P / {EMULATION_CORES}); the one in probe units is charged the held-out run's "
            "own probe (emulation/cpuprobe.py: the fastest of a few single-thread selections on this machine "
            "before the run's workers start)."]


# the top-k selection inside the emulation and outside it, P = 8, ResNet-50 / 8 (issue #23): the
# 2026-11-24 folder, the held-out reruns of 2026-11-29 (one from the code of 2026-11-24, a git
# worktree at 7f6a47b7) and scripts/selection_probe.py (the workers' own selection code) the same morning
SELECTION_RUNS = (("gtopk-scaling-fattree/p8", "2026-11-24, the code of then"),
                  ("gtopk-scaling-fattree-r2/p8", "2026-11-29, today's code"),
                  ("gtopk-scaling-fattree-r2/same-hour-p8", "2026-11-29, today's code"),
                  ("gtopk-scaling-fattree-r2/code-2026-11-24-p8", "2026-11-29, the code of 2026-11-24 (7f6a47b7)"))
SELECTION_PROBE = "gtopk-scaling-fattree-r2/selection-probe.json"
SELECTION_SOURCES = (*(f"{f}/summary.json" for f, _ in SELECTION_RUNS), SELECTION_PROBE)


def projection_selection_probe(data: dict) -> list[str]:
    """The same selection (same elements, P = 8 processes on this machine's cores) timed by the
    emulated workers and by scripts/selection_probe.py outside any emulation."""
    cells = []
    for folder, what in SELECTION_RUNS:
        s = data[f"{folder}/summary.json"]
        for r in s.get("runs", []):
            if num(r.get("sparsify_seconds")) is None:
                continue
            cells.append([f"emulation: `{folder}`", (s.get("started") or "")[:16], what, r["algorithm"],
                          str(r["workers"]), str((r.get("gradient_bytes") or 0) // 4), fmt(r["sparsify_seconds"], ".3f"),
                          fmt(num(r.get("sparsify_seconds_slowest")), ".3f"), verdict(r)])
    for rec in data[SELECTION_PROBE]:
        cells.append([f"outside: `scripts/selection_probe.py` ({rec['label']})", rec["at"][:16], "today's code",
                      "the workers' selection (Top-k's sparsify)", str(rec["procs"]), str(rec["elements"]),
                      fmt(rec["mean_seconds"], ".3f"), fmt(rec["slowest_seconds"], ".3f"), NA])
    return table(["where", "when", "code", "algorithm", "P (processes)", "elements", "selection s, mean over ranks",
                  "slowest rank's", "faithful"], cells)


def _modelled_compute(r: dict, fits: dict) -> float | None:
    """The seconds the fitted cost models charge `r` (a `_validation` row) for the computes its run
    logged, or None where one of them has no model. Only the logged ones: a run from before a
    compute was timed lacks it, and its replay charges it nothing, so the two cover the same."""
    from emulation.simulator import costs
    from workloads.algorithms import base

    logged = [c for c in base.get(r["algorithm"]).compute if num(r["run"].get(c.key)) is not None]
    parts = [fits.get((COMPRESSORS.get(r["algorithm"], r["algorithm"]), c.key)) for c in logged]
    if not logged or not all(parts) or any(charged_figure(r["run"], c.key) is None for c in logged):
        return None
    w = costs.work((r["gradient_bytes"] or 0) // 4, r["workers"], EMULATION_CORES)
    return sum(p[0].seconds(w) for p in parts)


def projection_compute(data: dict) -> list[str]:
    """Sparse and data-dependent runs: simulated with their logged compute means (the replay
    `syncbed project --measured` does) and with the fit half's cost model instead."""
    fits = fitted_costs(data)
    cells = []
    for r in _compute_rows(data):
        sim = r["sim"]
        replayed = sim.get("compute_seconds_per_sync") or 0.0
        network = r["simulated_seconds"] - replayed
        model = _modelled_compute(r, fits)
        modelled = None if model is None else network + model
        cells.append([r["experiment"], "fit" if r["fit"] else "held out", r["topology"], r["algo_spec"], str(r["model"]),
                      str(r["workers"]), sim.get("bytes_source") or "plan", fmt(r["measured_seconds"], ".3f"),
                      fmt(network, ".3f"), fmt(common.ratio(network, r["measured_seconds"]), ".2f"),
                      fmt(replayed, ".3f"), fmt(r["simulated_seconds"], ".3f"), fmt(r["sim_over_measured"], ".2f"),
                      fmt(modelled, ".3f"), fmt(common.ratio(modelled, r["measured_seconds"]), ".2f"),
                      verdict(r["run"])])
    lines = []
    for key, what in BLOCK_SPARSE_COMPUTE:
        shares = [num(r["run"].get(key)) / r["measured_seconds"] for r in _compute_rows(data)
                  if num(r["run"].get(key)) is not None and r["measured_seconds"]]
        lines.append(f"{what} (`{key}`, logged by {len(shares)} runs): {span([100 * x for x in shares], '.1f')}% "
                     "of their measured syncs." if shares else f"No run logged {what[0].lower()}{what[1:]} (`{key}`).")
    return table(["experiment", "half", "topology", "algorithm", "model", "N", "bytes", "measured s",
                  "network only s", "sim/meas", "compute (logged, slowest rank) s", "simulated s", "sim/meas",
                  "simulated s, fitted compute", "sim/meas", "faithful"], cells) + [x for line in lines for x in ("", line)]


# the block-sparse computes besides the selection, each line under the compute table: the figure
# the replay charges (the slowest rank's) as a share of the measured sync
BLOCK_SPARSE_COMPUTE = (("aggregate_seconds", "The block-sparse owners' aggregation, the slowest owner's"),
                        ("codec_seconds_slowest", "The block-sparse workers' encoding, decoding and residual "
                                                  "update, the slowest worker's"))


# ---- fan-in (emulation/simulator/fanin.py; scripts/fan_in.py) ---------------------------
FAN_IN_FOLDERS = PROJECTED  # every measured folder with a projection, projected again with the fitted e
FAN_IN_OPTIONS = "projection-fan-in-options/summary.json"


@dataclasses.dataclass(frozen=True)
class FanIn:
    """One validation's fan-in: its measured folders, the congestion control their hosts ran,
    where scripts/fan_in.py writes its fit and scripts/project_measured.sh the projections with it."""
    folders: tuple
    cc: str
    fit: str  # folder under docs/results of the fit's summary.json
    runs: str  # folder under docs/results of the projections with the fitted e, one per measured folder
    command: str  # what makes the fit
    # the algorithms e is fitted on (scripts/fan_in.py fit), and those that take e = 1 and an
    # incast start-up per converging flow instead (`incast_fit`)
    fit_algos: tuple = ("ps", "bml")
    incast: tuple = ()
    # whether oversubscribed switch links take an efficiency of their own, e_o (fanin.oversubscribed_links),
    # fitted after e on the fit-half runs on topologies with such links
    oversubscribed: bool = False

    @property
    def fit_rel(self) -> str:
        return f"{self.fit}/summary.json"

    @property
    def run_rels(self) -> tuple:
        return tuple(f"{self.runs}/{projected_name(f)}/summary.json" for f in self.folders)

    @property
    def sources(self) -> tuple:
        return _sources(self.folders) + (self.fit_rel,) + self.run_rels


BBR_FAN_IN = FanIn(FAN_IN_FOLDERS, "bbr", "projection-fan-in-fit", "projection-fan-in", "python scripts/fan_in.py fit")
# With CUBIC, PS's shortfall against the flow model is about the same seconds per sync whatever
# its gradient (2 to 4 MiB) and grows with the flows converging on one NIC (8 on a Fat-Tree
# with 9 workers, 15 with 16): a time per flow, where e, a share of the bytes, overshot VGG-19's
# runs and undershot 2 MiB ones. So PS takes e = 1 and an incast start-up per flow into a step's
# busiest NIC beyond the first, and e is fitted on BML alone (docs/PROJECTION.md, "Fan-in").
# The BBR validation keeps its fit of e on PS and BML: its hosts no longer run BBR.
# PS on forest scenario 3's oversubscribed core lost the same share of its sync at half and at a
# quarter of the link speeds (docs/FIDELITY.md #23): a share of the slow links' rate, which the
# incast start-up, a time per flow, does not give. So those links take an e_o of their own.
CUBIC_FAN_IN = FanIn(CUBIC_FOLDERS, "cubic", "projection-fan-in-fit-cubic", "projection-fan-in-cubic",
                     "python scripts/fan_in.py fit --cc cubic", fit_algos=("bml",), incast=("ps",),
                     oversubscribed=True)
FAN_IN_FIT, FAN_IN_RUNS, FAN_IN_SOURCES = BBR_FAN_IN.fit_rel, BBR_FAN_IN.run_rels, BBR_FAN_IN.sources
CUBIC_FAN_IN_SOURCES = CUBIC_FAN_IN.sources


def fan_in_split(rows) -> tuple[list, list]:
    """(fit half, held-out half) of `rows` by their folder's side (`in_fit_half`): a folder on one side only."""
    return [r for r in rows if r["fit"]], [r for r in rows if not r["fit"]]


# Executors whose rounds start up slower than a ring's: their own L, fitted after e on their own
# fit-half runs (`own_latency`). BML: what its runs lack after e is about the same number of
# seconds per sync whatever the gradient (2 to 4 MiB) and whatever n >= 3 (BCube(3,2) and
# (4,2)), where an e of its own, a share of the bytes, overshot; on BCube(2,3), one flow into
# each NIC per stage, its stages cost a fraction of that (docs/PROJECTION.md, "Fan-in").
OWN_LATENCY = ("bml",)
OWN_LATENCY_MIN_BCUBE_N = 3  # n - 1 >= 2 flows into each NIC per stage (`charged_own`)


def charged_own(r: dict) -> bool:
    """Whether a row's rounds take its executor's own L: an OWN_LATENCY algorithm, 2 MiB or more
    (as L is fitted there: below, a BML stage is latency-bound and its rounds cost what a ring's
    do, the one LeNet-5 run), and flows converging in its stages (BML: n - 1 >= 2 neighbours
    send to each NIC at once, n >= 3; with n = 2 its stages cost a fraction of that, BCube(2,3)).
    Read off the topology's name because BML runs on BCube only."""
    return (r["algorithm"] in OWN_LATENCY and r["gradient_bytes"] >= LATENCY_MIN_BYTES
            and (bcube_n(r["topology"]) or 0) >= OWN_LATENCY_MIN_BCUBE_N)


def own_latency(rows, lat: float) -> dict:
    """{algorithm of OWN_LATENCY: its own L}, each fitted as L is (`fit_round_latency`, the same
    relative least squares) on its faithful fit-half runs of today's executor that take it
    (`charged_own`), simulated at the fitted e (`fan_in_sim`), after e as e is after L. An
    algorithm without such a run keeps `lat`."""
    out = {}
    for algo in OWN_LATENCY:
        mine = [r for r in rows if r["algorithm"] == algo and r["fit"] and not r["superseded"] and r["rounds"]
                and charged_own(r)]
        pts = [(r["measured_seconds"], r["fan_in_sim"], r["rounds"]) for r in mine]
        out[algo] = {"seconds": fit_round_latency(pts) if pts else lat, "runs": len(pts),
                     "experiments": sorted({r["experiment"] for r in mine})}
    return out


def round_latency_of(r: dict, lat: float, own: dict) -> float:
    """The L a row's rounds are charged: its executor's own (`own_latency`) where `charged_own`, else L."""
    return own[r["algorithm"]]["seconds"] if r["algorithm"] in own and charged_own(r) else lat


def charged_incast(r: dict, incast) -> bool:
    """Whether a row pays its executor's incast start-up: an algorithm of `incast` (those that have
    one: `incast_fit`'s keys or `FanIn.incast`), at 2 MiB or more, as L is fitted; at any size
    where its start-up is capped by a share of the flow's bytes (`incast` a dict whose record has
    "flow_share": the validation's since 2026-12-04, `row_startup`). The start-up's time and bytes
    are fitted on the runs of 2 MiB or more only, its share on every size."""
    if r["algorithm"] not in incast:
        return False
    capped = isinstance(incast, dict) and (incast.get(r["algorithm"]) or {}).get("flow_share")
    return bool(capped) or r["gradient_bytes"] >= LATENCY_MIN_BYTES


def _flow_model(r: dict, lat: float) -> float:
    """A fan-in row's simulated seconds (at its e) plus L x its rounds: what an incast start-up adds to."""
    return r["fan_in_sim"] + lat * (r["rounds"] or 0)


def incast_slack(r: dict) -> float:
    """Seconds a row's sync needs on its busiest link beyond its NICs' (its projection's bound less
    its non-blocking bound, at least 0): what `fit_incast_past_slack` lets a NIC's stalls hide in.
    Summed over the sync, as its extra flows are, so a step's slack serves the whole sync's
    start-ups (PS's two phases load the same links alike)."""
    sim = r.get("sim") or {}
    b, nb = num(sim.get("bound_seconds")), num(sim.get("bound_nonblocking_seconds"))
    return max(0.0, b - nb) if b is not None and nb is not None else 0.0


def one_switch_input(r: dict) -> bool:
    """Whether a row's NICs hang off switches of two ports (`calibration.one_switch_input`)."""
    return _one_input(r["topology"])


def ps_flow_bytes(r: dict) -> float:
    """Bytes of one flow into a PS row's busiest NIC: its gradient over its shards (the dedicated
    servers, else every worker), what `fanin.converging_bytes` finds in a PS plan's steps."""
    run = r.get("run") or {}
    shards = num(run.get("servers")) or num(run.get("workers")) or r.get("workers")
    return r["gradient_bytes"] / shards if shards else 0.0


def row_startup(r: dict, inc: dict | None) -> float:
    """Seconds per converging flow beyond the first that `inc` charges row `r` (before the slack):
    its time plus bytes at the row's hosts' link rate (`incast_startup`), capped, where `inc` has
    a flow share, at that share of the row's flow bytes at the same rate (`capped_startup`)."""
    per = incast_startup(inc, r["link_mbps"])
    share = (inc or {}).get("flow_share", 0.0)
    return capped_startup(per, ps_flow_bytes(r), r["link_mbps"], share) if share else per


def row_incast(r: dict, incast: dict) -> float:
    """Seconds per converging flow a row is charged under `incast` ({algorithm: its start-up},
    `incast_fit`'s): its executor's `row_startup` where `charged_incast` and its NICs have more
    than one switch input, else 0 (before the slack: `incast_charge`)."""
    return row_startup(r, incast[r["algorithm"]]) if charged_incast(r, incast) and not one_switch_input(r) else 0.0


def incast_charge(r: dict, per_flow: float, one_input_free: bool = True) -> float:
    """Seconds a row's sync is charged for its converging flows at `per_flow` seconds each only
    past its `incast_slack` (`fanin.past_slack`, as `core.past_slack` charges a new projection)
    and, with `one_input_free` (the validation's form C since 2026-12-04), nothing where its NICs
    have one switch input; without it, form B."""
    if one_input_free and one_switch_input(r):
        return 0.0
    return charged_past_slack(per_flow * (r["extra_flows"] or 0), incast_slack(r))


def incast_fit(rows, lat: float, algos: tuple, time_only: bool = False, past_slack: bool = False,
               one_input_free: bool = False, flow_share: bool = False) -> dict:
    """{algorithm of `algos`: its incast start-up {"seconds": t, "bytes": b}}, per flow into a
    step's busiest NIC beyond the first (`fanin.extra_flows`, summed over a sync: `extra_flows`)
    t seconds plus b bytes at the hosts' link rate (`fanin.incast_startup`), fitted as L is
    (`fit_incast`, the same relative least squares) on its faithful fit-half runs of today's
    executor that take it (`charged_incast`) on a topology without oversubscribed links (those
    fit e_o, with this start-up), simulated at its e (1) plus L x rounds: simulated + L x rounds
    + the start-up x extra flows against measured. With `time_only`, b = 0 (the form until
    2026-12-03, for the comparison of the two in the PS scan table: `projection_ps_incast_scan`).
    With `past_slack`, the start-up charged only past the row's `incast_slack`
    (`fit_incast_past_slack`: form B of the PS scan's table); with `one_input_free` too, rows whose
    NICs have one switch input (`one_switch_input`) are charged nothing and so not fitted on (form
    C, the validation's since 2026-12-04). With `flow_share` too, then the share of a flow's own
    bytes its start-up is capped at ("flow_share", `fit_incast_share`), fitted with (t, b) kept on
    the same executor's faithful fit-half runs of every gradient size ("flow_share_runs"): form D,
    the validation's since the afternoon of 2026-12-04, charged at every size. Each record says
    its form ("past_slack", "one_switch_input_free", "flow_share")."""
    out = {}
    for algo in algos:
        mine = [r for r in rows if r["algorithm"] == algo and r["fit"] and not r["superseded"]
                and r.get("extra_flows") and charged_incast(r, algos) and not r.get("oversubscribed")
                and not (one_input_free and one_switch_input(r))]
        pts = [(r["measured_seconds"], _flow_model(r, lat), r["extra_flows"], r["link_mbps"]) for r in mine]
        if not pts:
            raise ValueError(f"no faithful fit-half {algo} run of 2 MiB or more with converging flows to fit its "
                             "incast start-up on")
        if time_only:
            t, b = fit_round_latency([p[:3] for p in pts]), 0.0
        elif past_slack:
            t, b = fit_incast_past_slack([(*p, incast_slack(r)) for p, r in zip(pts, mine)])
        else:
            t, b = fit_incast(pts)
        out[algo] = {"seconds": t, "bytes": b, "past_slack": past_slack, "one_switch_input_free": one_input_free,
                     "runs": len(pts), "max_workers": max(r["workers"] for r in mine),
                     "rates_mbps": sorted({r["link_mbps"] for r in mine}),
                     "experiments": sorted({r["experiment"] for r in mine})}
        if flow_share:
            out[algo].update(_share_fit(rows, lat, algo, out[algo], one_input_free))
    return out


def _share_fit(rows, lat: float, algo: str, inc: dict, one_input_free: bool) -> dict:
    """{"flow_share": c, "flow_share_runs": n, "flow_share_min_mib": smallest gradient,
    "flow_share_min_flow_bytes": smallest flow}: `fit_incast_share`
    on `algo`'s faithful fit-half runs of every size (as `incast_fit` picks them, the size aside),
    the start-up's time and bytes `inc` kept, charged past the slack."""
    mine = [r for r in rows if r["algorithm"] == algo and r["fit"] and not r["superseded"]
            and r.get("extra_flows") and not r.get("oversubscribed")
            and not (one_input_free and one_switch_input(r))]
    pts = [(r["measured_seconds"], _flow_model(r, lat), r["extra_flows"], incast_startup(inc, r["link_mbps"]),
            8 * ps_flow_bytes(r) / (r["link_mbps"] * 1e6), incast_slack(r)) for r in mine]
    return {"flow_share": fit_incast_share(pts), "flow_share_runs": len(pts),
            "flow_share_min_mib": min(r["gradient_bytes"] for r in mine) / MB,
            "flow_share_min_flow_bytes": min(ps_flow_bytes(r) for r in mine)}


def _fan_in_rows(data: dict, fan: FanIn = BBR_FAN_IN) -> tuple[dict, float, list[dict]]:
    """(the fit's record, with the own L of OWN_LATENCY's executors under "round_latency_by_algorithm"
    and the incast start-up of fan.incast's under "incast_by_algorithm", L, every faithful run of
    fan's folders: its projection without fan-in and L, `_validation`'s row, and with the fitted
    e, fan.runs/, plus L x rounds, its executor's own L where it has one, plus its incast
    start-up x its extra converging flows where it has one)."""
    fit = data[fan.fit_rel]
    rows = _validation(data, fan.folders, fan.cc)
    lat, _, _ = _fitted(rows)
    if abs(fit["round_latency_seconds"] - lat) > 1e-9:
        raise ValueError(f"{fan.fit_rel} was fitted with L = {fit['round_latency_seconds']} s, the latency fit now "
                         f"gives {lat} s: rerun `{fan.command}` and the fan-in projections")
    e, own = fit["fan_in_efficiency"], fit.get("fan_in_by_algorithm") or {}
    eo = fit.get("oversubscribed_efficiency", 1.0)
    base = {(r["experiment"], r["topology"], r["algo_spec"], r["model"]): r for r in rows}
    out, unfaithful = [], []
    for folder, rel in zip(fan.folders, fan.run_rels):
        proj = data[rel]
        sims = {(r["topology"], r["algo_spec"], r["model"]): r for r in proj.get("runs", [])}
        for v in proj.get("validation") or []:
            key = (projected_name(folder), v["topology"], v["algo_spec"], v["model"])
            b = base[key]
            if abs(b["measured_seconds"] - v["measured_seconds"]) > 1e-9 * max(1.0, v["measured_seconds"]):
                raise ValueError(f"{rel} simulated other runs than docs/results/{folder} now holds: rerun its fan-in "
                                 f"projection (scripts/fan_in.py)")
            sim = sims[(v["topology"], v["algo_spec"], v["model"])]
            net = (sim.get("simulator") or {}).get("network_model") or {}
            used, used_o = net.get("fan_in_efficiency"), net.get("oversubscribed_efficiency", 1.0)
            want = own.get(b["algorithm"], e)  # its executor's own e, else the PS and BML one
            if (used is None or abs(used - want) > 1e-3 or abs(used_o - eo) > 1e-3
                    or sim.get("round_latency_seconds")):
                raise ValueError(f"{rel} was simulated with fan-in {used}, e_o {used_o} and L "
                                 f"{sim.get('round_latency_seconds')} for {v['algo_spec']}, not the fitted e = "
                                 f"{want:.4f}, e_o = {eo:.4f} and L = 0: rerun it")
            row = {**b, "fan_in_sim": v["simulated_seconds"], "fan_in_e": want,
                   "extra_flows": sim.get("extra_flows_per_sync"),
                   "oversubscribed": bool(sim.get("oversubscribed_links")),
                   "fan_in_eo": eo if sim.get("oversubscribed_links") else 1.0,
                   # (links that took e_o: fanin.in_series, the oversubscribed links)
                   "eo_links": ((sim.get("simulator") or {}).get("oversubscribed_charged_links"),
                                sim.get("oversubscribed_links"))}
            if v["faithful"] is True:
                out.append(row)
            elif row["oversubscribed"] or (b["algorithm"] == "ps" and b["gradient_bytes"] < LATENCY_MIN_BYTES):
                unfaithful.append(row)  # shown, marked, beside the faithful ones (_oversubscribed_runs, _below_threshold)
    own = own_latency(out, lat)
    # the validation's form (C): charged past the slack, none into NICs of two-port switches
    inc = incast_fit(out, lat, fan.incast, past_slack=True, one_input_free=True, flow_share=True)
    over = fit.get("oversubscribed") or {}
    if over.get("fitted") and "incast" not in over:
        raise ValueError(f"{fan.fit_rel} fitted e_o with an incast start-up in seconds alone; the start-up now has a "
                         f"time and a share in bytes: rerun `{fan.command}` and the fan-in projections")
    for algo, c in (over.get("incast") or {}).items():
        now = inc.get(algo) or {"seconds": 0.0, "bytes": 0.0}
        if abs(c["seconds"] - now["seconds"]) > 1e-6 or abs(c.get("bytes", 0.0) - now["bytes"]) > 1e-3 or abs(
                c.get("flow_share", 0.0) - now.get("flow_share", 0.0)) > 1e-6 or (
                c.get("past_slack"), c.get("one_switch_input_free")) != (True, True):
            raise ValueError(f"{fan.fit_rel} fitted e_o with {algo.upper()}'s incast start-up at "
                             f"{incast_label(c)}, the fit now gives {incast_label(now)}: rerun `{fan.command}` "
                             "and the fan-in projections")
    for r in out + unfaithful:
        # layer-wise plans (no rounds) pay their own measured start-ups, as in projection-validation
        r["fan_in_l"] = round_latency_of(r, lat, own)
        r["fan_in_incast"] = row_incast(r, inc)
        r["fan_in_incast_charged"] = incast_charge(r, r["fan_in_incast"])
        r["fan_in_seconds"] = r["fan_in_sim"] + r["fan_in_l"] * (r["rounds"] or 0) + r["fan_in_incast_charged"]
        r["fan_in_ratio"] = common.ratio(r["fan_in_seconds"], r["measured_seconds"])
    return ({**fit, "round_latency_by_algorithm": own, "incast_by_algorithm": inc,
             "unfaithful_shown": unfaithful}, lat, out)


def calibration_record(data: dict, fan: FanIn) -> dict:
    """The fitted parameters of `fan`'s validation as a calibration file holds them
    (emulation/simulator/calibration.py, `syncbed project --calibration`): L, e and each
    executor's own e, the own L of OWN_LATENCY's executors and the incast start-up of
    fan.incast's, each with the conditions under which the validation charges it
    (`charged_own`, `charged_incast`)."""
    fit, lat, rows = _fan_in_rows(data, fan)
    own, inc = fit["round_latency_by_algorithm"], fit["incast_by_algorithm"]
    return {"name": fan.cc, "congestion_control": fan.cc, "round_latency_seconds": lat,
            "fan_in_efficiency": fit["fan_in_efficiency"],
            "fan_in_by_algorithm": dict(sorted((fit.get("fan_in_by_algorithm") or {}).items())),
            "oversubscribed_efficiency": fit.get("oversubscribed_efficiency", 1.0),
            "round_latency_by_algorithm": {a: {"seconds": x["seconds"], "min_gradient_bytes": LATENCY_MIN_BYTES,
                                               "min_bcube_n": OWN_LATENCY_MIN_BCUBE_N, "runs": x["runs"]} for a, x in sorted(own.items())},
            "incast_by_algorithm": {a: {"seconds": x["seconds"], "bytes": x["bytes"],
                                        "past_slack": x["past_slack"],
                                        "one_switch_input_free": x["one_switch_input_free"],
                                        "flow_share": x.get("flow_share", 0.0),
                                        # the smallest flow the share was fitted on (a report flags smaller)
                                        "flow_share_min_flow_bytes": x.get("flow_share_min_flow_bytes", 0.0),
                                        # capped by a share of the flow's bytes: charged at every size
                                        "min_gradient_bytes": 0 if x.get("flow_share") else LATENCY_MIN_BYTES,
                                        "runs": x["runs"], "max_workers_fitted": x["max_workers"]}
                                    for a, x in sorted(inc.items())},
            "folders": len(fan.folders), "faithful_runs": len(rows),
            "source": f"docs/PROJECTION.md; docs/results/{fan.fit}/ and docs/results/{fan.runs}/",
            "command": f"python scripts/fan_in.py calibration --cc {fan.cc}"}


# The PS scan (experiments/ps_incast_fattree.yaml on Fat-Tree k=4, ps_incast_fattree6.yaml on
# k=6): PS alone against P on a non-blocking Fat-Tree, P - 1 flows into each NIC per phase.
# (folder, PS run's folder): the run's capture.json holds the hosts' TCP counters.
PS_SCAN = (("tcp-cc/ps-scan-p4-cubic", "01-fattree-4-ps-synthetic"),
           ("tcp-cc/ps-scan-p8-cubic", "01-fattree-4-ps-synthetic"),
           ("tcp-cc/ps-scan-p12-cubic", "01-fattree-4-ps-synthetic"),
           ("tcp-cc/ps-scan-k6-p8-cubic", "01-fattree-6-ps-synthetic"),
           ("tcp-cc/ps-scan-k6-p16-cubic", "01-fattree-6-ps-synthetic"),
           ("tcp-cc/ps-scan-p24-cubic", "01-fattree-6-ps-synthetic"),
           ("tcp-cc/ps-scan-p24-cubic-r2", "01-fattree-6-ps-synthetic"),
           ("tcp-cc/ps-scan-p32-cubic", "01-fattree-6-ps-synthetic"),
           # the same file at other link rates (--bw): does the loss per flow follow the rate?
           ("tcp-cc/ps-scan-k6-p8-bw20-cubic", "01-fattree-6-ps-synthetic"),
           ("tcp-cc/ps-scan-k6-p16-bw20-cubic", "01-fattree-6-ps-synthetic"),
           ("tcp-cc/ps-scan-p24-bw5-cubic", "01-fattree-6-ps-synthetic"),
           # the k=6 file with ovs-vswitchd's send buffer at 64 MiB (docs/FIDELITY.md #23)
           *((f"ovs-sndbuf/{f}", "01-fattree-6-ps-synthetic") for f in (
               "ps-k6-p16-64m", "ps-p20-64m", "ps-p24-64m", "ps-p24-64m-r2", "ps-p28-64m", "ps-p32-64m",
               "ps-p32-64m-r2", "ps-p32-64m-r4", "ps-p40-64m", "ps-p48-bw10-64m", "ps-p54-bw10-64m",
               "ps-p54-bw5-64m", *(f"ps-p{p}-bw5-64m" for p in sorted(BW5_SCAN)))),
           # at 2.5 Mbit/s (held out, 2026-12-03 afternoon, send buffer 64 MiB): the test of the rate term
           ("tcp-cc/ps-k6-p16-bw2.5-cubic", "01-fattree-6-ps-synthetic"),
           # at 8 MiB (held out, 2026-12-04, pre-registered in commit 3238cf34): a cost per flow, or a share of bytes?
           ("tcp-cc/ps-k6-p16-8mib-cubic", "01-fattree-6-ps-synthetic"),
           ("tcp-cc/ps-k6-p24-8mib-bw10-cubic", "01-fattree-6-ps-synthetic"),
           # at 36 and 44 workers (held out, 2026-12-05, pre-registered in commit 7bdcd60c): the share per kind's test
           *((f, "01-fattree-6-ps-synthetic") for f in SHARE_KIND_TEST))
PS_SCAN_SOURCES = CUBIC_FAN_IN_SOURCES + tuple(f"{f}/{d}/capture.json" for f, d in PS_SCAN)


def dsacked(tcp: dict) -> str:
    """The share of the hosts' retransmitted segments their receivers reported as duplicates
    (D-SACK): segments that had arrived, so retransmitted spuriously (a timer that fired before
    their acknowledgement came back), not lost (docs/FIDELITY.md #23). Shown at most 100%: a
    receiver can report one duplicate in more than one acknowledgement."""
    retrans, dsack = num(tcp.get("RetransSegs")), num(tcp.get("TCPDSACKRecv"))
    return NA if not retrans or dsack is None else f"{min(dsack / retrans, 1):.0%}"


def projection_ps_incast_scan(data: dict) -> list[str]:
    """PS against P (the PS scan): measured, the flow model with L, what PS lost beyond it per
    sync and per flow into a NIC beyond the first, what the incast start-up charged, and the
    hosts' TCP retransmission timeouts per sync (capture.json's counters over the run, warm-up
    included, so divided by every sync it ran)."""
    fit, lat, rows = _fan_in_rows(data, CUBIC_FAN_IN)
    inc = fit["incast_by_algorithm"]["ps"]
    # the start-up as a time alone (the form until 2026-12-03), fitted on the same runs
    alone = incast_fit(rows, lat, ("ps",), time_only=True)["ps"]["seconds"]
    every = incast_fit(rows, lat, ("ps",))["ps"]  # charged on every step: the validation's form until 2026-12-04
    slack = incast_fit(rows, lat, ("ps",), past_slack=True)["ps"]
    slack1 = {k: v for k, v in inc.items() if k != "flow_share"}  # C: past the slack, none through one switch input
    by = {r["folder"]: r for r in rows if r["algorithm"] == "ps"}
    cells = []
    for folder, run_dir in PS_SCAN:
        r = by.get(folder)
        if r is None:  # not faithful: shown, with its verdict, and nothing compared
            m = find(runs_of(data, f"{folder}/summary.json"), folder, spec="ps")
            half = "fit" if in_fit_half(projected_name(folder)) else "held out"
            cells.append([f"`{folder.split('/')[-1]}`", f"{half}, faithful: {verdict(m)}", str(m["workers"]),
                          f"{num(m['gradient_bytes']) / MB:g} MiB, {fmt(num(m.get('link_mbps')), 'g')} Mbit/s",
                          str(m["workers"] - 1), fmt(num(m.get("median_sync_seconds")), ".2f"),
                          *[NA] * 10, pct(num(m.get("retransmitted_fraction")))])
            continue
        tcp = host_tcp_counters(data[f"{folder}/{run_dir}/capture.json"])
        syncs = (num(r["run"].get("iters")) or 0) + (num(r["run"].get("warmup")) or 0)
        model = _flow_model(r, lat)
        lost = r["measured_seconds"] - model
        extra = r["extra_flows"] or 0
        cells.append([f"`{folder.split('/')[-1]}`", "fit" if r["fit"] else "held out", str(r["workers"]),
                      f"{r['gradient_bytes'] / MB:g} MiB, {fmt(num(r['run'].get('link_mbps')), 'g')} Mbit/s",
                      str(r["workers"] - 1), fmt(r["measured_seconds"], ".2f"), fmt(model, ".2f"), fmt(lost, ".2f"),
                      fmt(r["fan_in_incast_charged"], ".2f"), f"{lost / extra * 1e3:.1f}" if extra else NA,
                      fmt(r["fan_in_ratio"], ".2f"), fmt(common.ratio(model + alone * extra, r["measured_seconds"]), ".2f"),
                      fmt(_every_step_ratio(r, model, every), ".2f"), fmt(_past_slack_ratio(r, model, slack), ".2f"),
                      fmt(num(tcp.get("TCPTimeouts")) / syncs, ".0f") if syncs and tcp.get("TCPTimeouts") is not None
                      else NA, dsacked(tcp), pct(num(r["run"].get("retransmitted_fraction")))])
    return table(["file", "half", "P", "gradient, links", "flows into a NIC per phase", "measured s",
                  "flow model + L x rounds s", "lost s per sync", "incast start-up charged s",
                  "lost per extra flow ms", "sim/meas with it", "sim/meas, start-up a time alone",
                  "sim/meas, start-up on every step", "sim/meas, start-up past the slack (two-port rule off)",
                  "TCP timeouts per sync (all hosts)",
                  "retransmissions D-SACKed (spurious)", "retransmitted"], cells) + [
        "", f"The incast start-up (the validation's and `--calibration cubic`'s since the afternoon of 2026-12-04, "
            f"form D): {incast_label(inc)} per flow into a NIC beyond the first, charged only past the sync's slack "
            f"and not into NICs of two-port switches, its time and bytes fitted on "
            f"{inc['runs']} fit-half PS runs of 2 MiB or more of up to {inc['max_workers']} workers at "
            f"{', '.join(f'{x:g}' for x in inc['rates_mbps'])} Mbit/s (form C: the same uncapped), its share on "
            f"{inc.get('flow_share_runs', 0)} fit-half PS runs of every size; as a time alone (the form until 2026-12-03, "
            f"the column \"a time alone\"), {alone * 1e3:.1f} ms on the same runs; charged on every step (A, the "
            f"validation's until 2026-12-04), {incast_label(every)}; charged only past the slack with the two-port "
            f"rule off (B), {incast_label(slack)} on the same runs.", ""] + _past_slack_check(rows, lat, every, slack, slack1,
                                                                                 fit["unfaithful_shown"], inc)


# PS runs named into the held-out half and pre-registered, with each form's charge, in the
# messages of commits a64f74a1 (the first three), bbcc9aaf (the fourth) and 3238cf34 (the two at
# 8 MiB) before they ran
FORMS_TEST = ("tcp-cc/ps-k6-p16-bw2.5-cubic", "tcp-cc/ps-bcube23-5mbit-cubic", "tcp-cc/ps-bcube42-2mib-bw5-cubic",
              "tcp-cc/ps-bcube24-2.5mbit-2mib-cubic",
              # pre-registered in commit 3238cf34's message, with C charged by the projection
              "tcp-cc/ps-k6-p16-8mib-cubic", "tcp-cc/ps-k6-p24-8mib-bw10-cubic")


def _link_note(r: dict, below: float = 0.95) -> str:
    """", busiest link at x of its rate while busy, host links calibrated at y" where either is under
    `below` (the run's fidelity record): what the emulated links delivered, which the flow model
    takes as their configured rates (the verdict calls a run faithful down to 85% while busy)."""
    fid = (r.get("run") or {}).get("fidelity") or {}
    link = fid.get("busiest_link") or {}
    busy = (num(link.get("busy_mean_mbps")) or 0) / (num(link.get("configured_mbps")) or 1) or None
    host = num((fid.get("calibration") or {}).get("host"))
    if not ((busy and busy < below) or (host and host < below)):
        return ""
    return "".join([f"; busiest link at {busy:.0%} of its rate while busy" if busy else "",
                    f"; host links calibrated at {host:.2f}" if host else ""])


def _every_step_ratio(r: dict, model: float, inc: dict) -> float:
    """Simulated / measured of a row with `inc` charged on every step (form A)."""
    return common.ratio(model + (r["extra_flows"] or 0) * incast_startup(inc, r["link_mbps"]),
                        r["measured_seconds"])


def _past_slack_ratio(r: dict, model: float, inc: dict, one_input_free: bool = False) -> float:
    """Simulated / measured of a row with `inc` charged only past its `incast_slack` (and, with
    `one_input_free`, nothing where its NICs have one switch input: `one_switch_input`)."""
    return common.ratio(model + incast_charge(r, incast_startup(inc, r["link_mbps"]), one_input_free),
                        r["measured_seconds"])


def _past_slack_check(rows, lat: float, every: dict, slack: dict, slack1: dict, unfaithful=(),
                      charged: dict | None = None) -> list[str]:
    """The start-up charged on every step (A) against the start-up charged only past the slack
    (B), and past the slack with none into NICs of one switch input (C, the validation's since
    2026-12-04: each row's fan_in_ratio), each fitted on the same fit-half runs (those it
    charges), on every faithful PS run of today's executor that takes it, per half: within 10%,
    and the misses; then PS under 2 MiB (`_below_threshold`, with the `unfaithful` rows marked)."""
    runs = [r for r in rows if r["faithful"] is True and not r["superseded"] and r.get("extra_flows")
            and charged_incast(r, ("ps",)) and not r.get("oversubscribed")]
    forms = (("on every step", lambda r, m: _every_step_ratio(r, m, every)),
             ("past the slack", lambda r, m: _past_slack_ratio(r, m, slack)),
             ("past the slack, none through one switch input", lambda r, m: _past_slack_ratio(r, m, slack1, True)))
    cells, misses = [], {}
    for half in (True, False):
        mine = [r for r in runs if r["fit"] == half]
        row = ["fit" if half else "held out", str(len(mine))]
        for form, ratio in forms:
            ratios = []
            for r in mine:
                v = ratio(r, _flow_model(r, lat))
                ratios.append(v)
                if abs(v - 1) > TOLERANCE:
                    misses.setdefault(form, []).append(f"{r['experiment']} {r['topology']} ({row[0]}, {v:.2f}"
                                                       f"{_link_note(r)})")
            row += [span(ratios) if ratios else NA, f"{_within(ratios)} of {len(ratios)}"]
        cells.append(row)
    tests = []
    for folder in FORMS_TEST:
        for r in runs:
            if r["folder"] == folder:
                model = _flow_model(r, lat)
                tests.append([f"`{folder.split('/')[-1]}`", r["topology"], f"{r['link_mbps']:g}",
                              fmt(r["measured_seconds"], ".2f"), fmt(model, ".2f"),
                              *(fmt(ratio(r, model), ".2f") for _, ratio in forms)])
    head = ["half", "runs"]
    for form, _ in forms:
        head += [f"sim/meas, start-up {form}", f"within {TOLERANCE:.0%}"]
    return [f"The three forms, each fitted on the same fit-half runs (past the slack with none through one switch "
            f"input: {incast_label(slack1)}; no fit-half run has such NICs), on every faithful PS run of 2 MiB or "
            f"more on a topology without oversubscribed links, per half:", ""] + table(head, cells) + [
        "", f"Outside {TOLERANCE:.0%}: " + "; ".join(f"start-up {form}: {', '.join(x)}" for form, x in misses.items())
        + ".", "", "The held-out runs pre-registered as the forms' test (commits a64f74a1, bbcc9aaf and 3238cf34), PS each:",
        ""] + table(["file", "topology", "hosts' links Mbit/s", "measured s", "flow model + L x rounds s",
                     *(f"sim/meas, start-up {form}" for form, _ in forms)], tests) + [
        "", "What the same runs lost per flow into a NIC beyond the first where their NICs are their "
        "busiest links (no slack), by topology and the hosts' link rate (both halves):", ""] + _lost_per_flow(runs, lat) + [
        ""] + _below_threshold(rows + list(unfaithful), charged or slack1) + [""] + _along_routes(faithful_ps(rows), lat,
                                                                                    charged or slack1) + (
        ["", *_share_by_kind(rows, lat, charged)] if charged and charged.get("flow_share") else [])


def topology_kind(r: dict) -> str:
    """A row's topology kind: "fattree" of "fattree(6)", "bcube" of "bcube(4,2)"."""
    return r["topology"].split("(")[0]


def _share_ratio(r: dict, lat: float, inc: dict, share: float) -> float:
    """Simulated / measured of a PS row charged form D (`inc`) with the cap's share `share`
    instead of its own (a share of 0: uncapped, form C, charged at 2 MiB or more only), as
    `_fan_in_rows` charges."""
    start = row_incast(r, {"ps": {**inc, "flow_share": share}})
    return common.ratio(_flow_model(r, lat) + incast_charge(r, start), r["measured_seconds"])


def _share_by_kind(rows, lat: float, inc: dict) -> list[str]:
    """Form D (`inc`, the validation's: one share for every topology) against the same start-up
    with the share fitted per topology kind (`_share_fit` on each kind's fit-half rows), on every
    faithful PS run per half and size, then the runs pre-registered as the test
    (SHARE_KIND_TEST), with C (uncapped) beside them."""
    ps = faithful_ps(rows)
    shares = {}
    for kind in sorted({topology_kind(r) for r in ps}):
        mine = [r for r in ps if topology_kind(r) == kind]
        if any(r["fit"] and not one_switch_input(r) for r in mine):
            shares[kind] = _share_fit(mine, lat, "ps", inc, True)
    if not shares:
        return []
    per_kind = {k: x["flow_share"] for k, x in shares.items()}
    forms = (("D", lambda r: r["fan_in_ratio"]),
             ("share per kind", lambda r: _share_ratio(r, lat, inc, per_kind.get(topology_kind(r), inc["flow_share"]))))
    cells = []
    for half in (True, False):
        for big in (True, False):
            mine = [r for r in ps if r["fit"] == half and (r["gradient_bytes"] >= LATENCY_MIN_BYTES) == big]
            if mine:
                cells.append(["fit" if half else "held out", "2 MiB or more" if big else "under 2 MiB", str(len(mine)),
                              *(f"{_within([f(r) for r in mine])} of {len(mine)}" for _, f in forms)])
    tests = [[f"`{r['folder'].split('/')[-1]}`", r["topology"], str(r["workers"]), f"{r['link_mbps']:g}",
              fmt(r["measured_seconds"], ".2f"), *(fmt(f(r), ".2f") for _, f in forms),
              fmt(_share_ratio(r, lat, inc, 0.0), ".2f")]
             for folder in SHARE_KIND_TEST for r in ps if r["folder"] == folder]
    label = "; ".join(f"{k} {x['flow_share']:.3f} ({x['flow_share_runs']} fit-half runs)" for k, x in shares.items())
    return [f"The cap's share fitted per topology kind on the same fit-half PS runs of every size ({label}; "
            f"D: {inc['flow_share']:.3f} for all), within {TOLERANCE:.0%}, every faithful PS run:", ""] + table(
        ["half", "gradients", "runs", *(f"within {TOLERANCE:.0%}, {name}" for name, _ in forms)], cells) + [
        "", "The held-out runs pre-registered as its test (commit 7bdcd60c: adopted only if within 10% on both "
        "and nearer than D), PS each, sim/meas:", ""] + table(
        ["file", "topology", "workers", "hosts' links Mbit/s", "measured s", *(name for name, _ in forms),
         "C (uncapped)"], tests)


def faithful_ps(rows) -> list:
    """Every faithful PS row of today's executor with converging flows, any gradient size."""
    return [r for r in rows if r["algorithm"] == "ps" and r["faithful"] is True and not r["superseded"]
            and r.get("extra_flows") and not r.get("oversubscribed")]


def _along_routes(runs, lat: float, inc: dict) -> list[str]:
    """PS on BCube, its flows into a NIC counted as addressed (every shard to NIC 0: P - 1 a phase,
    2(P - 2) extra flows a sync, the count until the evening of 2026-12-04) and along their routes (`fanin.arrivals`, each
    row's extra_flows), each charged form D at today's fit (`inc`): simulated / measured both ways."""
    cells = []
    for r in sorted(runs, key=lambda r: (r["topology"], not r["fit"], r["link_mbps"], r["gradient_bytes"])):
        servers = num((r.get("run") or {}).get("servers")) or 0
        if not r["topology"].startswith("bcube") or servers:
            continue
        model = _flow_model(r, lat)
        per = row_startup(r, inc)
        addressed = 2 * (r["workers"] - 2)  # P - 1 flows into every NIC 0 a phase, less the first
        cells.append([r["experiment"], r["topology"], str(r["workers"]), f"{r['gradient_bytes'] / MB:.2f}",
                      f"{fmt(r['link_mbps'], 'g')}", "fit" if r["fit"] else "held out", str(addressed),
                      f"{r['extra_flows']:g}",
                      fmt(common.ratio(model + incast_charge({**r, "extra_flows": addressed}, per),
                                       r["measured_seconds"]), ".2f"),
                      fmt(r["fan_in_ratio"], ".2f")])
    return (["PS on BCube, its flows into a NIC counted as they were addressed (every shard to the servers' first "
             "NIC: P - 1 a phase, P - 2 beyond the first, the count until the evening of 2026-12-04) and along their routes (since), "
             "each charged form D as fitted now; every faithful run of today's executor, both halves:", ""]
            + table(["file", "topology", "P", "gradient MiB", "hosts' links Mbit/s", "half",
                     "extra flows per sync, as addressed", "extra flows per sync, along the routes",
                     "sim/meas, counted as addressed", "sim/meas, along the routes (as charged)"], cells))


def _below_threshold(rows, inc: dict) -> list[str]:
    """PS under 2 MiB, where form C charged no start-up and form D (the validation's since the
    afternoon of 2026-12-04) charges one capped by a share of the flow's bytes: every PS run of
    today's executor with a smaller gradient, simulated / measured with L alone, with form C's
    start-up in full, and as charged (D), both halves, and per half how many are within 10%;
    those not faithful after the others, marked (in no count)."""
    small = [r for r in rows if r["algorithm"] == "ps" and r["faithful"] is not None and not r["superseded"]
             and r["gradient_bytes"] < LATENCY_MIN_BYTES and r.get("extra_flows")]
    small.sort(key=lambda r: (r["faithful"] is not True, not r["fit"], r["link_mbps"], r["gradient_bytes"]))
    full = {k: v for k, v in inc.items() if k != "flow_share"}
    cells, tally = [], {True: [], False: []}
    for r in small:
        alone = r["fan_in_seconds"] - r["fan_in_incast_charged"]
        if r["faithful"] is True:
            tally[r["fit"]].append(r["fan_in_ratio"])
        cells.append([r["experiment"], r["topology"], str(r["workers"]), f"{r['gradient_bytes'] / MB:.2f}",
                      f"{fmt(r['link_mbps'], 'g')}", f"{ps_flow_bytes(r) / 1e3:.1f}",
                      ("fit" if r["fit"] else "held out") + ("" if r["faithful"] is True else ", faithful: **NO**"),
                      fmt(common.ratio(alone, r["measured_seconds"]), ".2f"),
                      fmt(common.ratio(alone + incast_charge(r, incast_startup(full, r["link_mbps"])),
                                       r["measured_seconds"]), ".2f"),
                      fmt(r["fan_in_ratio"], ".2f")])
    counts = "; ".join(f"{half}: {_within(tally[h])} of {len(tally[h])} within {TOLERANCE:.0%}"
                       + (f" ({span(tally[h])})" if tally[h] else "")
                       for h, half in ((True, "fit half"), (False, "held out")))
    return ([f"PS under {LATENCY_MIN_BYTES / MB:g} MiB: with L alone (form C charged no start-up there), with form "
             f"C's start-up in full, and as charged now (form D: {incast_label(inc)}, the share fitted on "
             f"{inc.get('flow_share_runs', 0)} fit-half PS runs of every size from "
             f"{fmt(inc.get('flow_share_min_mib'), '.2f')} MiB); both halves, runs not faithful last, marked:", ""]
            + table(["file", "topology", "P", "gradient MiB", "hosts' links Mbit/s", "one flow kB", "half",
                     "sim/meas, L alone", "sim/meas, form C's start-up in full", "sim/meas as charged (form D)"],
                    cells)
            + ["", f"Faithful PS runs under {LATENCY_MIN_BYTES / MB:g} MiB as charged (form D): {counts}."])


def _lost_per_flow(runs, lat: float) -> list[str]:
    """Per (topology, hosts' link rate), the runs whose NICs are their busiest links (`incast_slack`
    under 1% of the sync) and what each lost per extra flow: measured - (simulated + L x rounds),
    over its extra flows."""
    by: dict = {}
    for r in runs:
        if incast_slack(r) < 0.01 * r["measured_seconds"]:
            lost = r["measured_seconds"] - _flow_model(r, lat)
            by.setdefault((r["topology"], r["link_mbps"]), []).append(lost / r["extra_flows"] * 1e3)
    cells = [[topo, f"{mbps:g}", str(len(x)), f"{statistics.median(x):.1f}", span(x, ".1f")]
             for (topo, mbps), x in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0]))]
    return table(["topology", "hosts' links Mbit/s", "runs", "median lost per extra flow ms", "lost per extra flow ms"],
                 cells)


FAN_IN_EGRESS = "projection-fan-in-egress/summary.json"
TCP_CC_SOURCES = FAN_IN_SOURCES + CUBIC_FAN_IN_SOURCES


def projection_tcp_cc(data: dict) -> list[str]:
    """What the hosts' congestion control changes in the projection: per family, simulated /
    measured of the faithful runs of today's executors with the flow model alone (L = 0, e = 1),
    in the BBR validation and in the CUBIC one; then each one's fitted L and e."""
    sets = {v.cc: (v, _validation(data, v.folders, v.cc)) for v in (BBR_FAN_IN, CUBIC_FAN_IN)}
    fams: dict = {}
    for cc, (_, rows) in sets.items():
        for r in rows:
            if r["faithful"] is True and not r["superseded"]:
                fams.setdefault(_family(r), {}).setdefault(cc, []).append(r)
    cells = []
    for fam in sorted(fams, key=lambda f: (len(fams[f]) < 2, f)):  # families run both ways first
        row = [fam]
        for cc in sets:
            x = _ratios(fams[fam].get(cc, []))
            row += [str(len(x)), fmt(statistics.median(x), ".2f") if x else NA, span(x) if x else NA,
                    f"{_within(x)} of {len(x)}" if x else NA]
        cells.append(row)
    head = ["family"]
    for cc in sets:
        head += [f"{cc.upper()}: faithful runs", "median sim/meas", "sim/meas", f"within {TOLERANCE:.0%}"]
    lines = table(head, cells) + [
        "", "Simulated: `syncbed project --measured` with no round latency and no fan-in charge, against each run's "
            "median sync (layer-wise plans: their exposed tail after backprop, which is not what they are "
            "projected on; their iterations are in the fan-in tables).", ""]
    for cc, (v, rows) in sets.items():
        fit, lat, _ = _fan_in_rows(data, v)
        own = ", ".join(f"{name} {x['fan_in_efficiency']:.3f}{'' if x['fitted'] else ' (none to fit: the PS and BML e)'}"
                        for name, x in (fit.get("executors") or {}).items())
        stages = "".join(f"; {a.upper()}'s own L = {x['seconds'] * 1e3:.1f} ms per round ({x['runs']} fit-half "
                         f"run{'' if x['runs'] == 1 else 's'})"
                         for a, x in fit["round_latency_by_algorithm"].items())
        stages += "".join(f"; {a.upper()} e = 1 and an incast start-up of {incast_label(x)} per converging "
                          f"flow ({x['runs']} fit-half run{'' if x['runs'] == 1 else 's'})"
                          for a, x in fit["incast_by_algorithm"].items())
        over = fit.get("oversubscribed") or {}
        if over.get("fitted"):
            stages += (f"; oversubscribed switch links e_o = {fit['oversubscribed_efficiency']:.3f} ({len(over['runs'])} "
                       f"fit-half runs)")
        lines.append(f"- {cc.upper()} ({len(v.folders)} folders): L = {lat * 1e3:.2f} ms per round, "
                     f"fan-in e = {fit['fan_in_efficiency']:.3f} ({' and '.join(a.upper() for a in v.fit_algos)})"
                     f"{'; ' + own if own else ''}{stages}.")
    return lines


def _current(data: dict, rel: str, what: str) -> float:
    """L, after checking that `scripts/fan_in.py what`'s record `rel` was simulated with today's L
    and today's measured runs (ValueError naming the command to rerun otherwise)."""
    rec = data[rel]
    lat, _, _ = _fitted(rows := _validation(data))
    if abs(rec["round_latency_seconds"] - lat) > 1e-9:
        raise ValueError(f"{rel} was simulated with L = {rec['round_latency_seconds']} s, the latency fit now "
                         f"gives {lat} s: rerun `python scripts/fan_in.py {what}`")
    measured = {(r["experiment"], r["topology"], r["algo_spec"], r["model"]): r["measured_seconds"] for r in rows}
    for r in rec["runs"]:
        now = measured.get((r["experiment"], r["topology"], r["algo_spec"], r["model"]))
        if now is None or abs(now - r["measured_seconds"]) > 1e-9 * max(1.0, now):
            raise ValueError(f"{rel} simulated other runs than docs/results/{r['folder']} now holds: "
                             f"rerun `python scripts/fan_in.py {what}`")
    return lat


def projection_fan_in_egress(data: dict) -> list[str]:
    """The fan-in model at every switch egress (scripts/fan_in.py egress) beside links into NICs only."""
    eg = data[FAN_IN_EGRESS]
    lat = _current(data, FAN_IN_EGRESS, "egress")
    e = eg["fan_in_efficiency"]
    cells, within = [], {}
    for r in eg["runs"]:
        x = {k: common.ratio(v, r["measured_seconds"]) for k, v in r["simulated_seconds"].items()}
        half = "fit" if r["fit"] else "held out"
        for k, v in x.items():
            within.setdefault((half, k), []).append(v)
        cells.append([r["experiment"], half, r["topology"], r["algo_spec"], str(r["model"]),
                      fmt(x["nic"], ".2f"), fmt(x["egress"], ".2f")])
    lines = table(["experiment", "half", "topology", "algorithm", "model", f"sim/meas, into NICs (e = {e['nic']:.3f})",
                   f"sim/meas, every switch egress (e = {e['egress']:.3f})"], cells)
    return lines + ["", "Within 10%, L = " + f"{lat * 1e3:.2f} ms added: " + "; ".join(
        f"{half}, {'into NICs' if k == 'nic' else 'every switch egress'}: {_within(v)} of {len(v)}"
        for (half, k), v in sorted(within.items(), key=lambda kv: (kv[0][0], kv[0][1] != "nic"))) + "."]


# PS's executor before and after it posted its receives first (2026-11-29, workloads/algorithms/ps.py
# `_post`): (folder measured with sends first, folder rerun with receives first); the one-switch
# pair adds BML beside the old PS (the same flows into each NIC), and the ring beside it
PS_RECV_FIRST = (("ps-fan-in-bw/one-switch-p4", "ps-fan-in-bw/one-switch-recv-first-p4"),
                 ("ps-fan-in-bw/one-switch-bml-p4", "ps-fan-in-bw/one-switch-recv-first-p4"),
                 *((f, f"ps-recv-first/{f}") for f in ("default", "bml-bcube32-vs-ps-fattree",
                                                        "bml-bcube42-vs-ps-fattree")))
PS_RECV_FIRST_SOURCES = tuple(sorted({f"{f}/summary.json" for pair in PS_RECV_FIRST for f in pair}))


def ps_recv_first(data: dict) -> list[str]:
    """Every run of the folders measured with PS's sends posted first beside the same run of the
    folder measured again with its receives first: PS should move, the others should not."""
    cells = []
    for old, new in PS_RECV_FIRST:
        after = {(r["topology"], r["algorithm"], r["model"]): r for r in runs_of(data, f"{new}/summary.json")}
        for r in runs_of(data, f"{old}/summary.json"):
            key = (r["topology"], r["algorithm"], r["model"])
            n = after.get(key) if r["algorithm"] == "ps" or new.startswith("ps-recv-first/") else None
            before_s, after_s = num(r.get("median_sync_seconds")), num((n or {}).get("median_sync_seconds"))
            cells.append([f"`{old}`", f"`{new}`" if n else NA, r["topology"], r["algo_spec"], str(r["model"]),
                          fmt(before_s, ".3f"), fmt(num(r.get("sync_over_bound")), ".2f"), verdict(r),
                          fmt(after_s, ".3f"), fmt(num((n or {}).get("sync_over_bound")), ".2f"),
                          verdict(n) if n else NA, fmt(common.ratio(after_s, before_s), ".2f")])
    return table(["measured with sends first", "again with receives first", "topology", "algorithm", "model",
                  "sync s", "x bound", "faithful", "sync s", "x bound", "faithful", "after / before"], cells)


# the block-sparse executors' posting order measured in one hour (2026-11-29): before (a worktree at
# the commit before the change) and after Comm.exchange_vars
BLOCKSPARSE_ORDER = ("blocksparse-order/sends-first", "blocksparse-order/receives-first")
BLOCKSPARSE_ORDER_SOURCES = tuple(f"{f}/summary.json" for f in BLOCKSPARSE_ORDER)


def blocksparse_order(data: dict) -> list[str]:
    """Each block-sparse run with the sends posted first beside the same run with the receives
    first, an hour apart at most: the sync, and the compute inside it (the slowest rank's), which
    the posting order should not move."""
    old, new = BLOCKSPARSE_ORDER
    after = {(r["topology"], r["algo_spec"], r["model"]): r for r in runs_of(data, f"{new}/summary.json")}
    def compute(x: dict) -> float:
        return sum(num(x.get(k)) or 0.0 for k in ("sparsify_seconds_slowest", "codec_seconds_slowest",
                                                  "aggregate_seconds"))

    cells = []
    for r in runs_of(data, f"{old}/summary.json"):
        n = after.get((r["topology"], r["algo_spec"], r["model"])) or {}
        b, a = num(r.get("median_sync_seconds")), num(n.get("median_sync_seconds"))
        cells.append([r["algo_spec"], str(r["model"]), fmt(b, ".3f"), fmt(compute(r), ".3f"),
                      fmt(num(r.get("sync_over_bound")), ".2f"), verdict(r), fmt(a, ".3f"),
                      fmt(compute(n) if n else None, ".3f"), fmt(num(n.get("sync_over_bound")), ".2f"),
                      verdict(n) if n else NA, fmt(common.ratio(a, b), ".2f")])
    return table(["algorithm", "model", "sends first: sync s", "of it compute s", "x bound", "faithful",
                  "receives first: sync s", "of it compute s", "x bound", "faithful", "after / before"], cells) + [
        "", "Compute s: the slowest rank's selection, coding and aggregation per sync (medians: "
            "`sparsify_seconds_slowest` + `codec_seconds_slowest` + `aggregate_seconds` of summary.json), the part "
            "of the sync that the posting order does not change."]


FAN_IN_SHAPE = "projection-fan-in-shape/summary.json"


def projection_fan_in_shape(data: dict) -> list[str]:
    """The fan-in model's form in n profiled (scripts/fan_in.py shape): per shape, e refitted on the
    fit half and every faithful PS and BML run of 2 MiB or more of both halves simulated at it."""
    sh = data[FAN_IN_SHAPE]
    lat = _current(data, FAN_IN_SHAPE, "shape")
    cells = []
    for prof in sh["profile"]:
        x = [(r, common.ratio(s, r["measured_seconds"])) for r, s in zip(sh["runs"], prof["simulated_seconds"])]
        row = [fmt(prof["shape"], "g") + (" (the model)" if prof["shape"] == 1 else ""),
               f"{prof['fan_in_efficiency']:.3f}", f"{prof['cost']:.4f}"]
        for half in (True, False):
            for algo in ("ps", "bml"):
                v = [y for r, y in x if r["fit"] == half and r["algorithm"] == algo]
                row.append(f"{_within(v)} of {len(v)} ({span(v)})")
        cells.append(row)
    return table(["shape", "e (fitted)", "fit-half cost", "fit half: PS within 10% (sim/meas)", "fit half: BML",
                  "held out: PS", "held out: BML"], cells) + [
        "", f"eff(n) = e + (1 - e) / n^shape on the links into NICs; e fitted at each shape on the fit half as the "
            f"model's (least squares of (simulated + L x rounds) / measured - 1, L = {lat * 1e3:.2f} ms); "
            f"`{sh['command']}`."]


# the same file run five times on 2026-11-28 as the block-sparse executors changed (folder, what it
# ran); from the third on, the receives are posted together (after the sends); the sixth, on
# 2026-11-29, posts them before the sends
RECEIVES = (("dfs-resnet18-digits-held-out", "receives one sender after another; codec not logged"),
            ("dfs-resnet18-digits-codec-logged", "one sender after another; codec logged"),
            ("dfs-resnet18-digits-concurrent-recv", "receives posted together; codec logged"),
            ("dfs-resnet18-digits-concurrent-recv-again", "the same, run again"),
            ("dfs-resnet18-digits-recv-fixed", "the same, 150 iterations: the DFS paper's table until 2026-11-29"),
            ("dfs-resnet18-digits-receives-first", "receives posted before the sends, 40 iterations"))


def projection_blocksparse_receives(data: dict) -> list[str]:
    """The block-sparse runs of the same-file folders of RECEIVES side by side: measured, and the replay
    with the fitted e and L over measured (faithful runs; the fan-in table's figures)."""
    _, lat, rows = _fan_in_rows(data)
    by = {(r["experiment"], r["algo_spec"], r["model"]): r for r in rows}
    names = [projected_name(f) for f, _ in RECEIVES]
    keys = sorted({(r["algo_spec"], r["model"]) for r in rows if r["experiment"] in names
                   and r["algorithm"] in ("dfs", "omnireduce", "topk_ps")}, key=lambda k: (k[1], k[0]))
    cells = []
    for spec, model in keys:
        row = [spec, str(model)]
        for name in names:
            r = by.get((name, spec, model))
            row += [fmt(r["measured_seconds"], ".3f") if r else "– (not faithful)",
                    fmt(r["fan_in_ratio"], ".2f") if r else "–"]
        cells.append(row)
    head = ["algorithm", "model"]
    for f, what in RECEIVES:
        head += [f"{f} ({what}): measured s", "sim/meas"]
    counts = []
    for how in BLOCK_SPARSE_EXECUTORS[1:]:
        ratios = [c["fan_in_ratio"] for (f, _), name in zip(RECEIVES, names) if blocksparse_executor(f) == how
                  for s, m in keys if (c := by.get((name, s, m))) and c["fan_in_ratio"] is not None]
        counts.append(f"with the receives {how}, {_within(ratios)} of {len(ratios)}")
    return table(head, cells) + [
        "", f"sim/meas: the replay (logged bytes and compute) with the fitted e and L = {lat * 1e3:.2f} ms, as in the "
            f"fan-in table. Faithful block-sparse runs within {TOLERANCE:.0%}: {'; '.join(counts)}."]


BLOCK_SPARSE = ("dfs", "omnireduce", "topk_ps")
BLOCK_SPARSE_STEPS = ("push", "pull")  # as workloads/algorithms/_blocksparse.py's STEPS
# the folders whose block-sparse executors posted a step's receives together after its sends
# (Comm.recv_vars, 2026-11-28), and those that post them before the sends (Comm.exchange_vars,
# 2026-11-29); the older folders received one sender after another
RECEIVES_TOGETHER = (*(f for f, _ in RECEIVES[2:5]), "dfs-resnet18-digits-fit-half")
RECEIVES_FIRST = ("dfs-resnet18-digits-receives-first", "blocksparse-order/receives-first",
                  "dfs-resnet18-digits-paper-table")
BLOCK_SPARSE_EXECUTORS = ("one sender after another", "posted together, after the sends", "posted before the sends")


def blocksparse_executor(folder: str) -> str:
    """How the block-sparse executors of a folder's runs posted a step's receives (BLOCK_SPARSE_EXECUTORS)."""
    return BLOCK_SPARSE_EXECUTORS[2 if folder in RECEIVES_FIRST else 1 if folder in RECEIVES_TOGETHER else 0]


def blocksparse_fitted_rows(data: dict) -> list[dict]:
    """The faithful block-sparse runs of the fan-in table, each also with every parameter fitted:
    e and L as there, and the compute the fit half's cost models charge (`fitted_costs`) in place
    of the logged compute the replay charges (compute runs at the sync's ends, so it adds)."""
    fits = fitted_costs(data)
    out = []
    for r in _fan_in_rows(data)[2]:
        if r["algorithm"] not in BLOCK_SPARSE:
            continue
        model = _modelled_compute(r, fits)
        replayed = r["sim"].get("compute_seconds_per_sync") or 0.0
        fitted = None if model is None else r["fan_in_seconds"] - replayed + model
        out.append({**r, "fitted_seconds": fitted, "fitted_ratio": common.ratio(fitted, r["measured_seconds"])})
    return out


def projection_blocksparse_fitted(data: dict) -> list[str]:
    """The block-sparse runs with every parameter fitted on the fit half (e, L, the cost models),
    per algorithm and half, beside the replay of the logged compute with the same e and L."""
    rows = blocksparse_fitted_rows(data)
    cells = []
    for algo in BLOCK_SPARSE:
        for half, of_half in zip(("fit", "held out"), fan_in_split([r for r in rows if r["algorithm"] == algo])):
            for receives in BLOCK_SPARSE_EXECUTORS:
                pts = [r for r in of_half if blocksparse_executor(r["folder"]) == receives]
                if not pts:
                    continue
                logged = [r["fan_in_ratio"] for r in pts if r["fan_in_ratio"] is not None]
                fitted = [r["fitted_ratio"] for r in pts if r["fitted_ratio"] is not None]
                cells.append([algo, half, receives, str(len(pts)), ", ".join(sorted({r["experiment"] for r in pts})),
                              span(logged), f"{_within(logged)} of {len(logged)}", span(fitted),
                              f"{_within(fitted)} of {len(fitted)}"])
    missing = sorted({r["experiment"] for r in rows if r["fitted_ratio"] is None})
    return table(["algorithm", "half", "receives", "faithful runs", "experiments", "sim/meas, logged compute",
                  f"within {TOLERANCE:.0%}", "sim/meas, fitted compute", f"within {TOLERANCE:.0%}"], cells) + [
        "", "Both with the fitted e and L x rounds of the fan-in table; \"fitted compute\": the cost models of the "
            "cost-model table (fit half) in place of each run's logged compute. "
            + (f"No fitted compute for {', '.join(missing)} (a compute it logged has no model, or was charged "
               "a real setting's cost, `real_compress_s`)." if missing else
               "Every run has a model for each compute it logged.")]


def _blocksparse_order(r: dict) -> tuple:
    """The per-run block-sparse tables' row order: fit half first, then by experiment, model, spec."""
    return r["fit"] is False, r["experiment"], str(r["model"]), r["algo_spec"]


def _blocksparse_head(fan: FanIn, r: dict) -> list[str]:
    """The per-run block-sparse tables' first cells: hosts, experiment, half, algorithm, model, measured s."""
    return [fan.cc.upper(), r["experiment"], "fit" if r["fit"] else "held out", r["algo_spec"], str(r["model"]),
            fmt(r["measured_seconds"], ".3f")]


def projection_blocksparse_rounds(data: dict) -> list[str]:
    """The block-sparse runs whose executor posts a step's receives before its sends, in both
    validations, with the header round charged (two rounds per step, `_blocksparse.rounds`, since
    2026-12-05) and without it (one per step, as before): the fan-in tables' figures, at their
    fitted e and L; then the counts within TOLERANCE of every faithful block-sparse run."""
    cells, shown, every = [], [], []
    for fan in (BBR_FAN_IN, CUBIC_FAN_IN):
        rows = [r for r in _fan_in_rows(data, fan)[2] if r["algorithm"] in BLOCK_SPARSE]
        if any(r["rounds"] != 2 * len(BLOCK_SPARSE_STEPS) for r in rows):
            raise ValueError("a block-sparse projection was not charged two rounds per step: rerun "
                             "`bash scripts/project_measured.sh` on its folder")
        for r in rows:  # a round less per step
            r["one_round_ratio"] = common.ratio(r["fan_in_seconds"] - r["fan_in_l"] * len(BLOCK_SPARSE_STEPS),
                                                r["measured_seconds"])
        now = [r for r in rows if not r.get("superseded")]
        for r in sorted(now, key=_blocksparse_order):
            cells.append(_blocksparse_head(fan, r) + [fmt(r["fan_in_l"] * 1e3, ".2f"), fmt(r["one_round_ratio"], ".2f"),
                                                      fmt(r["fan_in_ratio"], ".2f")])
        for counts, which in ((shown, now), (every, rows)):
            for half, of_half in zip(("fit", "held out"), fan_in_split(which)):
                a = [r["one_round_ratio"] for r in of_half if r["one_round_ratio"] is not None]
                b = [r["fan_in_ratio"] for r in of_half if r["fan_in_ratio"] is not None]
                counts.append(f"{fan.cc.upper()} {half}, {_within(a)} and {_within(b)} of {len(b)}")
    return table(["hosts", "experiment", "half", "algorithm", "model", "measured s", "L ms",
                  "sim/meas, one round per step (at the e fitted with two)", "sim/meas, two (charged)"], cells) + [
        "", "Runs of the executor that runs today, which posts a step's receives before its sends (each "
            "validation's fitted e and L, as in its fan-in table). Within "
            f"{TOLERANCE:.0%} with one round per step and with two: these runs, {'; '.join(shown)}; every faithful "
            f"block-sparse run, the superseded executors' too, {'; '.join(every)}."]


# A start-up per block-sparse round in units of this CPU's speed at the hour of the run (tested
# here, not charged by the validation): what the short syncs spend beyond their bytes, rounds and
# logged compute moves with the hour's speed (projection-blocksparse-stages), so each round is
# charged lambda x s instead of L, s being how slowly the run selected against the fit half's
# selection cost model, lambda fitted on the fit half's runs of today's executor.
SPARSIFY_KEY = "sparsify_seconds"  # workloads/algorithms/topk.py's SPARSIFY, as the workers log it


def selection_speed(r: dict, fits: dict) -> float | None:
    """s of a validation row: the slowest worker's selection as the replay charges it
    (`charged_figure`) over the seconds the fit half's selection cost model gives for the run's
    elements and P (`fitted_costs`); 1 is the speed of the fit half's hours, 2 twice as slow. None
    where the run logged no selection, was charged a real setting's, or its compressor has no
    model."""
    from emulation.simulator import costs

    secs = charged_figure(r["run"], SPARSIFY_KEY)
    model = fits.get((COMPRESSORS.get(r["algorithm"], r["algorithm"]), SPARSIFY_KEY))
    elements = (r["gradient_bytes"] or 0) // 4
    if secs is None or model is None or not elements:
        return None
    modelled = model[0].seconds(costs.work(elements, r["workers"], EMULATION_CORES))
    return secs / modelled if modelled > 0 else None


def blocksparse_cpu_unit(data: dict, fan: FanIn, fits: dict) -> tuple[float, list[dict]]:
    """(lambda, rows): the block-sparse runs of today's executor in `fan`'s validation, each with
    its speed s (`selection_speed`, the BBR fit half's cost models as the unit for both) and its
    projection with lambda x s per round in place of L (`cpu_unit_ratio`); lambda fitted as L is
    (`fit_round_latency`: rounds x s in place of rounds) on the fit half's rows that have an s.
    `fits`: `fitted_costs(data)`."""
    rows = [r for r in _fan_in_rows(data, fan)[2] if r["algorithm"] in BLOCK_SPARSE and not r.get("superseded")]
    for r in rows:
        r["speed"] = selection_speed(r, fits)
        r["without_rounds"] = r["fan_in_seconds"] - r["fan_in_l"] * (r["rounds"] or 0)
    lam = fit_round_latency([(r["measured_seconds"], r["without_rounds"], r["rounds"] * r["speed"])
                             for r in rows if r["fit"] and r["speed"] is not None and r["rounds"]])
    for r in rows:
        r["cpu_unit_seconds"] = None if r["speed"] is None else r["without_rounds"] + lam * r["speed"] * r["rounds"]
        r["cpu_unit_ratio"] = common.ratio(r["cpu_unit_seconds"], r["measured_seconds"])
    return lam, rows


def projection_blocksparse_cpu_unit(data: dict) -> list[str]:
    """Both validations' block-sparse runs of today's executor charged L per round (as the fan-in
    tables) and lambda x s per round (`blocksparse_cpu_unit`), with the counts within TOLERANCE."""
    cells, notes, fits = [], [], fitted_costs(data)
    for fan in (BBR_FAN_IN, CUBIC_FAN_IN):
        lam, rows = blocksparse_cpu_unit(data, fan, fits)
        for r in sorted(rows, key=_blocksparse_order):
            cells.append(_blocksparse_head(fan, r) + [
                fmt(r["speed"], ".2f"), fmt(r["fan_in_l"] * 1e3, ".2f"), fmt(r["fan_in_ratio"], ".2f"),
                fmt(None if r["speed"] is None else lam * r["speed"] * 1e3, ".2f"), fmt(r["cpu_unit_ratio"], ".2f")])
        halves = []
        for half, of_half in zip(("fit", "held out"), fan_in_split(rows)):
            both = [r for r in of_half if r["fan_in_ratio"] is not None and r["cpu_unit_ratio"] is not None]
            halves.append(f"{half} {_within([r['fan_in_ratio'] for r in both])} and "
                          f"{_within([r['cpu_unit_ratio'] for r in both])} of {len(both)}")
        fitted_on = sum(1 for r in rows if r["fit"] and r["speed"] is not None and r["rounds"])
        notes.append(f"{fan.cc.upper()}: lambda = {lam * 1e3:.2f} ms, fitted on {fitted_on} fit-half runs; "
                     f"within {TOLERANCE:.0%} with L and with lambda x s, {', '.join(halves)}")
    return table(["hosts", "experiment", "half", "algorithm", "model", "measured s", "speed s", "L ms",
                  "sim/meas, L per round (charged)", "lambda x s ms", "sim/meas, lambda x s per round"], cells) + [
        "", "Runs of today's executor (receives posted before the sends), each validation's fitted e. s: the slowest "
            "worker's logged selection over the BBR fit half's selection cost model at the run's size and P (1: the "
            "speed of the fit half's hours). " + "; ".join(notes) + "."]


# The block-sparse ResNet-20 runs of today's executor (receives posted before the sends), each
# folder's run directories: where their workers' logs say what a step spends
BLOCKSPARSE_STAGE_FOLDERS = (
    ("dfs-resnet18-digits-paper-table", ("05", "06", "07")),
    ("dfs-resnet18-digits-receives-first", ("05", "06", "07")),
    ("tcp-cc/dfs-resnet18-digits-iters40-cubic", ("05", "06", "07")),
    ("tcp-cc/dfs-resnet18-digits-150-cubic", ("05", "06", "07")),
    ("tcp-cc/dfs-resnet20-rounds-cubic", ("01", "02", "03")),
    ("tcp-cc/dfs-resnet20-rounds-bw200-cubic", ("01", "02", "03")),
    ("tcp-cc/dfs-resnet20-speed-cubic", ("01", "02", "03")),
    ("tcp-cc/dfs-resnet20-speed-bw200-cubic", ("01", "02", "03")))
_STAGE_RUNS = {"dfs": "dfs-density-0-01", "omnireduce": "omnireduce-density-0-01", "topk_ps": "topk-ps-density-0-01"}
BLOCKSPARSE_STAGE_RANKS = 4
BLOCKSPARSE_STAGE_SOURCES = tuple(
    f"{folder}/{n}-fattree-4-{_STAGE_RUNS[a]}-resnet20/workers/rank{r}.jsonl"
    for folder, nums in BLOCKSPARSE_STAGE_FOLDERS for n, a in zip(nums, BLOCK_SPARSE)
    for r in range(BLOCKSPARSE_STAGE_RANKS)) + tuple(f"{f}/summary.json" for f, _ in BLOCKSPARSE_STAGE_FOLDERS)


def blocksparse_stages(logs: list) -> dict:
    """Medians over the measured iterations of one run, in seconds, from its ranks' worker logs
    (`logs`: each rank's list of events): the slowest rank's selection (`sparsify_seconds`, the
    sync waits for it), and that rank's push and pull steps as it logged them (`stage` events,
    t0 to t1: its encode, its waits on the other ranks, both rounds and the bytes), and the bytes
    it sent in both (their `bytes`)."""
    its: dict = {}
    for rank, events in enumerate(logs):
        for e in events:
            if e.get("event") == "iter" and not e.get("warmup"):
                its.setdefault(e["iter"], {}).setdefault(rank, {}).update(e)
            elif e.get("event") == "stage" and e.get("phase") in ("push", "pull"):
                mine = its.setdefault(e.get("iter"), {}).setdefault(rank, {})
                mine[e["phase"]] = e["t1"] - e["t0"]
                mine[e["phase"] + "_bytes"] = e.get("bytes", 0)
    rows = []
    for ranks in its.values():
        if len(ranks) != len(logs) or any("observed" not in v or "push" not in v or "pull" not in v
                                           for v in ranks.values()):
            continue
        slow = max(ranks.values(), key=lambda v: v["observed"][SPARSIFY_KEY])
        rows.append((slow["observed"][SPARSIFY_KEY], slow["push"], slow["pull"],
                     slow.get("push_bytes", 0) + slow.get("pull_bytes", 0)))
    if not rows:
        raise ValueError("no measured iteration with every rank's push and pull logged")
    return dict(zip(("sparsify", "push", "pull", "bytes"), (statistics.median(c) for c in zip(*rows))))


def projection_blocksparse_stages(data: dict) -> list[str]:
    """What the short block-sparse syncs spend, per folder: the slowest rank's selection and its
    push and pull steps (`blocksparse_stages`), beside the link rate and the measured sync."""
    cells = []
    for folder, nums in BLOCKSPARSE_STAGE_FOLDERS:
        runs = runs_of(data, f"{folder}/summary.json")
        for n, algo in zip(nums, BLOCK_SPARSE):
            d = f"{n}-fattree-4-{_STAGE_RUNS[algo]}-resnet20"
            run = next(r for r in runs if r.get("dir") == d)
            st = blocksparse_stages([data[f"{folder}/{d}/workers/rank{r}.jsonl"] for r in range(BLOCKSPARSE_STAGE_RANKS)])
            mbps = num(run.get("link_mbps"))
            cells.append([projected_name(folder), host_tcp(run).upper(), fmt(mbps, "g"),
                          algo, fmt(run.get("median_sync_seconds") * 1e3, ".1f"),
                          fmt(st["sparsify"] * 1e3, ".1f"), fmt(st["push"] * 1e3, ".1f"), fmt(st["pull"] * 1e3, ".1f"),
                          fmt(st["bytes"] / 1e3, ".1f"), fmt(st["bytes"] * 8 / (mbps * 1e6) * 1e3, ".2f")])
    return table(["experiment", "hosts", "link Mbit/s", "algorithm", "measured sync ms",
                  "slowest selection ms", "its push step ms", "its pull step ms", "kB it sent in both",
                  "those at the link rate ms"], cells) + [
        "", "ResNet-20 with each algorithm at density 0.01 on 4 workers, today's executor (receives posted before "
            "the sends); medians over the measured iterations of the slowest-selecting rank's selection and of its "
            "push and pull steps as its worker log has them (`stage` events: its encode, its waits on the other "
            "ranks, both rounds and the bytes)."]


def projection_cubic_fan_in(data: dict) -> list[str]:
    """The same on the folders run with CUBIC in the hosts: e and L fitted on their own fit half."""
    return projection_fan_in(data, CUBIC_FAN_IN)


def projection_fan_in(data: dict, fan: FanIn = BBR_FAN_IN) -> list[str]:
    """Per algorithm, each half: simulated / measured without fan-in and L, and with the fan-in
    efficiency and the round latency both fitted on the fit half."""
    fit, lat, rows = _fan_in_rows(data, fan)
    e = fit["fan_in_efficiency"]
    fit_runs = fit["runs"]
    lines = [f"Fit: **e = {e:.3f}** (a link into a NIC crossed by n flows delivers e + (1 - e)/n of its capacity), "
             f"least squares of (simulated + L x rounds) / measured - 1 over the {len(fit_runs)} faithful "
             f"{' and '.join(a.upper() if a == 'ps' else a.upper() for a in fit['fit_algorithms'])} runs with "
             f"gradients of 2 MiB or more in the fit half ({', '.join(sorted({r['experiment'] for r in fit_runs}))}; "
             f"runs of an executor replaced since they were measured, marked superseded below, left out), "
             f"each simulated at the candidate e ({len(fit['evaluations'])} evaluations, `{fit['command']}`), with "
             f"L = {lat * 1e3:.2f} ms per round from the latency fit above. It is every algorithm's e but those "
             f"whose executor has its own:", ""]
    for name, x in (fit.get("executors") or {}).items():
        algos = ", ".join(x["algorithms"])
        if x["fitted"]:
            lines.append(f"- {name} ({algos}): **e = {x['fan_in_efficiency']:.3f}**, fitted the same way on its own "
                         f"{len(x['runs'])} faithful fit-half run{'' if len(x['runs']) == 1 else 's'} of 2 MiB or more "
                         f"({', '.join(sorted({r['experiment'] for r in x['runs']}))}; "
                         f"{len(x['evaluations'])} evaluations).")
        else:
            lines.append(f"- {name} ({algos}): no faithful fit-half run of 2 MiB or more: the e above.")
    own = fit["round_latency_by_algorithm"]
    for algo, x in own.items():
        lines.append(f"- {algo.upper()}'s rounds (its stages): **L = {x['seconds'] * 1e3:.1f} ms per round**, fitted "
                     f"after e as L is, on its own {x['runs']} faithful fit-half run{'' if x['runs'] == 1 else 's'} "
                     f"of 2 MiB or more "
                     f"({', '.join(x['experiments']) or 'none: the L above'}), and charged at 2 MiB or more "
                     f"where n >= 3 (n - 1 flows into each NIC per stage; below 2 MiB and on BCube(2,k), the L "
                     f"above).")
    inc = fit["incast_by_algorithm"]
    for algo, x in inc.items():
        lines.append(f"- {algo.upper()}'s converging flows: e = 1 and an incast start-up of **{incast_label(x)} "
                     f"per flow** into a step's busiest NIC beyond the first, fitted as L is (simulated + L x "
                     f"rounds + the start-up x those flows, `fit_incast`), on its own {x['runs']} faithful fit-half "
                     f"run{'' if x['runs'] == 1 else 's'} of 2 MiB or more ({', '.join(x['experiments'])}), "
                     + (f"no more per flow than **{x['flow_share']:.2f} of that flow's own bytes** at the same "
                        f"rate (the share fitted after, `fit_incast_share`, on its {x['flow_share_runs']} faithful "
                        f"fit-half runs of every size, down to {x['flow_share_min_mib']:.2f} MiB), and charged at every "
                        f"size" if x.get("flow_share") else "and charged at 2 MiB or more (below, L alone)")
                     + (", only past the sync's slack (the seconds its busiest link needs beyond its NICs') and "
                        "nothing into NICs of two-port switches (BCube(2,k)): form "
                        f"{'D' if x.get('flow_share') else 'C'} of \"Charged only past the "
                        "slack\" below, what `core.past_slack` charges a new projection"
                        if x.get("past_slack") else "") + ".")
    over = fit.get("oversubscribed") or {}
    eo = fit.get("oversubscribed_efficiency", 1.0)
    if fan.oversubscribed:
        names = ", ".join(sorted({r["experiment"] for r in over.get("runs") or []})) or "none"
        lines.append(f"- Oversubscribed switch links (switch to switch, slower than the hosts' links: the "
                     f"aggregation-core links of forest scenario 3 and of the k=6 Fat-Tree at 4:1): **e_o = {eo:.3f}**, "
                     f"every algorithm's, in the same form e_o + (1 - e_o)/n, on those whose flows meet a second one "
                     f"at least as loaded (`fanin.in_series`), fitted after e (least squares as e: each run at its executor's e, L x rounds "
                     f"and its incast start-up added) on the {len(over.get('runs') or [])} faithful fit-half runs of "
                     f"2 MiB or more on a topology with such links ({names}; "
                     f"{len(over.get('evaluations') or [])} evaluations)." if over.get("fitted") else
                     "- Oversubscribed switch links: no faithful fit-half run of 2 MiB or more crosses one: e_o = 1.")
    from emulation.simulator import fanin

    args = fanin.arguments(e, fit.get("fan_in_by_algorithm") or {})
    lats = [f"{lat:.4f}", *(f"{a}={x['seconds']:.4f}" for a, x in sorted(own.items()))]
    # --incast takes a time; a start-up with bytes at the link rate is the calibration's alone
    incs = "".join(f" `--incast {a}={x['seconds']:.4f}`" if not x.get("bytes") else
                   f" {a.upper()}'s incast start-up ({incast_label(x)}, what `--calibration {fan.cc}` charges)"
                   for a, x in sorted(inc.items()))
    oversub = f" `--oversubscribed {eo:.4f}`" if eo != 1.0 else ""
    lines += ["", f"Every run below is projected again with {' '.join(f'`--fan-in {a}`' for a in args)}{oversub} "
                  f"(`docs/results/{fan.runs}/`) and L x rounds added, what "
                  f"{' '.join(f'`--round-latency {a}`' for a in lats)}{incs} charge{'' if len(lats) > 1 or inc else 's'} "
                  f"(an own L{' or incast start-up' if inc else ''} only where the list "
                  f"above says; layer-wise plans: their own start-ups instead); faithful runs only.", ""]
    groups: dict = {}
    for r in rows:
        size = ">= 2 MiB" if r["gradient_bytes"] >= LATENCY_MIN_BYTES else "< 2 MiB"
        groups.setdefault((algo_label(r), size), []).append(r)
    cells = []
    for (algo, size), rs in sorted(groups.items()):
        for half, pts in zip(("fit", "held out"), fan_in_split(rs)):
            if not pts:
                continue
            r0 = _ratios(pts)
            r1 = [r["fan_in_ratio"] for r in pts if r["fan_in_ratio"] is not None]
            it = [x for x in (r.get("iteration_sim_over_measured") for r in pts) if x is not None]
            cells.append([algo, size, half, str(len(pts)), ", ".join(sorted({r["experiment"] for r in pts})),
                          span(r0), ", ".join(f"{x:.3f}" for x in sorted({r["fan_in_e"] for r in pts})),
                          ", ".join(f"{x * 1e3:.1f}" for x in sorted({r["fan_in_l"] for r in pts})),
                          *([", ".join(f"{x * 1e3:.1f}" for x in sorted({r["fan_in_incast"] for r in pts}))] if inc else []),
                          span(r1), pct(_mean_error(r1)), f"{_within(r1)} of {len(r1)}",
                          f"{span(it, '.3f')} ({_within(it)} of {len(it)})" if it else NA])
    lines += table(["algorithm", "gradients", "half", "faithful runs", "experiments", "sim/meas, e = 1, L = 0", "e",
                    "L (ms)", *(["incast (ms per flow)"] if inc else []),
                    f"sim/meas, that e and L{' (and incast)' if inc else ''}", "mean abs(sim/meas - 1)",
                    f"within {TOLERANCE:.0%}", f"layer-wise: iteration sim/meas (within {TOLERANCE:.0%})"], cells)
    outside = [f"{r['experiment']} {r['topology']} {r['algo_spec']}{' (superseded)' if r['superseded'] else ''} "
               f"{r['model']} ({r['fan_in_ratio']:.2f})"
               for r in rows if not r["fit"] and r["fan_in_ratio"] is not None and abs(r["fan_in_ratio"] - 1) > TOLERANCE]
    return lines + ["", "Held out and outside 10% with the fitted e and L: " + ("; ".join(outside) or "none") + ".",
                    "", _stage_startups(rows),
                    *(_oversubscribed_runs(rows, [r for r in fit["unfaithful_shown"] if r["oversubscribed"]]) if fan.oversubscribed else [])]


def _oversubscribed_runs(rows, unfaithful=()) -> list[str]:
    """Every run on a topology with oversubscribed links, both halves, the faithful ones first
    (those not faithful marked, in no fit and no count): simulated / measured with nothing
    fitted, and with everything fitted (e_o included), and how many of the topology's
    oversubscribed links took e_o (`fanin.in_series`)."""
    def key(r):
        return (r["faithful"] is not True, not r["fit"], r["experiment"], r["algo_spec"])
    rs = sorted([r for r in rows if r.get("oversubscribed")] + list(unfaithful), key=key)
    if not rs:
        return []

    def charged(r):
        n, of = r.get("eo_links") or (None, None)
        return NA if n is None or not of else f"{n} of {of}"
    cells = [[r["experiment"], ("fit" if r["fit"] else "held out") + ("" if r["faithful"] is True else ", faithful: **NO**"),
              algo_label(r), r["model"], charged(r),
              fmt(common.ratio(r["simulated_seconds"], r["measured_seconds"]), ".2f"),
              fmt(r["fan_in_ratio"], ".2f")] for r in rs]
    return ["", "The runs on a topology with oversubscribed links, both halves (those not faithful in no fit and "
            "no count):", "",
            *table(["experiment", "half", "algorithm", "model", "oversubscribed links that took e_o",
                    "sim/meas, nothing fitted", "sim/meas, fitted (e_o too)"], cells)]


def _stage_startups(rows) -> str:
    """The start-up per stage each faithful BML run of 2 MiB or more implies at the fitted e,
    (measured - simulated at e) / stages, by n (both halves): what BML's own L stands for."""
    by: dict = {}
    for r in rows:
        if r["algorithm"] in OWN_LATENCY and r["gradient_bytes"] >= LATENCY_MIN_BYTES and r["rounds"]:
            by.setdefault(bcube_n(r["topology"]), []).append((r["measured_seconds"] - r["fan_in_sim"]) / r["rounds"])
    parts = [f"n = {n} ({n - 1} flow{'' if n == 2 else 's'} into each NIC per stage): median "
             f"{statistics.median(v) * 1e3:.1f} ms, {min(v) * 1e3:.1f}-{max(v) * 1e3:.1f} ms ({len(v)} "
             f"run{'' if len(v) == 1 else 's'})" for n, v in sorted(by.items())]
    return ("The start-up per stage each faithful BML run of 2 MiB or more implies at the fitted e, (measured - "
            "simulated) / stages, by n (both halves): " + ("; ".join(parts) or "no run") + ".")


def projection_fan_in_options(data: dict) -> list[str]:
    """SimGrid's own options beside today's CM02 on the same faithful runs: do any express fan-in?"""
    opt = data[FAN_IN_OPTIONS]
    names = list(opt["options"])
    ref = names[0]
    by_algo: dict = {}
    for r in opt["runs"]:
        by_algo.setdefault(r["algorithm"], []).append(r)
    cells = []
    for algo, rs in sorted(by_algo.items()):
        row = [algo, str(len(rs))]
        for n in names:
            ratios = [r["simulated_seconds"][n] / r["measured_seconds"] for r in rs]
            shift = [r["simulated_seconds"][n] / r["simulated_seconds"][ref] for r in rs]
            row.append(span(ratios) + ("" if n == ref else f" (x{span(shift, '.3f')})"))
        cells.append(row)
    return table(["algorithm", "faithful runs", *(f"sim/meas, {n}" for n in names)], cells) + [
        "", f"In brackets: each run's simulated time under the option over {ref}. `{opt['command']}`."]


# ---- every algorithm's projection run time against P (scripts/projection_runtimes.py) ----
RUNTIMES_ALL = "projection-runtimes-all/result.json"


def _workers(p: dict) -> int:
    """A point's P: as recorded, else every host of its topology (a killed or refused command)."""
    from emulation.simulator import core

    return p.get("workers") or core.description_sizes(p["topology"])["hosts"]


def _outcome(p: dict) -> str:
    """What happened to a point past the last one within the limit."""
    if p["status"] == "ok":
        return f"{fmt(p['command_wall_seconds'], '.0f')} s"
    if p["status"] == "killed":
        return f"killed at {fmt(p['command_wall_seconds'], '.0f')} s"
    msg = p.get("message") or ""
    why = "time estimate" if "CPU hours" in msg else "memory estimate" if "GiB" in msg else msg
    return f"{p['status']} ({why})"


def projection_runtimes_all(data: dict) -> list[str]:
    """Per algorithm: the largest P whose whole `syncbed project` command stayed within the
    limit, what it cost, and what the sizes tried past the limit did; under it, SimGrid's CPU against the
    run-time estimate's step terms for every point that took a second or more."""
    d = data[RUNTIMES_ALL]
    limit = d["limit_seconds"]
    rows, checks, reach, ratios = [], [], [], []
    for spec, pts in d["algorithms"].items():
        ok = [p for p in pts if p["status"] == "ok" and p["command_wall_seconds"] <= limit]
        best = max(ok, key=lambda p: p["workers"]) if ok else None
        over = [f"{p['topology']}, P = {_workers(p)}: {_outcome(p)}" for p in pts if p not in ok]
        steps = best and (f"{best['messages']:,}" + (f" ({best['steps']} steps)" if best["steps"] > 2 else ""))
        rows.append([spec, best["topology"] if best else NA, str(best["workers"]) if best else "none",
                     fmt(best and best["command_wall_seconds"], ".1f"), fmt(best and best["route_seconds"], ".2g"),
                     fmt(best and best["simgrid_cpu_seconds"], ".2g"), steps or NA,
                     " + ".join(map(str, best.get("reduced_classes_per_step") or [])) if best and best.get(
                         "reduced_classes_per_step") else "-",
                     fmt(best and (best.get("peak_bytes") or 0) / MB, ".0f"),
                     "; ".join(over) or "none (the largest size tried)"])
        reach.append(best["workers"] if best else 0)
        for p in pts:
            cpu = num(p.get("simgrid_cpu_seconds"))
            if p["status"] == "ok" and cpu is not None and cpu >= 1.0:
                est = num(p.get("step_estimate_seconds"))
                per = p.get("simulated_messages_per_step") or [0]
                rep = p.get("repeated_steps")
                checks.append([spec, p["topology"], str(p["workers"]),
                               str(len(per)) + (f" ({rep} repeated)" if rep else ""), f"{max(per):,}", fmt(cpu, ".3g"),
                               fmt(est, ".3g"), fmt(est / cpu if cpu and est is not None else None, ".2f")])
                if est is not None:
                    ratios.append((est / cpu, f"{spec} {p['topology']}"))
    top = max(reach, default=0)
    return table(["algorithm", "largest within the limit", "P", "command wall s", "routes s", "SimGrid CPU s",
                  "messages", "reduced to", "command peak MB", "sizes past the limit"], rows) + [
        "", f"Limit: {limit:g} s of wall per whole command (process start, the registry's torch import, "
            f"planning, routes and SimGrid); {sum(1 for r in reach if r == top)} of {len(reach)} algorithms "
            f"reach P = {top} within it. Measured {d['started']} to {d.get('finished', '(unfinished)')} on "
            f"{d['cores']} cores" + "".join(f"; {', '.join(m['algorithms'])} measured again {m['started']} to "
                                             f"{m.get('finished', '(unfinished)')}" for m in d.get("remeasured", []))
            + ".",
        "", "SimGrid's CPU against the run-time estimate's step terms (`step_seconds` over the messages "
            "SimGrid ran per step, each step ending as `step_ends` says; a step that repeats an earlier one's "
            "messages is not simulated again and costs the estimate nothing, `core.repeated_steps`, counted "
            "where the point records it), every point that took a second or more:", ""] + table(
        ["algorithm", "topology", "P", "steps", "largest step (messages)", "SimGrid CPU s", "estimated s",
         "estimated / CPU"], checks) + ([
        "", f"Estimated / CPU: {span([r for r, _ in ratios], '.2f')}; below 1 (the estimate low): "
            + ("; ".join(f"{w} ({r:.2f})" for r, w in ratios if r < 1) or "none") + "."] if ratios else [])


STEP_COST = "simgrid-step-cost/result.json"


def simgrid_step_cost(data: dict) -> list[str]:
    """SimGrid's CPU for one step of F flows in each regime (scripts/simgrid_step_cost.py), the
    fitted F^2 coefficient, and what the estimate (`step_seconds`) charges such a step."""
    from emulation.simulator import core

    d = data[STEP_COST]
    regimes = list(d["fits"])
    flows = sorted({p["flows"] for p in d["points"]})
    cpu = {(p["regime"], p["flows"]): p["cpu_seconds"] for p in d["points"]}
    rows = [[str(f)] + [fmt(cpu.get((r, f)), ".3g") for r in regimes]
            + [fmt(core.step_seconds(f, "together"), ".3g"), fmt(core.step_seconds(f, "apart"), ".3g")]
            for f in flows]
    rows.append(["fitted b (s per flow pair)"] + [fmt(d["fits"][r]["per_flow_pair"], ".2g") for r in regimes]
                + [fmt(core.CPU_PER_FLOW_PAIR, ".2g"), fmt(core.CPU_PER_FLOW_PAIR_APART, ".2g")])
    return table(["flows in the step"] + [f"{r} CPU s" for r in regimes]
                 + ["estimate, together s", "estimate, apart s"], rows)
