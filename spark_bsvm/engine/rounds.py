"""The coordinator's side of rounds: a listener that admits a fit's tasks, sends them requests and
gathers their answers.  Spark-free, so that it runs on the driver (``SparkEngine``) and inside the
barrier task that coordinates a fit on the executors (``spark_bsvm.engine.hosted``) alike.

Security: the listener serves only connections whose hello shows they know the per-fit secret, and shows each
task it admits that it knows it too, the secret itself never sent (``wire.greet``); nothing received is ever
unpickled (``spark_bsvm.engine.wire``).

Admission never holds up a round.  The listener and the connections that have not yet sent their
hello ("newcomers") are polled in the same ``select`` as the tasks' answers and read only as far as
their bytes have arrived: a newcomer has ``HELLO_TIMEOUT`` seconds to complete its hello, at most
``len(partitions) + MAX_STRANGERS`` newcomers are held at once (the oldest gives way to the next), and
the listen backlog is as long.  A task sends its hello as soon as the coordinator's greeting reaches it, so it
is admitted at the next poll; a flood of idle or slow connections costs a round a few system calls, never a
wait.
"""

import collections
import logging
import select
import socket
import time

from spark_bsvm.engine import wire

log = logging.getLogger("spark_bsvm")

ACCEPT_TIMEOUT = 600.0  # seconds to wait for the tasks that have not connected yet
CONNECT_TIMEOUT = 10.0  # seconds a task tries to open its connection to the coordinator
HELLO_TIMEOUT = 5.0  # seconds a new connection has to present the secret and its partition id
MAX_STRANGERS = 64  # newcomers held at once beyond one per task
CHECK_INTERVAL = 1.0  # seconds between calls of the coordinator's ``check`` while it waits


class LostTask(Exception):
    """A task's connection broke, or a task of a restarted stage connected: the current tasks are gone
    and the round must be sent again (the new tasks wait in ``Coordinator.arrived``)."""


class RoundTimes:
    """Where a fit's rounds spent their time, as the coordinator saw them: for each round, the seconds from its
    request to its last answer, its slowest task's seconds in the partition function and the tasks' mean of
    those (each task reports its own: ``wire.WORK``).

    A round lasts at least as long as its slowest task works; the rest is the wire (the frames and the three
    processes scheduled in turn).  The slowest task minus the mean is what the round waited on partitions of
    uneven work: a task's share of the rows does not fix its share of the work (C-SVC's shrinking keeps more
    of one partition's rows active than of another's), and each task works on its own cores (one with
    ``spark.task.cpus`` = 1) while the others wait.  The driver's own work between rounds is not counted,
    nor, in a fit coordinated on the executors, the coordinating task's own partition.
    """

    def __init__(self):
        self.rounds = []  # (seconds, slowest task's work, the tasks' mean work) per round

    def add(self, seconds, work):
        """Record a round of ``seconds`` whose tasks worked ``work`` seconds (a list, one per task)."""
        self.rounds.append((seconds, max(work), sum(work) / len(work)))

    def totals(self, first=0):
        """(rounds, seconds, slowest, mean) summed over the rounds from the ``first``-th on (the first round
        also waits for the tasks' blocks)."""
        kept = self.rounds[first:]
        return (len(kept), *(float(sum(values)) for values in zip(*kept))) if kept else (0, 0.0, 0.0, 0.0)


class _Newcomer:
    """A connection that has not sent its whole hello yet: its deadline, the nonce of the greeting it was sent
    and the bytes it sent so far."""

    __slots__ = ("deadline", "nonce", "hello")

    def __init__(self, deadline, nonce):
        self.deadline, self.nonce = deadline, nonce
        self.hello = b""


