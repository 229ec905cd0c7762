"""Planners: the pure functions that decide a schedule before anything runs (a forest
packing, a merge plan, a BML schedule, block sizes). No processes, no torch, no Comm: an
algorithm's `plan()` calls its planner and puts the result in the plan; the executor only
reads it. Each planner is unit-tested against brute force or an LP (tests/unit/)."""
