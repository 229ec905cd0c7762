"""The vocabulary every layer shares, and nothing else: the spec grammar (`specs`) and the
units of a gradient on the wire (`units`). It imports no other syncbed package, so
topologies, workloads and emulation can all use it without importing each other."""
