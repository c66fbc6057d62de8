"""Buffers in small pages: zeros of the asked shape and order, writable, in a map numpy never advises."""

import mmap
import sys

import numpy as np
import pytest

from core.buffers import zeros_in_small_pages
from core.kernels import KernelSpec
from core.working_set import WorkingSetKernel

needs_smaps = pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(mmap, "MADV_HUGEPAGE"),
                                 reason="/proc/self/smaps and MADV_HUGEPAGE are Linux's")


@pytest.mark.parametrize("shape, order", [((3, 5), "C"), ((3, 5), "F"), ((7,), "C"), ((0, 4), "C"), ((4, 0), "F")])
def test_zeros_of_the_shape_and_order_asked_and_writable(shape, order):
    a = zeros_in_small_pages(shape, order=order)
    assert a.shape == shape and a.dtype == np.float64
    assert a.flags.c_contiguous if order == "C" else a.flags.f_contiguous
    np.testing.assert_array_equal(a, np.zeros(shape))
    a[...] = 2.5
    np.testing.assert_array_equal(a, np.full(shape, 2.5))


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
    assert not _advised_huge(zeros_in_small_pages((1 << 20,)))
    assert "nh" in _mapping_of(zeros_in_small_pages((1 << 20,)))["VmFlags:"]


@needs_smaps
def test_the_working_set_buffer_is_in_small_pages():
    buffer = WorkingSetKernel(KernelSpec("rbf", gamma=1.0), capacity=2048).buffer
    assert buffer.shape == (2048, 2048) and buffer.flags.c_contiguous
    assert not _advised_huge(buffer)


@needs_smaps
def test_the_working_set_buffer_holds_in_memory_the_block_its_working_sets_used():
    # rows of 8,192 values (64 kB): working sets of up to 500 use 4,000 bytes of each of their rows, two
    # pages at most; whole rows swept would make 32 MB resident
    cache = WorkingSetKernel(KernelSpec("rbf", gamma=1.0), capacity=8192)
    rows = np.random.default_rng(3).normal(size=(600, 4))
    for ids in (np.arange(300), np.arange(100, 600), np.arange(200)):
        cache.arrange(ids, rows[ids])
    resident_kb = int(_mapping_of(cache.buffer)["Rss:"][0])
    assert resident_kb <= 500 * 2 * 4, f"{resident_kb} kB of the buffer resident"
