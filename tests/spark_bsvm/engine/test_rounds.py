"""The coordinator's admission of connections, without Spark: tasks get in through a flood of strangers,
and no stranger is ever waited for."""

import contextlib
import socket
import struct
import threading

import pytest

from spark_bsvm.engine import rounds, wire
from tests.conftest import wait_until

SECRET = "5e" * 32


@pytest.fixture
def coordinator():
    coordinator = rounds.Coordinator("127.0.0.1", [0, 1], SECRET)
    yield coordinator
    coordinator.close()


def still_open(sock):
    """Whether the other side of ``sock`` (the coordinator) has neither closed it nor sent anything on it but
    its greeting (read here, if it is waiting)."""
    sock.setblocking(False)
    try:
        sent = sock.recv(wire.GREETING.size + 1)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return len(sent) == wire.GREETING.size and still_open(sock)


def poll_until(coordinator, done):
    """``wait_until(done)`` polling ``coordinator`` in this thread, as its fit's driver does."""
    return wait_until(done, step=lambda: coordinator._poll([], timeout=0.05))


class _Task:
    """A task's connection to ``address`` that goes through the handshake (``wire.greet``) in a thread of its own,
    while the coordinator polls in the test's: ``sock``, and once ``done``, the handshake's ``error`` or None."""

    def __init__(self, address, pid, secret=SECRET):
        self.sock, self.error = socket.create_connection(address, timeout=30), None
        self.thread = threading.Thread(target=self._greet, args=(secret, pid))
        self.thread.start()

    def _greet(self, secret, pid):
        try:
            wire.greet(self.sock, secret, pid)
        except OSError as exc:
            self.error = exc

    def done(self):
        self.thread.join(30)
        return self


def _tasks(coordinator, pids):
    """The sockets of tasks of ``pids`` admitted by ``coordinator`` (``accept_all``)."""
    tasks = [_Task(coordinator.address, pid) for pid in pids]
    coordinator.accept_all(timeout=60)
    assert all(task.done().error is None for task in tasks)
    return [task.sock for task in tasks]


def test_tasks_are_admitted_through_more_strangers_than_are_held(coordinator, monkeypatch):
    """Strangers beyond ``max_newcomers`` push out the oldest ones; the tasks, whose hello comes once the greeting
    reaches them, get in among them.  The strangers are accepted while the coordinator waits (a thread
    connects them): more than the listen backlog holds, so some wait for their connection's retries, seconds
    on a loaded machine, and no hello's deadline falls within the test."""
    monkeypatch.setattr(rounds, "HELLO_TIMEOUT", 600.0)
    address, flood = coordinator.address, 3 * coordinator.max_newcomers
    strangers, tasks = [], []

    def connect():
        strangers.extend(socket.create_connection(address) for _ in range(flood))
        tasks.append(_Task(address, 0))
        strangers.extend(socket.create_connection(address) for _ in range(10))
        tasks.append(_Task(address, 1))  # the last to connect: all strangers are accepted when it is

    connecting = threading.Thread(target=connect)
    connecting.start()
    coordinator.accept_all(timeout=60)
    connecting.join()
    assert sorted(coordinator.conns) == [0, 1]
    # the closes of the strangers pushed out last may still be on their way
    assert poll_until(coordinator, lambda: sum(map(still_open, strangers)) == len(coordinator.newcomers))
    held = [sock for sock in strangers if still_open(sock)]
    assert len(held) == len(coordinator.newcomers) <= coordinator.max_newcomers  # idle, not yet timed out
    assert coordinator.refused == {"too many connections waited for their hello at once": flood + 10 - len(held)}
    assert all(task.done().error is None for task in tasks)
    for sock in strangers + [task.sock for task in tasks]:
        sock.close()


