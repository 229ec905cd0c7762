"""An in-process stand-in for `workloads.comm.Comm` for executor tests without processes: every
rank in a thread, send/recv matched by (src, dst, tag) as Gloo matches them, each send and the
order of posts recorded. Not a mock of Gloo's transport: it checks what an executor posts and
computes, not how the bytes travel (tests/parallel and tests/emulation run the real thing)."""
from __future__ import annotations

import threading

from workloads.comm import Comm


class ThreadedComm:
    """One rank's end: `sends` (dst, nic, tag, bytes), `posted` ("recv" | "send", tag) in order,
    and `log`, the same posts with each receive's completed wait ("waited", tag) in between.
    Variable-size messages are Comm's own framing over this send/recv."""

    VAR_DATA_TAG = Comm.VAR_DATA_TAG
    send_var, recv_vars, exchange_vars = Comm.send_var, Comm.recv_vars, Comm.exchange_vars

    def __init__(self, rank: int, box: dict, cond: threading.Condition):
        self.rank, self.box, self.cond = rank, box, cond
        self.sends, self.posted, self.events, self.log = [], [], [], []

    def send(self, tensor, dst, nic=0, tag=0):
        self.posted.append(("send", tag))
        self.log.append(("send", tag))
        with self.cond:
            self.box[(self.rank, dst, tag)] = tensor.clone()
            self.cond.notify_all()
        self.sends.append((dst, nic, tag, tensor.numel() * tensor.element_size()))
        return Work(lambda: None)

    def recv(self, tensor, src, nic=0, tag=0):
        self.posted.append(("recv", tag))
        self.log.append(("recv", tag))

        def wait():
            with self.cond:
                assert self.cond.wait_for(lambda: (src, self.rank, tag) in self.box, 20), (src, self.rank, tag)
                tensor.copy_(self.box.pop((src, self.rank, tag)))
            self.log.append(("waited", tag))
        return Work(wait)

    def record(self, **event):
        self.events.append(event)


class Work:
    def __init__(self, wait):
        self.wait = wait


def threaded_comms(ranks: int) -> tuple[list, dict]:
    """(one ThreadedComm per rank, their shared mailbox: empty once every message was received)."""
    box, cond = {}, threading.Condition()
    return [ThreadedComm(r, box, cond) for r in range(ranks)], box


def run_ranks(execute, plan: dict, comms: list, grads: list) -> list:
    """`execute(plan, comms[r], grads[r].clone())` for every rank, each in a thread; the outputs.
    Fails with every rank's exception if any raised."""
    out, errors = [None] * len(comms), []

    def rank(r):
        try:
            out[r] = execute(plan, comms[r], grads[r].clone())
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(len(comms))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    return out
