"""Planners: the pure functions that decide a schedule before anything runs. No processes, no
Comm, no executor state, no tensors in or out: numbers and descriptions in, a schedule out. An
algorithm's `plan()` calls its planner and puts the result in the plan (JSON); its executor
only carries the plan out. Each planner is unit-tested against brute force, an LP or a
simulation in numpy (tests/unit/).

Where a planner goes (the rule):
- A schedule that takes more than a screen of its own, or that anything besides the algorithm's
  contract functions reads (the tests' simulators, a paper module, the simulation, a second
  algorithm), is a planner: a module here, named after what it plans. `forest.py` (the tree
  packing and its cut bound), `merge.py` (MG-WFBP's layer grouping, shared by the four
  layer-wise algorithms), `bml.py` (BML's sync trees, what each server sends in each stage, the
  per-switch groups), `blocks.py` (DFS's block-size choice), `background.py` (what background
  flows leave of each link, read by the forest planner and by the SimGrid simulation).
- The algorithm module (workloads/algorithms/<name>.py) keeps the contract's glue: its options
  and `validate`, `plan(ctx)` calling the planner, `traffic`/`phases`/`rounds`/`groups` read off
  the plan, the hooks the emulation asks (`describe`, `timeline`, `compute`, `summarize`) and
  the executor. A rule of a few lines that the plan, `phases` and the executor share (hd's
  partner per step, ring's chunk order) stays in the algorithm module.
- What the executors run on the wire (a codec such as the block-sparse wire format,
  workloads/blocks.py) is not a planner, even when it is pure: it stays beside its executors.
- A planner imports no algorithm module and nothing of the emulation; it may use the
  contract's pure helpers (`workloads.algorithms.base.split`), topologies' arithmetic and a
  codec's sizes.
"""
