"""One rank's Gloo process groups: one per NIC over all ranks, plus the extra groups a plan asks for.

Why raw `ProcessGroupGloo` objects instead of `init_process_group`: a BCube server must send
each level's traffic out of that level's NIC, and a default group can bind only one. Here
every NIC l gets its own group over ALL world ranks, bound to that interface through
`ProcessGroupGloo._Options()._devices` and rendezvousing under `PrefixStore(f"nic{l}")` of
one shared `FileStore` (on the run's disk, so no control traffic crosses the emulated
links). A `GroupSpec` from `algorithm.groups(plan)` becomes a group over its ranks on its
NIC, under `PrefixStore(f"g:{id}")`; only member ranks build it (group rank = index in
`spec.ranks`). torch 2.13 needs no default group for any of this.

Executors only see this object: `send`/`recv` by global rank on a NIC (they return Gloo
`Work`; post the pairs, then wait), `send_var`/`recv_var`/`recv_vars`/`exchange_vars` for
messages whose size only the sender knows (a size header, then the data), `group(id)`,
`barrier()`, and `record(**event)` for timeline events that the worker writes into the rank's
JSONL log. `sent` and `messages` count the payload bytes and sends handed to `send` per
(dst, nic); the parallel tests compare them with `traffic(plan)`.
"""
from __future__ import annotations

import os
import threading
from datetime import timedelta
from typing import Callable, Iterable

import torch
import torch.distributed as dist
from torch.distributed import ProcessGroupGloo

from workloads.algorithms.base import GroupSpec


def _gloo_group(store, rank: int, size: int, interface: str, timeout_s: float) -> ProcessGroupGloo:
    opts = ProcessGroupGloo._Options()
    opts._devices = [ProcessGroupGloo.create_device(interface=interface)]
    opts._timeout = timedelta(seconds=timeout_s)
    return ProcessGroupGloo(store, rank, size, opts)


