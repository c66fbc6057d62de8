"""The coordinator's side of rounds: a listener that admits a fit's tasks, sends them requests and
gathers their answers.  Spark-free, so that it runs on the driver (``SparkEngine``) and inside the
barrier task that coordinates a fit on the executors (``spark_bsvm.engine.hosted``) alike.

Security: the listener serves only connections that present the per-fit secret; nothing received
is ever unpickled (``spark_bsvm.engine.wire``).
"""

import logging
import select
import socket
import time

from spark_bsvm.engine import wire

log = logging.getLogger("spark_bsvm")

ACCEPT_TIMEOUT = 600.0  # seconds to wait for the tasks that have not connected yet


class LostTask(Exception):
    """A task's connection broke, or a task of a retried stage connected (its ``(partition id, socket)``
    is the argument): the current tasks are gone and the round must be sent again."""


class Coordinator:
    """Listens on ``host`` and talks to the tasks of ``partitions`` (their partition ids).

    ``check`` is called about once a second while waiting; it raises to end the wait (the Spark stage
    has failed, say).
    """

    def __init__(self, host, partitions, secret, check=None):
        self.listener = socket.create_server((host, 0))
        self.listener.settimeout(1.0)
        self.partitions = sorted(partitions)
        self.secret = secret
        self.check = check or (lambda: None)
        self.conns = {}

    @property
    def address(self):
        """(host, port) the tasks connect to."""
        return self.listener.getsockname()[:2]

    def _accept_one(self):
        """An authenticated (partition id, socket) from the listener, or None (timeout or refused)."""
        try:
            conn, _ = self.listener.accept()
        except socket.timeout:
            return None
        conn.settimeout(10.0)
        try:
            pid = wire.recv_hello(conn, self.secret)
        except (PermissionError, ConnectionError, OSError) as exc:
            log.warning("refused a connection to the spark-bsvm coordinator: %s", exc)
            conn.close()
            return None
        conn.settimeout(None)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return pid, conn

    def accept_all(self, first=None, timeout=ACCEPT_TIMEOUT):
        """Drop the current tasks' sockets and wait until the task of every partition has connected
        (``first``: a ``(partition id, socket)`` already accepted)."""
        for conn in self.conns.values():
            conn.close()
        self.conns = dict([first]) if first else {}
        deadline = time.monotonic() + timeout
        while len(self.conns) < len(self.partitions):
            self.check()
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(self.conns)} of {len(self.partitions)} training tasks connected to "
                                   f"the spark-bsvm coordinator at {self.address} in {timeout:.0f}s")
            accepted = self._accept_one()
            if accepted:
                pid, conn = accepted
                if pid in self.conns:
                    self.conns[pid].close()
                self.conns[pid] = conn

    def send_all(self, message):
        for conn in self.conns.values():
            wire.send(conn, message)

    def gather(self):
        """{partition id: answer} of every task; LostTask if a task is lost or a retried task connects, a
        ValueError with the task's message if it reports bad input (retrying cannot help)."""
        answers = {}
        pending = dict(self.conns)
        while pending:
            readable, _, _ = select.select(list(pending.values()) + [self.listener], [], [], 1.0)
            if not readable:
                self.check()
                continue
            if self.listener in readable:
                accepted = self._accept_one()  # strangers are refused here and the round goes on
                if accepted:
                    raise LostTask(accepted)
            for pid, conn in list(pending.items()):
                if conn in readable:
                    try:
                        answers[pid] = wire.recv(conn)
                    except (ConnectionError, OSError) as exc:
                        raise LostTask() from exc
                    if wire.ERROR in answers[pid]:
                        raise ValueError(answers[pid]["message"])
                    del pending[pid]
        return answers

    def stop(self):
        """Tell every connected task that the fit is over."""
        for conn in self.conns.values():
            try:
                wire.send(conn, {"function": wire.STOP})
            except OSError:
                pass

    def close(self):
        """Close the tasks' sockets and the listener (idempotent)."""
        for conn in self.conns.values():
            conn.close()
        self.conns = {}
        self.listener.close()