def test_a_hello_in_pieces_is_read_as_it_arrives_and_bad_hellos_are_refused(coordinator, caplog):
    address = coordinator.address
    slow = socket.create_connection(address, timeout=30)
    assert poll_until(coordinator, lambda: coordinator.newcomers)  # accepted: its greeting goes out
    tag, greeting_nonce, _ = wire.GREETING.unpack(wire._recv_exactly(slow, wire.GREETING.size))
    nonce = bytes(range(16))
    hello = wire.HELLO.pack(tag, nonce, 1, wire._task_mac(SECRET, greeting_nonce, nonce, 1))
    slow.sendall(hello[:10])
    coordinator._poll([], timeout=0.1)
    assert coordinator.arrived == {} and len(coordinator.newcomers) == 1  # the slow one's first bytes
    slow.sendall(hello[10:])
    # a hello of a wrong secret, from a peer that passed over the fit's mark in the greeting
    wrong = socket.create_connection(address, timeout=30)
    unknown, task = _Task(address, 7), _Task(address, 0)
    coordinator.accept_all(timeout=60)
    wrong.sendall(wire.HELLO.pack(wire.HANDSHAKE, nonce, 0, bytes(32)))
    poll_until(coordinator, lambda: sum(coordinator.refused.values()) >= 2)
    assert sorted(coordinator.conns) == [0, 1] and task.done().error is None
    assert wire._recv_exactly(slow, wire.ANSWER_SIZE) == wire.answer(SECRET, greeting_nonce, nonce, address[1])
    assert isinstance(unknown.done().error, ConnectionError)
    # the close of a connection counted as refused may still be on its way
    assert poll_until(coordinator, lambda: not still_open(wrong))
    assert coordinator.refused == {"it presented a wrong secret": 1, "it named a partition this fit does not have": 1}
    assert "refused a connection to the spark-bsvm coordinator: it presented a wrong secret" in caplog.text
    for sock in (wrong, unknown.sock, slow, task.sock):
        sock.close()


def test_a_stranger_silent_past_its_deadline_is_dropped_at_the_next_poll(coordinator, monkeypatch):
    monkeypatch.setattr(rounds, "HELLO_TIMEOUT", 0.0)
    silent = socket.create_connection(coordinator.address)
    for _ in range(3):  # accepted by one poll, dropped by a later one
        coordinator._poll([], timeout=0.1)
    assert coordinator.newcomers == {} and poll_until(coordinator, lambda: not still_open(silent))  # its close sent
    assert coordinator.refused == {"it sent no complete hello within 0s": 1}
    silent.close()


def test_a_round_is_timed_and_the_tasks_work_seconds_leave_their_answers(coordinator):
    tasks = _tasks(coordinator, (0, 1))
    for round_number in (1, 2):
        coordinator.send_all({"function": "f", "round": round_number})
        for pid, sock in enumerate(tasks):
            assert wire.recv(sock) == {"function": "f", "round": round_number}
            wire.send(sock, {"pid": pid, wire.WORK: 0.25 * (pid + 1) * round_number})
        assert coordinator.gather() == {0: {"pid": 0}, 1: {"pid": 1}}
    (seconds, slowest, mean), second = coordinator.times.rounds
    assert (slowest, mean) == (0.5, 0.375) and seconds > 0 and second[1:] == (1.0, 0.75)
    assert coordinator.times.totals(first=1) == (1, second[0], 1.0, 0.75)
    assert rounds.RoundTimes().totals() == (0, 0.0, 0.0, 0.0)
    for sock in tasks:
        sock.close()


def test_an_answer_from_another_spark_bsvm_version_fails_the_round_saying_so(coordinator):
    tasks = _tasks(coordinator, (0, 1))
    coordinator.send_all({"function": "f"})
    wire.send(tasks[0], {"pid": 0, wire.WORK: 0.0})
    # the first wire format, as an executor left with an older spark-bsvm would answer
    head = b'{"pid": {"kind": "json", "value": 1}, "__work__": {"kind": "json", "value": 0.0}}'
    payload = struct.pack(">Q", len(head)) + head
    tasks[1].sendall(struct.pack(">Q", len(payload)) + payload)
    with pytest.raises(ValueError, match="the driver and the executors run different spark-bsvm versions"):
        coordinator.gather()
    for sock in tasks:
        sock.close()


