"""The SimGrid simulation of a sync algorithm's schedule (`syncbed project`): `core` lays an
algorithm's planned flows onto a topology's routes and runs them in SimGrid's flow model;
`platform` turns a `Topology` into a SimGrid platform. The analysis of an emulated run asks it
for the same plan's simulated time; `syncbed project` runs it on its own, at any scale."""