class Coordinator:
    """Listens on ``host`` (at ``port``; 0: a port the system chooses) and talks to the tasks of
    ``partitions`` (their partition ids).

    ``check`` is called about once a second while waiting; it raises to end the wait (the Spark stage
    has failed, say).  ``conns`` holds the tasks that serve rounds, ``arrived`` the tasks admitted
    since (of a restarted stage), ``refused`` counts the connections refused, by reason, ``left`` those that
    closed before their hello, ``times`` the ``RoundTimes`` of the rounds gathered.
    """

    def __init__(self, host, partitions, secret, check=None, port=0):
        self.partitions = sorted(partitions)
        self.max_newcomers = len(self.partitions) + MAX_STRANGERS
        family = socket.AF_INET6 if ":" in host else socket.AF_INET  # an IPv6 address, or IPv4's or a name
        self.listener = socket.create_server((host, port), family=family, backlog=self.max_newcomers)
        self.listener.setblocking(False)
        self.secret = secret
        self.check = check or (lambda: None)
        self.conns = {}
        self.arrived = {}
        self.newcomers = {}  # {socket: _Newcomer}, oldest first
        self.refused = collections.Counter()
        self.left = 0  # connections that closed before their hello
        self.times = RoundTimes()
        self._sent = None  # when the current round's request went out
        self._next_check = time.monotonic() + CHECK_INTERVAL

    @property
    def address(self):
        """(host, port) the tasks connect to."""
        return self.listener.getsockname()[:2]

    def _refuse(self, conn, reason):
        del self.newcomers[conn]
        conn.close()
        self.refused[reason] += 1
        if self.refused[reason] == 1:  # once per reason and fit: a flood must not flood the log too
            log.warning("refused a connection to the spark-bsvm coordinator: %s (further ones are counted and "
                        "reported when the fit ends)", reason)

    def _drop(self, conn):
        """Close ``conn``, which closed before its hello: it presented nothing to refuse (a task of another fit
        that read this fit's mark in the greeting and left, when two fits coordinated on the executors share a
        port of their meeting places; a port scan), so it is only counted, in ``left``."""
        del self.newcomers[conn]
        conn.close()
        self.left += 1
        log.debug("a connection to the spark-bsvm coordinator closed before its hello")

    def _read_hello(self, conn):
        """Read what has arrived of ``conn``'s hello, without waiting; admit or refuse it once complete."""
        newcomer = self.newcomers[conn]
        try:
            chunk = conn.recv(wire.HELLO.size - len(newcomer.hello))
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:  # a peer that sent part of a hello presented something: refused as such
            if newcomer.hello:
                self._refuse(conn, "it closed before its hello was complete")
            else:
                self._drop(conn)
            return
        newcomer.hello += chunk
        if len(newcomer.hello) < wire.HELLO.size:
            return
        try:
            pid, nonce = wire.read_hello(newcomer.hello, self.secret, newcomer.nonce)
        except PermissionError as exc:
            self._refuse(conn, str(exc))
            return
        if pid not in self.partitions:
            self._refuse(conn, "it named a partition this fit does not have")
            return
        try:  # a send buffer that took the greeting and nothing since holds the answer: this never waits
            conn.send(wire.answer(self.secret, newcomer.nonce, nonce, self.address[1]))
        except OSError:
            self._refuse(conn, "it closed before the coordinator's answer")
            return
        del self.newcomers[conn]
        conn.setblocking(True)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if pid in self.arrived:
            self.arrived[pid].close()
        self.arrived[pid] = conn

    def _accept_newcomers(self):
        """Accept what the listen backlog holds (a bounded bite) and read the hellos that came with it."""
        for _ in range(self.max_newcomers):
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # the connection was reset before it was accepted, say
                log.debug("accepting a connection failed: %s", exc)
                return
            conn.setblocking(False)
            if len(self.newcomers) >= self.max_newcomers:
                self._refuse(next(iter(self.newcomers)), "too many connections waited for their hello at once")
            greeting, nonce = wire.greeting(self.secret)
            self.newcomers[conn] = _Newcomer(time.monotonic() + HELLO_TIMEOUT, nonce)
            try:  # a fresh connection's send buffer holds the few bytes of the greeting: this never waits
                conn.send(greeting)
            except OSError:
                self._drop(conn)
                continue
            self._read_hello(conn)

    def _poll(self, conns, timeout=CHECK_INTERVAL):
        """Wait up to ``timeout`` seconds for one of ``conns`` to be readable, admitting newcomers meanwhile;
        the readable ones of ``conns``.  Calls ``check`` when a second has passed since the last call."""
        now = time.monotonic()
        wait = min([timeout, self._next_check - now] + [n.deadline - now for n in self.newcomers.values()])
        readable, _, _ = select.select([self.listener, *self.newcomers, *conns], [], [], max(wait, 0.0))
        readable = set(readable)
        for conn in [conn for conn in self.newcomers if conn in readable]:
            self._read_hello(conn)
        if self.listener in readable:
            self._accept_newcomers()
        now = time.monotonic()  # a hello that has arrived is read before its deadline is looked at
        for conn in [conn for conn, newcomer in self.newcomers.items() if newcomer.deadline <= now]:
            self._refuse(conn, f"it sent no complete hello within {HELLO_TIMEOUT:g}s")
        if time.monotonic() >= self._next_check:
            self._next_check = time.monotonic() + CHECK_INTERVAL
            self.check()
        return [conn for conn in conns if conn in readable]

    def accept_all(self, timeout=ACCEPT_TIMEOUT):
        """Replace the current tasks by the arrived ones and wait until the task of every partition has
        connected (a task arriving for a partition replaces the one before it)."""
        for conn in self.conns.values():
            conn.close()
        self.conns = {}
        deadline = time.monotonic() + timeout
        while True:
            for pid, conn in self.arrived.items():
                if pid in self.conns:
                    self.conns[pid].close()
                self.conns[pid] = conn
            self.arrived = {}
            if len(self.conns) == len(self.partitions):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(self.conns)} of {len(self.partitions)} training tasks connected to "
                                   f"the spark-bsvm coordinator at {self.address} in {timeout:.0f}s; a barrier stage "
                                   "starts only once all its tasks have slots at once: other jobs holding slots (a "
                                   "second fit, a long job) keep it waiting, so fit after them or with a lower "
                                   "numPartitions")
            self._poll([])

    def send_all(self, message):
        """Send ``message`` to every connected task (encoded once for all of them)."""
        self._sent = time.perf_counter()
        buffers = wire.frame(message)
        for conn in self.conns.values():
            wire.send_frame(conn, buffers)

    def gather(self, timed=True):
        """{partition id: answer} of every task; LostTask if a task is lost or a retried task connects, a
        ValueError with the task's message if it reports bad input, a MemoryError if it ran out of memory
        (retrying cannot help either).  The round goes
        into ``times`` (with the seconds the tasks report beside their answers, taken out of them), unless
        not ``timed`` (answers that are no round's: the tasks' checks of their rows)."""
        answers, work = {}, []
        pending = dict(self.conns)
        while pending:
            readable = self._poll(list(pending.values()))
            if self.arrived:
                raise LostTask()
            for pid, conn in list(pending.items()):
                if conn in readable:
                    try:
                        answers[pid] = wire.recv(conn)
                    except (ConnectionError, OSError) as exc:
                        raise LostTask() from exc
                    if wire.ERROR in answers[pid]:
                        error = MemoryError if answers[pid][wire.ERROR] == "MemoryError" else ValueError
                        raise error(answers[pid]["message"])
                    work.append(answers[pid].pop(wire.WORK))
                    del pending[pid]
        if work and timed:
            self.times.add(time.perf_counter() - self._sent, work)
        return answers

    def stop(self):
        """Tell every connected task that the fit is over."""
        for conn in [*self.conns.values(), *self.arrived.values()]:
            try:
                wire.send(conn, {"function": wire.STOP})
            except OSError:
                pass

    def close(self):
        """Close every socket and the listener (idempotent); log how many connections were refused."""
        for conn in [*self.conns.values(), *self.arrived.values(), *self.newcomers]:
            conn.close()
        self.conns, self.arrived, self.newcomers = {}, {}, {}
        self.listener.close()
        if sum(self.refused.values()) > 1:
            log.warning("the spark-bsvm coordinator refused %d connections during the fit: %s",
                        sum(self.refused.values()), dict(self.refused))
            self.refused.clear()
        if self.left:
            log.debug("%d connections to the spark-bsvm coordinator closed before their hello", self.left)
