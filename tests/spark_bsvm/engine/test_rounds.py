"""The coordinator's admission of connections, without Spark: tasks get in through a flood of strangers,
and no stranger is ever waited for."""

import socket
import struct
import threading

import pytest

from spark_bsvm.engine import rounds, wire

SECRET = "5e" * 32


@pytest.fixture
def coordinator():
    coordinator = rounds.Coordinator("127.0.0.1", [0, 1], SECRET)
    yield coordinator
    coordinator.close()


def still_open(sock):
    """Whether the other side of ``sock`` (the coordinator) has neither closed it nor sent anything on it but
    the proof of its secret (read here, if it is waiting)."""
    sock.setblocking(False)
    try:
        sent = sock.recv(wire.PROOF_SIZE + 1)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return len(sent) == wire.PROOF_SIZE and still_open(sock)


def _task(address, pid, secret=SECRET):
    """A task's connection whose hello goes out before the coordinator's proof arrives (the coordinator runs in
    this thread: a task waiting for the proof first would wait for ever); ``_proven`` reads that proof later."""
    sock = socket.create_connection(address)
    sock.sendall(wire.HELLO.pack(secret.encode(), pid))
    return sock


def _proven(sock, secret=SECRET):
    """``sock``, after reading the coordinator's proof of ``secret`` from it (the first bytes it sent)."""
    assert wire._recv_exactly(sock, wire.PROOF_SIZE) == wire.proof(secret)
    return sock


def test_tasks_are_admitted_through_more_strangers_than_are_held(coordinator):
    """Strangers beyond ``max_newcomers`` push out the oldest ones; the tasks, whose hello comes with their
    connection, get in among them.  The strangers are accepted while the coordinator waits (a thread
    connects them): more than the listen backlog holds."""
    address, flood = coordinator.address, 3 * coordinator.max_newcomers
    strangers, tasks = [], []

    def connect():
        strangers.extend(socket.create_connection(address) for _ in range(flood))
        tasks.append(_task(address, 0))
        strangers.extend(socket.create_connection(address) for _ in range(10))
        tasks.append(_task(address, 1))  # the last to connect: all strangers are accepted when it is

    connecting = threading.Thread(target=connect)
    connecting.start()
    coordinator.accept_all(timeout=60)
    connecting.join()
    assert sorted(coordinator.conns) == [0, 1]
    held = [sock for sock in strangers if still_open(sock)]
    assert len(held) == len(coordinator.newcomers) <= coordinator.max_newcomers  # idle, not yet timed out
    assert coordinator.refused == {"too many connections waited for their hello at once": flood + 10 - len(held)}
    for sock in strangers + tasks:
        sock.close()


def test_a_hello_in_pieces_is_read_as_it_arrives_and_bad_hellos_are_refused(coordinator, caplog):
    address = coordinator.address
    wrong = _task(address, 0, secret="0" * 64)
    unknown = _task(address, 7)
    slow = socket.create_connection(address)
    hello = wire.HELLO.pack(SECRET.encode(), 1)
    slow.sendall(hello[:10])
    coordinator._poll([], timeout=0.1)
    assert coordinator.arrived == {} and len(coordinator.newcomers) == 1  # the slow one's first bytes
    slow.sendall(hello[10:])
    task = _task(address, 0)
    coordinator.accept_all(timeout=60)
    assert sorted(coordinator.conns) == [0, 1] and not still_open(wrong) and not still_open(unknown)
    assert coordinator.refused == {"it presented a wrong secret": 1, "it named a partition this fit does not have": 1}
    assert "refused a connection to the spark-bsvm coordinator: it presented a wrong secret" in caplog.text
    for sock in (wrong, unknown, slow, task):
        sock.close()


def test_a_stranger_silent_past_its_deadline_is_dropped_at_the_next_poll(coordinator, monkeypatch):
    monkeypatch.setattr(rounds, "HELLO_TIMEOUT", 0.0)
    silent = socket.create_connection(coordinator.address)
    for _ in range(3):  # accepted by one poll, dropped by a later one
        coordinator._poll([], timeout=0.1)
    assert coordinator.newcomers == {} and not still_open(silent)
    assert coordinator.refused == {"it sent no complete hello within 0s": 1}
    silent.close()


def test_a_round_is_timed_and_the_tasks_work_seconds_leave_their_answers(coordinator):
    tasks = [_task(coordinator.address, pid) for pid in (0, 1)]
    coordinator.accept_all(timeout=60)
    tasks = [_proven(sock) for sock in tasks]
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
    tasks = [_task(coordinator.address, pid) for pid in (0, 1)]
    coordinator.accept_all(timeout=60)
    tasks = [_proven(sock) for sock in tasks]
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


def test_a_task_greets_only_a_peer_that_proves_the_fits_secret(coordinator):
    """``wire.greet``: the task sends its secret only after the peer's proof of it; another fit's coordinator
    and a peer that closes at once are refused before the secret leaves, the fit's own coordinator admits it."""
    other = rounds.Coordinator("127.0.0.1", [0, 1], "0" * 64)
    sock = socket.create_connection(other.address, timeout=10)
    other._poll([], timeout=5)  # accepted: its proof goes out
    with pytest.raises(PermissionError, match="did not prove it knows the fit's secret"):
        wire.greet(sock, SECRET, 0)
    sock.close()
    other._poll([], timeout=5)
    assert other.arrived == {} and other.refused == {"it closed before sending the secret": 1}
    other.close()
    with socket.create_server(("127.0.0.1", 0)) as closing:
        sock = socket.create_connection(closing.getsockname()[:2], timeout=10)
        closing.accept()[0].close()
        with pytest.raises(ConnectionError, match="the peer closed the connection"):
            wire.greet(sock, SECRET, 0)
        sock.close()
    tasks = [socket.create_connection(coordinator.address, timeout=10) for _ in range(2)]
    greeting = [threading.Thread(target=wire.greet, args=(sock, SECRET, pid)) for pid, sock in enumerate(tasks)]
    for thread in greeting:
        thread.start()
    coordinator.accept_all(timeout=60)
    for thread in greeting:
        thread.join()
    assert sorted(coordinator.conns) == [0, 1] and coordinator.refused == {}
    for sock in tasks:
        sock.close()
