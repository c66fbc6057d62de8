"""How the tasks of a fit coordinated on the executors find the coordinating task without a barrier sync,
without Spark: the ports every task works out alike, a port held by another service or by another fit's
coordinator passed over with the secret kept, and a coordinator that starts listening after the tasks look."""

import contextlib
import re
import socket
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.model import KernelExpansion
from core.svc import fit_csvc
from core.synthetic import make_rings
from spark_bsvm.engine import hosted
from spark_bsvm.engine.stage import HostedFit, TaskSpec
from tests.conftest import wait_until

SECRET = "a7" * 32


class _Context:
    """What ``hosted.meeting_place`` reads of a ``BarrierTaskContext`` (``executor``: partition 0's, as Spark
    writes its address)."""

    def __init__(self, stage, executor="127.0.0.1:40001"):
        self.stage, self.executor = stage, executor

    def stageId(self):
        return self.stage

    def getTaskInfos(self):
        return [type("TaskInfo", (), {"address": self.executor})()]


class _Listener:
    """A server on ``port`` of 127.0.0.1 that keeps what each connection sends it, answering with ``answer``
    (None: nothing, the connection left open until the server closes)."""

    def __init__(self, port, answer=None):
        self.server = socket.create_server(("127.0.0.1", port))
        self.server.settimeout(0.05)
        self.answer, self.received, self.conns, self.stopped = answer, [], [], threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopped.is_set():
            try:
                conn = self.server.accept()[0]
            except TimeoutError:
                continue
            self.conns.append(conn)
            if self.answer is not None:
                conn.sendall(self.answer)
            conn.settimeout(0.5)
            try:
                self.received.append(conn.recv(1024))
            except OSError:
                pass

    def close(self):
        self.stopped.set()
        self.thread.join()
        self.server.close()
        for conn in self.conns:
            conn.close()


def test_every_task_of_a_stage_works_out_the_same_place_and_a_new_stage_another():
    first = hosted.meeting_place(_Context(7), SECRET)
    assert hosted.meeting_place(_Context(7), SECRET) == first
    host, ports, secret = first
    assert host == "127.0.0.1" and secret != SECRET and len(secret) == 64
    assert len(ports) == len(set(ports)) >= hosted.MEETING_CANDIDATES - 1
    assert all(port in hosted.MEETING_PORTS for port in ports)
    again, other_fit = hosted.meeting_place(_Context(8), SECRET), hosted.meeting_place(_Context(7), "b8" * 32)
    for other in (again, other_fit):
        assert other[1] != ports and other[2] != secret


@pytest.mark.parametrize("holder", ["silent", "junk", "another fit's coordinator"])
def test_ports_held_by_others_are_passed_over_and_never_hear_the_secret(holder, monkeypatch):
    """The first two ports of the fit's place are held (by a service that answers nothing, by one that answers
    junk, or by another fit's coordinator): the coordinating task listens on the third, and a task finds it
    there, having sent nothing to the first two."""
    monkeypatch.setattr(hosted, "GREETING_TIMEOUT", 0.3)
    host, ports, secret = hosted.meeting_place(_Context(3), SECRET)
    if holder == "another fit's coordinator":
        others = [hosted.Coordinator(host, [1], "c9" * 32, port=port) for port in ports[:2]]
    else:
        others = [_Listener(port, answer=None if holder == "silent" else b"x" * 40) for port in ports[:2]]
    coordinator = hosted._listen(host, ports, [1], secret)
    found = []
    looking = threading.Thread(target=lambda: found.append(hosted.find_coordinating_task(host, ports, secret, 1)))
    looking.start()
    while looking.is_alive():  # the coordinators accept connections and read hellos as they poll
        for other in others:
            if isinstance(other, hosted.Coordinator):
                other._poll([], timeout=0.01)
        coordinator._poll([], timeout=0.01)
    coordinator.accept_all(timeout=1)
    (sock, problem), = found
    assert problem is None and sock.getpeername()[1] == coordinator.address[1] == ports[2]
    assert list(coordinator.conns) == [1]
    if holder == "another fit's coordinator":  # left at its greeting: nothing to refuse, nothing to warn of
        def poll_others():
            for other in others:
                other._poll([], timeout=0.01)

        # the task may have left after these coordinators' last poll
        wait_until(lambda: all(other.left >= 1 for other in others), 5, step=poll_others)
        assert all(other.arrived == {} and not other.conns and other.refused == {} and other.left >= 1
                   for other in others)
    else:  # each was tried: the task may have left a connection in a listener's queue, not yet accepted
        assert wait_until(lambda: all(other.conns for other in others), 5)
    sock.close()
    coordinator.close()
    for other in others:
        other.close()  # the listeners' threads end: what they received is complete
    if holder != "another fit's coordinator":
        assert all(secret.encode() not in b"".join(other.received) for other in others)


def test_a_task_that_looks_before_the_coordinator_listens_finds_it(monkeypatch):
    """Refused, the task looks on past ``CONNECT_TIMEOUT`` (the coordinating task's Python worker may start
    later than its own), up to ``MEETING_TIMEOUT``."""
    monkeypatch.setattr(hosted, "CONNECT_TIMEOUT", 0.1)
    host, ports, secret = hosted.meeting_place(_Context(4), SECRET)
    found = []
    looking = threading.Thread(target=lambda: found.append(hosted.find_coordinating_task(host, ports, secret, 1)))
    looking.start()
    time.sleep(0.5)  # the task has tried every port a few times, refused
    coordinator = hosted._listen(host, ports, [1], secret)
    coordinator.accept_all(timeout=10)
    looking.join()
    (sock, problem), = found
    assert problem is None and list(coordinator.conns) == [1] and coordinator.address[1] == ports[0]
    sock.close()
    coordinator.close()


