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


def _advised_huge(array):
    """Whether the mapping that holds ``array``'s middle byte is advised for huge pages (VmFlags 'hg'); the
    middle, for numpy advises whole pages only, from the first page boundary inside its allocation."""
    address = array.__array_interface__["data"][0] + array.nbytes // 2
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return "hg" in line.split()[1:]
    raise AssertionError("no mapping holds the array")


@needs_smaps
def test_the_flag_reader_sees_a_huge_page_advice():
    advised = mmap.mmap(-1, 8 << 20)
    advised.madvise(mmap.MADV_HUGEPAGE)
    array = np.ndarray((1 << 20,), np.float64, buffer=advised)
    assert _advised_huge(array)
    assert not _advised_huge(zeros_in_small_pages((1 << 20,)))


@needs_smaps
def test_the_working_set_buffer_is_in_small_pages():
    buffer = WorkingSetKernel(KernelSpec("rbf", gamma=1.0), capacity=2048).buffer
    assert buffer.shape == (2048, 2048) and buffer.flags.c_contiguous
    assert not _advised_huge(buffer)
