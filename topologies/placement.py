"""Which host runs which rank: the placement of ranks on a topology's hosts (pure).

Used by the emulation's config (`placement:` in the experiment YAML) and by the simulator,
so it lives with the topologies both read, not in either of them."""
from __future__ import annotations

PLACEMENTS = ("ordered", "spread")


def place(topo, count: int, placement: str) -> list[str]:
    """Hosts for ranks 0..count-1: in host order, or round-robin over edge switches/levels."""
    hosts = topo.hosts()
    if placement == "ordered" or count >= len(hosts):
        return hosts[:count]
    groups: dict = {}
    for h in hosts:  # hosts sharing the switch their first NIC hangs off
        sw = topo.peer(topo.host_nics(h)[0].name).node
        groups.setdefault(sw, []).append(h)
    # take one host per switch, walking switches in pod order, until enough
    order, lists = [], list(groups.values())
    while len(order) < count:
        for lst in lists:
            if lst and len(order) < count:
                order.append(lst.pop(0))
    return order
