"""Buffers in small pages: of the shape asked, writable, in a map numpy never advises, given back and borrowed
again, never by two borrowers at once."""

import mmap
import sys

import numpy as np
import pytest

from core.buffers import borrow_small_pages, give_back
from core.kernels import KernelSpec
from core.working_set import WorkingSetKernel

needs_smaps = pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(mmap, "MADV_HUGEPAGE"),
                                 reason="/proc/self/smaps and MADV_HUGEPAGE are Linux's")
needs_lazy_free = pytest.mark.skipif(not hasattr(mmap, "MADV_FREE"),
                                     reason="buffers are kept only where MADV_FREE frees them lazily (Linux, BSD)")


@pytest.mark.parametrize("shape", [(3, 5), (7,), (0, 4)])  # sizes no square buffer of the other tests has
def test_a_new_buffer_is_zeros_of_the_shape_asked_and_writable(shape):
    a = borrow_small_pages(shape)
    assert a.shape == shape and a.dtype == np.float64 and a.flags.c_contiguous
    np.testing.assert_array_equal(a, np.zeros(shape))
    a[...] = 2.5
    np.testing.assert_array_equal(a, np.full(shape, 2.5))


@needs_lazy_free
def test_a_buffer_given_back_is_borrowed_again_and_never_by_two_at_once():
    a, b = borrow_small_pages((64, 64)), borrow_small_pages((64, 64))
    assert not np.shares_memory(a, b)
    a[...] = 1.0
    pages = a.base
    give_back(a)
    c = borrow_small_pages((4096,))  # as many bytes, another shape
    assert c.base is pages and c.shape == (4096,)
    d = borrow_small_pages((64, 64))
    assert d.base is not pages and not np.shares_memory(d, b)


@needs_lazy_free
def test_at_most_four_buffers_are_kept():
    lent = [borrow_small_pages((24, 24)) for _ in range(6)]
    maps = [a.base for a in lent]
    for a in lent:
        give_back(a)
    again = [borrow_small_pages((24, 24)).base for _ in range(6)]
    assert sum(any(m is k for k in maps) for m in again) == 4


@needs_lazy_free
def test_a_buffer_of_a_new_size_releases_the_buffers_kept():
    a = borrow_small_pages((24, 24))
    pages = a.base
    give_back(a)
    borrow_small_pages((25, 25))
    assert borrow_small_pages((24, 24)).base is not pages


@needs_lazy_free
def test_at_most_a_gibibyte_of_buffers_is_kept():
    lent = [borrow_small_pages((8192, 8192)) for _ in range(3)]  # 512 MiB each, none of it written
    maps = [a.base for a in lent]
    for a in lent:
        give_back(a)
    again = [borrow_small_pages((8192, 8192)).base for _ in range(3)]
    assert [any(m is k for k in maps) for m in again] == [True, True, False]


def _mapping_of(array):
    """The /proc/self/smaps fields (name: values) of the mapping that holds ``array``'s middle byte; the
    middle, for numpy advises whole pages only, from the first page boundary inside its allocation."""
    address = array.__array_interface__["data"][0] + array.nbytes // 2
    fields = None
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                if fields is not None:
                    return fields
                lo, hi = (int(x, 16) for x in head.split("-"))
                fields = {} if lo <= address < hi else None
            elif fields is not None:
                fields[head] = line.split()[1:]
    if fields is None:
        raise AssertionError("no mapping holds the array")
    return fields


def _advised_huge(array):
    """Whether the mapping that holds ``array`` is advised for huge pages (VmFlags 'hg')."""
    return "hg" in _mapping_of(array)["VmFlags:"]


@needs_smaps
def test_the_flag_reader_sees_a_huge_page_advice():
    advised = mmap.mmap(-1, 8 << 20)
    advised.madvise(mmap.MADV_HUGEPAGE)
    array = np.ndarray((1 << 20,), np.float64, buffer=advised)
    assert _advised_huge(array)
    small = borrow_small_pages((1 << 20,))
    assert not _advised_huge(small) and "nh" in _mapping_of(small)["VmFlags:"]


@needs_smaps
@needs_lazy_free
def test_a_buffer_given_back_is_lazily_freed():
    a = borrow_small_pages((256, 1024))  # 2 MiB
    a[...] = 1.0
    give_back(a)
    assert int(_mapping_of(a)["LazyFree:"][0]) >= 1024  # of 2,048 kB: the kernel counts the pages in batches


@needs_smaps
def test_the_working_set_buffer_is_in_small_pages():
    buffer = WorkingSetKernel(KernelSpec("rbf", gamma=1.0), capacity=2048).buffer
    assert buffer.shape == (2048, 2048) and buffer.flags.c_contiguous
    assert not _advised_huge(buffer)


@needs_smaps
def test_the_working_set_buffer_holds_in_memory_the_block_its_working_sets_used():
    # rows of 8,192 values (64 kB): working sets of up to 500 use 4,000 bytes of each of their rows, two
    # pages at most; whole rows swept would make 32 MB resident.  A buffer given back by an earlier test keeps
    # its pages, as lazily freed ones, until written again
    cache = WorkingSetKernel(KernelSpec("rbf", gamma=1.0), capacity=8192)
    rows = np.random.default_rng(3).normal(size=(600, 4))
    for ids in (np.arange(300), np.arange(100, 600), np.arange(200)):
        cache.arrange(ids, rows[ids])
    fields = _mapping_of(cache.buffer)
    in_use_kb = int(fields["Rss:"][0]) - int(fields.get("LazyFree:", [0])[0])
    assert in_use_kb <= 500 * 2 * 4, f"{in_use_kb} kB of the buffer in use"