def _relay(source, target):
    """Copy what ``source`` sends to ``target`` until either closes; then end both (a shutdown, which wakes the
    other direction's thread from its ``recv``, where a close would not)."""
    try:
        while chunk := source.recv(4096):
            target.sendall(chunk)
    except OSError:
        pass
    for sock in (source, target):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def test_the_handshake_admits_the_fits_tasks_and_shows_them_only_the_fits_coordinator(coordinator, caplog):
    """``wire.greet``: the task leaves another fit's coordinator at its greeting (its fit's mark), before a hello,
    and that coordinator warns of nothing; a peer that closes or greets otherwise is left, a relay to the
    coordinator from another port (a service holding a port tried first) is refused by the task, whose hello
    shows nothing of the secret to any of them; the fit's own coordinator admits its tasks."""
    other = rounds.Coordinator("127.0.0.1", [0, 1], "0" * 64)
    stranger = _Task(other.address, 0)
    assert poll_until(other, lambda: not stranger.thread.is_alive())
    assert isinstance(stranger.done().error, wire.OtherFit)
    stranger.sock.close()  # as a task leaves such a coordinator (``hosted.find_coordinating_task``)
    assert poll_until(other, lambda: not other.newcomers)
    assert other.refused == {} and other.left == 1 and "refused" not in caplog.text
    other.close()
    for answer in (b"", b"HTTP/1.1 400 Bad Request\r\n\r\n"):
        with socket.create_server(("127.0.0.1", 0)) as server:
            sock = socket.create_connection(server.getsockname()[:2], timeout=10)
            conn = server.accept()[0]
            conn.sendall(answer)
            conn.close()
            with pytest.raises(ConnectionError, match="closed the connection|does not greet as a spark-bsvm"):
                wire.greet(sock, SECRET, 0)
            sock.close()
    relayed_to = rounds.Coordinator("127.0.0.1", [1], SECRET)
    with socket.create_server(("127.0.0.1", 0)) as relay_server:
        relayed = _Task(relay_server.getsockname()[:2], 1)
        inbound = relay_server.accept()[0]
        outbound = socket.create_connection(relayed_to.address)
        relays = [threading.Thread(target=_relay, args=pair) for pair in ((inbound, outbound), (outbound, inbound))]
        for thread in relays:
            thread.start()
        assert poll_until(relayed_to, lambda: not relayed.thread.is_alive())
        assert isinstance(relayed.done().error, PermissionError)  # the answer names the coordinator's own port
        relayed.sock.close()
        for thread in relays:
            thread.join(10)
        inbound.close()
        outbound.close()
    relayed_to.close()
    _tasks(coordinator, (0, 1))
    assert sorted(coordinator.conns) == [0, 1] and coordinator.refused == {}


def test_a_coordinator_of_another_version_is_named_as_such(coordinator):
    """A greeting of another spark-bsvm handshake (the first, with no fit's mark: 4 bytes shorter than this
    one's) ends the task's handshake with the versions' names and the fix, not with a wait for bytes that never
    come; a hello of another version is refused saying so."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        sock = socket.create_connection(server.getsockname()[:2], timeout=10)
        conn = server.accept()[0]
        conn.sendall(b"BSV1" + bytes(16))  # and waits for the task's hello, as that version does
        with pytest.raises(wire.OtherVersion, match=r"^it speaks the handshake 'BSV1' of another spark-bsvm version, "
                                                     r"where this task speaks 'BSV2': the driver and the executors "
                                                     r"run different spark-bsvm versions; install the driver's "
                                                     r"version on every node, or ship it with --py-files"):
            wire.greet(sock, SECRET, 0)
        sock.close()
        conn.close()
    newer = socket.create_connection(coordinator.address, timeout=10)
    newer.sendall(b"BSV3" + bytes(wire.HELLO.size - 4))
    poll_until(coordinator, lambda: coordinator.refused)
    assert coordinator.refused == {"it spoke another handshake (another spark-bsvm version)": 1}
    newer.close()


def test_a_hello_cut_short_by_its_close_is_refused_and_a_close_before_any_hello_only_counted(coordinator, caplog):
    """A peer that closes with part of a hello sent presented something: refused and warned of; one that closes
    before any (a task that read another fit's mark in the greeting) is counted in ``left``, at debug level."""
    cut, left = (socket.create_connection(coordinator.address, timeout=30) for _ in range(2))
    cut.sendall(wire.HELLO.pack(wire.HANDSHAKE, bytes(16), 0, bytes(32))[:20])
    for sock in (cut, left):
        sock.close()
    poll_until(coordinator, lambda: coordinator.refused and coordinator.left)
    assert coordinator.refused == {"it closed before its hello was complete": 1} and coordinator.left == 1
    assert caplog.text.count("refused a connection") == 1