def test_a_task_that_finds_no_coordinator_gives_up_with_the_last_error():
    host, ports, secret = hosted.meeting_place(_Context(5), SECRET)
    start = time.monotonic()
    sock, problem = hosted.find_coordinating_task(host, ports, secret, 1, meeting_timeout=0.3)
    assert sock is None and isinstance(problem, ConnectionRefusedError) and 0.3 < time.monotonic() - start < 5


def test_a_coordinating_task_with_every_port_held_says_which():
    host, ports, secret = hosted.meeting_place(_Context(6), SECRET)
    held = []
    for port in ports:
        with contextlib.suppress(OSError):  # a port something else holds is held all the same
            held.append(socket.create_server((host, port)))
    with pytest.raises(OSError, match=rf"cannot listen on 127.0.0.1 at any of ports {ports[0]}, .*{ports[-1]} "
                                      r"\(the last: .*in use.*\)$"):
        hosted._listen(host, ports, [1], secret)
    for server in held:
        server.close()


def test_a_pass_over_silent_ports_keeps_to_the_meeting_s_time(monkeypatch):
    """Every port held by a service that takes connections and never answers: each try waits at most what is
    left of the meeting's time, where each waited ``GREETING_TIMEOUT`` (2 s, 16 s a pass over 8 ports; 10 s
    here, so that a loaded machine's delays cannot be mistaken for it)."""
    monkeypatch.setattr(hosted, "GREETING_TIMEOUT", 10)
    host, ports, secret = hosted.meeting_place(_Context(9), SECRET)
    silent = []
    for port in ports:
        with contextlib.suppress(OSError):  # a port something else holds is silent to this fit all the same
            silent.append(socket.create_server((host, port)))  # listening, never accepting: connections wait
    start = time.monotonic()
    sock, problem = hosted.find_coordinating_task(host, ports, secret, 1, meeting_timeout=0.5)
    assert sock is None and isinstance(problem, TimeoutError) and time.monotonic() - start < 5
    for server in silent:
        server.close()


def test_a_coordinating_task_on_an_ipv6_executor_is_found_there():
    """Spark writes an IPv6 executor's address in brackets ([::1]:port): the host to listen on and dial is
    the address without them."""
    host, ports, secret = hosted.meeting_place(_Context(10, executor="[::1]:40001"), SECRET)
    assert host == "::1"
    coordinator = hosted._listen(host, ports, [1], secret)
    found = []
    looking = threading.Thread(target=lambda: found.append(hosted.find_coordinating_task(host, ports, secret, 1)))
    looking.start()
    coordinator.accept_all(timeout=10)
    looking.join()
    (sock, problem), = found
    assert problem is None and sock.getpeername()[0] == "::1" and list(coordinator.conns) == [1]
    sock.close()
    coordinator.close()


class _Clock:
    """``hosted``'s clock, moved by its pauses alone: its meeting time runs out at the start of a pass."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


@pytest.mark.parametrize("last", ["a refusing port", "the other version's"])
def test_a_coordinator_of_another_version_is_named_with_its_port_beside_the_last_ports_error(last, monkeypatch):
    """Another spark-bsvm version's coordinator on one port, nothing on the others: the task gives up with the
    last port's error and what that coordinator said on its port (this fit's, from an executor of another
    version, or another application's: either may be why), or with that alone when its port was the last."""
    monkeypatch.setattr(hosted, "time", _Clock())
    host, ports, secret = hosted.meeting_place(_Context(11), SECRET)
    older = _Listener(ports[0], answer=b"BSV1" + bytes(16))
    order = ports if last == "a refusing port" else [*ports[1:], ports[0]]
    sock, problem = hosted.find_coordinating_task(host, order, secret, 1, meeting_timeout=2.0)
    beside = r"\[Errno 111\] Connection refused; " if last == "a refusing port" else ""
    assert sock is None and re.fullmatch(
        rf"{beside}on port {ports[0]} a coordinator answered, and it speaks the handshake 'BSV1' of another "
        r"spark-bsvm version, where this task speaks 'BSV2': the driver and the executors run different "
        r"spark-bsvm versions; .*", str(problem))
    older.close()


def test_a_fit_of_one_partition_takes_no_port_and_gives_the_local_model(monkeypatch):
    """The coordinating task of a one-partition fit has no task to meet: it neither works out a meeting place
    nor listens, and fits its rows as ``LocalEngine`` does."""
    from tests.spark_bsvm.engine.test_blocks import _arrow_vectors

    def no_port(*args):
        raise AssertionError("a fit of one partition looked for a port")

    monkeypatch.setattr(hosted, "meeting_place", no_port)
    monkeypatch.setattr(hosted, "_listen", no_port)
    X, y = make_rings(120, 4, seed=5)
    batch = pa.RecordBatch.from_arrays([_arrow_vectors(X, dense_rows=range(len(X))), pa.array(y)],
                                       ["features", "label"])
    arguments = dict(C=1.0, kernel=KernelSpec("rbf", gamma=0.5))
    spec = TaskSpec(SECRET, n_features=4, classes=[-1.0, 1.0], has_weight=False, n_partitions=1,
                    n_examples=len(X), scale_gamma=1.0, fit=HostedFit(fit_csvc, arguments), dense=True)
    row = hosted.host_fit(_Context(12), iter([batch]), spec)
    assert "error" not in row and row["served"] > 1
    model, local = KernelExpansion.from_bytes(row["model"]), fit_csvc(LocalEngine(X, y, n_partitions=1), **arguments)
    np.testing.assert_array_equal(model.support_vectors, local.support_vectors)
    np.testing.assert_array_equal(model.coef, local.coef)
