"""Large, long-lived buffers whose pages are first written a part at a time, in the kernel's small pages.

numpy asks Linux for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every array of 4 MiB or
more.  Each first write to such an array then needs a free 2 MiB block of physical memory, which the
kernel compacts memory to find when it has none at hand (``/sys/kernel/mm/transparent_hugepage/defrag``
is ``madvise`` by default).  On a virtual machine whose balloon device reports free memory to its host
(virtio's free page reporting, which hands back free blocks of 2 MiB and more), the free 2 MiB blocks
are exactly the memory the host has taken back, and each costs the host's faults again.  On the
forty-second session's VM (``bench/HISTORY.md``), writing 512 MiB in a new process after a few seconds
of idle took 1.18-1.20 s of CPU in numpy's huge pages against 0.18-0.19 s in small ones; only right
after another process had freed as much were huge pages faster (0.04 against 0.2 s).

``borrow_small_pages`` gives such a buffer an anonymous, private memory map of its own, which numpy never
advises and which is advised against huge pages (``MADV_NOHUGEPAGE``, for kernels that give every map huge
pages, ``enabled`` set to ``always``): the kernel's 4 KiB pages, zero-filled, touched as the buffer fills.
For a buffer a solver keeps for the whole fit and fills as it goes, where it was measured to gain: the dual
decomposition's working-set kernel matrix (``core.working_set``).  The slant partitions' column stores in
small pages made paths fitted back to back 14-17% cheaper, but a path fitted right after its reference (as
the bench and the estimators fit them) 10-15% dearer: the huge pages the reference's fit had just freed come
back at little cost.  SpSVM-2's basis columns in small pages made a process's first fit cheaper and its later
ones dearer (``bench/HISTORY.md``).  Blocks written whole at once, which a fit allocates again and again,
reuse memory just freed, where huge pages are the faster.

A fit gives its buffer back at its end (``give_back``), and the process's next fit that asks for one of the
same size borrows it, pages and all: even small pages, once freed, cost a Spark driver the host's faults
again, because between a driver's fits the JVM and the Python workers take the memory it freed.  A
budget-L1 fit on ijcnn1 (``local[2]``, the fits after a session's first) spent 0.01-0.14 s of its driver's
CPU on the buffer's first writes, 3,735 page faults, where the same fits on ``LocalEngine`` spent 0.009-0.013 s
on as many; with the buffer borrowed back, no fault and 0.002 s on either (the seventy-fourth session,
``bench/HISTORY.md``).  A buffer given back is advised ``MADV_FREE``: its pages stay in place for the next
borrower, and the kernel takes them back, without writing them anywhere, when it needs the memory.  Until
then they count in the process's resident size (``LazyFree`` in ``/proc/<pid>/smaps``), which a cluster
manager that polices a container's resident size (YARN) sees: so at most four maps and 1 GiB of them are kept
(two of the largest working-set buffers, 8,192 x 8,192 values), and a map keeps resident only the pages its
solves wrote.
"""

import mmap
import threading

import numpy as np

# buffers given back and kept for the process's next borrowers (concurrent fits' own), at most, and their bytes
_KEPT_MAPS, _KEPT_BYTES = 4, 1 << 30
_given_back = []  # their maps, most recent last
_lock = threading.Lock()


def borrow_small_pages(shape):
    """A C-contiguous float64 array of ``shape`` in small pages, its values undefined (module doc): the map of a
    buffer of as many bytes given back in this process (``give_back``), else a new one, of zeros, and then the
    maps kept for other sizes are released (a process whose address space is limited, as Spark limits a
    Python worker's to ``spark.executor.pyspark.memory``, holds no more maps than its solves in progress need)."""
    shape = tuple(int(s) for s in np.atleast_1d(shape))
    nbytes = 8 * int(np.prod(shape, dtype=np.int64))
    if nbytes == 0:
        return np.zeros(shape)
    with _lock:
        same_size = [k for k, pages in enumerate(_given_back) if len(pages) == nbytes]
        pages = _given_back.pop(same_size[-1]) if same_size else None
        if pages is None:  # a new size: the maps kept for others go (docstring)
            _given_back.clear()
    return np.ndarray(shape, np.float64, buffer=_new_map(nbytes) if pages is None else pages)


def give_back(array):
    """Keep the map of ``array``, a buffer ``borrow_small_pages`` returned that neither it nor any view of it
    will be used again, for the next borrower of as many bytes (module doc); the oldest kept maps beyond
    ``_KEPT_MAPS`` or ``_KEPT_BYTES`` are released.  Without ``MADV_FREE`` (not Linux nor BSD) the map is
    released at once."""
    pages = array.base
    if not isinstance(pages, mmap.mmap) or not hasattr(mmap, "MADV_FREE"):
        return
    pages.madvise(mmap.MADV_FREE)
    with _lock:
        _given_back.append(pages)
        while len(_given_back) > _KEPT_MAPS or sum(map(len, _given_back)) > _KEPT_BYTES:
            del _given_back[0]


def _new_map(nbytes):
    """An anonymous private map of ``nbytes`` of zeros, advised against huge pages where the platform can."""
    if hasattr(mmap, "MAP_PRIVATE"):
        pages = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    else:
        pages = mmap.mmap(-1, nbytes)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        pages.madvise(mmap.MADV_NOHUGEPAGE)
    return pages