class Comm:
    """Process groups of one rank. Build it on every rank of the job with the same arguments
    except `rank` (and `nics`, which name this host's interfaces)."""

    def __init__(self, rank: int, world: int, store, nics: Iterable[str],
                 groups: Iterable[GroupSpec] = (), timeout_s: float = 120.0,
                 sink: Callable[[dict], None] | None = None):
        nics = list(nics)
        if world < 1 or not 0 <= rank < world:
            raise ValueError(f"rank {rank} is outside world 0..{world - 1}")
        if not nics:
            raise ValueError("need at least one NIC interface name (NIC 0 first), e.g. ['lo']")
        self.rank, self.world, self.nics, self.timeout_s = rank, world, nics, float(timeout_s)
        # A path means a FileStore on the shared disk; a Store object is used as is (tests).
        self.store = dist.FileStore(os.fspath(store), world) if isinstance(store, (str, os.PathLike)) else store
        if isinstance(store, (str, os.PathLike)):  # a lost peer fails the store barrier in time too
            self.store.set_timeout(timedelta(seconds=timeout_s))
        self.sink = sink  # called with each recorded event; None keeps them in self.events
        self.events: list[dict] = []
        self.iteration: int | None = None  # set by the worker, stamped on recorded events
        self.sent: dict[tuple[int, int], int] = {}  # (dst, nic) -> payload bytes passed to send
        self.messages: dict[tuple[int, int], int] = {}  # (dst, nic) -> number of sends
        self._lock = threading.Lock()  # executors may send and record from several threads
        self._nic_pgs = [_gloo_group(dist.PrefixStore(f"nic{l}", self.store), rank, world, name,
                                     self.timeout_s) for l, name in enumerate(nics)]
        self._groups: dict[str, tuple[ProcessGroupGloo, tuple]] = {}
        for spec in groups:
            ranks = tuple(int(r) for r in spec.ranks)
            if spec.id in self._groups:
                raise ValueError(f"group id {spec.id!r} appears twice; group ids must be unique")
            if len(set(ranks)) != len(ranks) or any(not 0 <= r < world for r in ranks):
                raise ValueError(f"group {spec.id!r}: ranks {list(ranks)} must be distinct ranks in 0..{world - 1}")
            if not 0 <= spec.nic < len(nics):
                raise ValueError(f"group {spec.id!r} uses NIC {spec.nic}; this rank has NICs 0..{len(nics) - 1}")
            if rank in ranks:
                pg = _gloo_group(dist.PrefixStore(f"g:{spec.id}", self.store), ranks.index(rank), len(ranks),
                                 nics[spec.nic], self.timeout_s)
                self._groups[spec.id] = (pg, ranks)

    @classmethod
    def over(cls, process_group, sink: Callable[[dict], None] | None = None, timeout_s: float = 120.0) -> "Comm":
        """A Comm whose NIC 0 is an existing process group (one that torch.distributed or DDP
        already made, e.g. `dist.group.WORLD`): ranks are that group's ranks, no other group and
        no store are made, and every byte is counted as in any Comm (workloads/ddp_hooks.py).
        `group(id)` and `store_barrier` are not available on it."""
        self = cls.__new__(cls)
        self.rank, self.world = int(process_group.rank()), int(process_group.size())
        self.nics, self.timeout_s, self.store = ["(process group)"], float(timeout_s), None
        self.sink, self.events, self.iteration = sink, [], None
        self.sent, self.messages = {}, {}
        self._lock = threading.Lock()
        self._nic_pgs, self._groups = [process_group], {}
        return self

    # --- groups -------------------------------------------------------------------------
    def nic(self, l: int = 0) -> ProcessGroupGloo:
        """The group over all world ranks bound to NIC `l` (group rank = global rank)."""
        if not 0 <= l < len(self._nic_pgs):
            raise ValueError(f"NIC {l} does not exist; this rank has NICs 0..{len(self._nic_pgs) - 1} ({', '.join(self.nics)})")
        return self._nic_pgs[l]

    def group(self, gid: str) -> tuple[ProcessGroupGloo, tuple]:
        """(process group, global ranks in group-rank order) of a GroupSpec containing this rank."""
        if gid not in self._groups:
            raise ValueError(f"rank {self.rank} is not in a group {gid!r}; its groups: "
                             f"{', '.join(sorted(self._groups)) or '(none)'}")
        return self._groups[gid]

    # --- point to point -----------------------------------------------------------------
    def send(self, tensor: torch.Tensor, dst: int, nic: int = 0, tag: int = 0):
        """Start sending a contiguous tensor to global rank `dst` on NIC `nic`; returns Work."""
        self._check_peer(dst)
        self.count(dst, nic, tensor.numel() * tensor.element_size())
        return self.nic(nic).send([tensor], dst, tag)

    def count(self, dst: int, nic: int, nbytes: int) -> None:
        """Account one send of `nbytes` to `dst` on `nic` (thread-safe; for sends made on a group)."""
        with self._lock:
            self.sent[(dst, nic)] = self.sent.get((dst, nic), 0) + nbytes
            self.messages[(dst, nic)] = self.messages.get((dst, nic), 0) + 1

    def recv(self, tensor: torch.Tensor, src: int, nic: int = 0, tag: int = 0):
        """Start receiving into a contiguous tensor from global rank `src` on NIC `nic`; returns Work."""
        self._check_peer(src)
        return self.nic(nic).recv([tensor], src, tag)

    # --- variable-size messages ---------------------------------------------------------
    # A header (one int64: the element count) on `tag`, then the data on `tag + VAR_DATA_TAG`
    # (distinct slots, so the two never match each other's receive); an empty message sends
    # the header alone. Both go through `send`, so both are counted and framed like any message.
    VAR_DATA_TAG = 1 << 20
    HEADER_BYTES = 8

    def send_var(self, tensor: torch.Tensor, dst: int, nic: int = 0, tag: int = 0) -> list:
        """Start sending a 1-D contiguous tensor of any length to `dst`; returns the Works."""
        header = torch.tensor([tensor.numel()], dtype=torch.int64)
        works = [self.send(header, dst, nic, tag)]
        if tensor.numel():
            works.append(self.send(tensor, dst, nic, tag + self.VAR_DATA_TAG))
        return works

    def recv_var(self, src: int, dtype: torch.dtype, nic: int = 0, tag: int = 0) -> torch.Tensor:
        """Receive what `send_var` sent (blocking): the header, then a tensor of that length."""
        header = torch.zeros(1, dtype=torch.int64)
        self.recv(header, src, nic, tag).wait()
        out = torch.empty(int(header[0]), dtype=dtype)
        if out.numel():
            self.recv(out, src, nic, tag + self.VAR_DATA_TAG).wait()
        return out

    def recv_vars(self, srcs: list, dtype: torch.dtype, nic: int = 0, tag: int = 0) -> list:
        """Receive what each rank of `srcs` sent with `send_var` (blocking), all at once: every
        header's receive is posted before any is waited for, then every payload's. A Gloo send
        waits until its receive is posted, so `recv_var` one sender after another would let the
        senders' messages through one at a time: here they flow together."""
        headers = [torch.zeros(1, dtype=torch.int64) for _ in srcs]
        for work in [self.recv(h, src, nic, tag) for h, src in zip(headers, srcs)]:
            work.wait()
        outs = [torch.empty(int(h[0]), dtype=dtype) for h in headers]
        for work in [self.recv(out, src, nic, tag + self.VAR_DATA_TAG) for out, src in zip(outs, srcs) if out.numel()]:
            work.wait()
        return outs

    def exchange_vars(self, sends: list, srcs: list, dtype: torch.dtype, nic: int = 0,
                      tag: int = 0) -> tuple[list, list]:
        """One step of variable-size messages: send each `(tensor, dst)` of `sends` as `send_var`
        does and receive one such message from each rank of `srcs`; returns (the received
        tensors in `srcs` order, the sends' Works to wait for later). Blocks until every receive
        completed.

        Receives go first in both halves: every header's receive is posted before any header is
        sent, and every payload's receive (each as soon as its header arrived) before any payload
        is sent. A Gloo send moves no data until the receiver has told the sender its receive is
        posted, and (our reading of PS's capture) that word waits behind whatever the receiver is
        already sending to the sender on their connection: a rank that posted its payloads first
        held the word back behind them (found in PS's executor, docs/PROJECTION.md "Fan-in"; for
        these messages measured in the blocksparse-order table there)."""
        headers = [torch.zeros(1, dtype=torch.int64) for _ in srcs]
        got = [self.recv(h, src, nic, tag) for h, src in zip(headers, srcs)]
        works = [self.send(torch.tensor([t.numel()], dtype=torch.int64), dst, nic, tag) for t, dst in sends]
        outs, data = [], []
        for work, h, src in zip(got, headers, srcs):
            work.wait()
            outs.append(torch.empty(int(h[0]), dtype=dtype))
            if outs[-1].numel():
                data.append(self.recv(outs[-1], src, nic, tag + self.VAR_DATA_TAG))
        works += [self.send(t, dst, nic, tag + self.VAR_DATA_TAG) for t, dst in sends if t.numel()]
        for work in data:
            work.wait()
        return outs, works

    def _check_peer(self, peer: int) -> None:
        if not 0 <= peer < self.world or peer == self.rank:
            raise ValueError(f"rank {self.rank} cannot talk to rank {peer}; peers are the other ranks in 0..{self.world - 1}")

    def barrier(self, nic: int = 0) -> None:
        """Block until every rank reached this barrier (a few bytes on NIC `nic`)."""
        self.nic(nic).barrier().wait()

    def store_barrier(self, name: str) -> None:
        """Block until every rank reached barrier `name`, through the shared store only.

        Nothing crosses the emulated links, so the captures hold the algorithm's bytes
        alone (a Gloo barrier adds a few KiB per iteration: 15% of LeNet-5's gradient)."""
        key = f"barrier/{name}"
        if self.store.add(key, 1) == self.world:
            self.store.set(key + "/go", b"1")
        self.store.wait([key + "/go"])

    # --- timeline -----------------------------------------------------------------------
    def record(self, **event) -> None:
        """Add a timeline event (default kind "stage"; stamped with the current iteration)."""
        out = {"event": event.pop("event", "stage")}
        if self.iteration is not None or "iter" in event:
            out["iter"] = event.pop("iter", self.iteration)
        out.update(event)
        with self._lock:
            if self.sink is None:
                self.events.append(out)
            else:
                self.sink(out)
