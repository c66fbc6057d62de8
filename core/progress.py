"""Where a long fit is, for a person watching: through the one logger ``spark_bsvm.progress``.

``Progress`` writes a line each time the fit passes another tenth of its way (``total`` steps: basis
functions, support vectors, epochs' examples...) with the elapsed and the estimated remaining time,
or, for a fit whose end is not known in advance (decomposition until the violation is below tol),
a line a minute.  The logger logs at INFO; when the program configures no logging at all, it writes
to stderr itself, so the lines show at the default log level.
"""

import logging
import math
import time

LOGGER = "spark_bsvm.progress"


def progress_logger():
    """The progress logger, at INFO and with a stderr handler when logging is not configured."""
    logger = logging.getLogger(LOGGER)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    if not logger.hasHandlers():
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
    return logger


def _duration(seconds):
    return f"{seconds:.0f}s" if seconds < 120 else f"{seconds / 60:.1f} min"


class Progress:
    """Progress of one fit: ``update(done, detail)`` after each step; it logs when a line is due."""

    def __init__(self, method, total=None, unit="steps", interval=60.0):
        self.method, self.total, self.unit, self.interval = method, total, unit, interval
        self.log = progress_logger()
        self.start = self.last = time.perf_counter()
        self.next_tenth = 1

    def update(self, done, detail=""):
        now = time.perf_counter()
        elapsed, suffix = now - self.start, f"; {detail}" if detail else ""
        if self.total:
            share = min(done / self.total, 1.0)
            if share * 10 < self.next_tenth and now - self.last < self.interval:
                return
            self.next_tenth = math.floor(share * 10) + 1
            remaining = elapsed * (1 - share) / share if share > 0 else math.inf
            self.log.info("%s: %d of %d %s (%.0f%%), %s elapsed, ~%s left%s", self.method, done, self.total,
                          self.unit, 100 * share, _duration(elapsed), _duration(remaining), suffix)
        elif now - self.last >= self.interval:
            self.log.info("%s: %d %s, %s elapsed%s", self.method, done, self.unit, _duration(elapsed), suffix)
        else:
            return
        self.last = now
