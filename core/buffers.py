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

``zeros_in_small_pages`` gives such a buffer an anonymous memory map of its own, which numpy never
advises and which is advised against huge pages (``MADV_NOHUGEPAGE``, for kernels that give every map
huge pages, ``enabled`` set to ``always``): the kernel's 4 KiB pages, zero-filled, touched as the buffer
fills.  For a buffer a solver keeps for the whole fit and fills as it goes, where it was measured to
gain: the dual decomposition's working-set kernel matrix (``core.working_set``).  The slant partitions'
column stores in small pages made paths fitted back to back 14-17% cheaper, but a path fitted right
after its reference (as the bench and the estimators fit them) 10-15% dearer: the huge pages the
reference's fit had just freed come back at little cost.  SpSVM-2's basis columns in small pages made a
process's first fit cheaper and its later ones dearer (``bench/HISTORY.md``).  Blocks written whole at
once, which a fit allocates again and again, reuse memory just freed, where huge pages are the faster.
"""

import mmap

import numpy as np


def zeros_in_small_pages(shape, order="C"):
    """A float64 array of zeros of ``shape`` (C or Fortran ``order``) in an anonymous memory map of its own
    (module doc); the map is released with the last array that uses it."""
    shape = tuple(int(s) for s in np.atleast_1d(shape))
    nbytes = 8 * int(np.prod(shape, dtype=np.int64))
    if nbytes == 0:
        return np.zeros(shape, order=order)
    pages = mmap.mmap(-1, nbytes)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        pages.madvise(mmap.MADV_NOHUGEPAGE)
    return np.ndarray(shape, np.float64, buffer=pages, order=order)
