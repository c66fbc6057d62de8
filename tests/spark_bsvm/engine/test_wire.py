"""The wire format: every value kind survives a round trip; nothing but plain numbers is accepted."""

import json
import socket
import struct
import threading

import numpy as np
import pytest
import scipy.sparse as sp

from spark_bsvm.engine import wire

VALUES = {
    "float64": np.arange(6.0).reshape(2, 3), "int64": np.array([1, -2], np.int64), "bool": np.array([True, False]),
    "float32": np.ones(3, np.float32), "zero_d": np.array(3.5), "empty": np.zeros((0, 4)),
    "fortran": np.asfortranarray(np.arange(12.0).reshape(3, 4)), "big_endian": np.arange(4, dtype=">f8"),
    "csr": sp.random(5, 4, density=0.5, format="csr", random_state=0), "json": {"x": [1, 2.5, "s"]}, "none": None,
    "text": "hi", "number": 7, "numpy_scalar": np.float64(2.5), "flag": True,
}


def _same(a, b):
    if isinstance(a, np.ndarray):
        return b.dtype == a.dtype and b.shape == a.shape and np.array_equal(a, b)
    if sp.issparse(a):
        return sp.issparse(b) and b.shape == a.shape and (a != b).nnz == 0
    return b == (a.item() if isinstance(a, np.generic) else a)


def test_every_kind_of_value_round_trips_as_owned_writable_arrays():
    payload = bytearray(wire.encode(VALUES))
    decoded = wire.decode(payload)
    assert all(_same(value, decoded[key]) for key, value in VALUES.items())
    payload[:] = bytes(len(payload))  # the buffer is reused for the next frame: the arrays must not change
    assert all(_same(value, decoded[key]) for key, value in VALUES.items())
    assert all(decoded[key].flags.writeable and decoded[key].flags.owndata for key in ("float64", "empty", "int64"))


def test_a_large_message_crosses_a_socket_intact():
    left, right = socket.socketpair()
    # large enough for a frame of several buffers, each array sent as it lies (every kind of value among them)
    message = {"x": np.random.default_rng(0).random(400_000), "ids": np.arange(7), "name": "spsvm_score", **VALUES}
    assert len(wire.frame(message)) > 1
    sender = threading.Thread(target=wire.send, args=(left, message))
    sender.start()
    received = wire.recv(right)
    sender.join()
    left.close()
    right.close()
    assert all(_same(value, received[key]) for key, value in message.items())


def test_objects_are_refused_both_ways():
    with pytest.raises(TypeError, match="numeric or bool, got dtype object"):
        wire.encode({"o": np.array([object()])})
    forged = wire.encode({"a": np.zeros(2)}).replace(b'"<f8"', b'"|O8"')
    with pytest.raises(ValueError, match="refusing an array of dtype object"):
        wire.decode(forged)
    with pytest.raises(ValueError, match=r"unknown section\(s\) \['pickle'\]"):
        wire.decode(_forged({"values": {}, "pickle": {"a": 1}}))


def test_an_array_longer_than_its_frame_is_refused():
    payload = wire.encode({"a": np.zeros(4)})
    with pytest.raises(ValueError, match="runs past its frame"):
        wire.decode(payload[:-8])


def _forged(header, payload=b""):
    """A payload of ``header`` (in this wire format when it is an object naming none) and ``payload``."""
    if isinstance(header, dict):
        header = {"wire": wire.WIRE_FORMAT, **header}
    head = json.dumps(header).encode()
    return struct.pack(">Q", len(head)) + head + payload


def test_arrays_keep_their_bytes_whatever_the_order_of_csr_blocks_and_arrays():
    # the header lists arrays before CSR blocks, so their bytes must come in that order whatever the message's
    message = {"rows": sp.random(6, 3, density=0.5, format="csr", random_state=1), "x": np.arange(5.0),
               "more_rows": sp.random(2, 3, density=0.5, format="csr", random_state=2), "ids": np.arange(4)}
    decoded = wire.decode(wire.encode(message))
    assert all(_same(value, decoded[key]) for key, value in message.items())


@pytest.mark.parametrize("header", [
    ["values"], {"values": [1, 2]}, {"values": {}, "arrays": [["a", "<f8"]]}, {"values": {}, "arrays": [["a"]]},
    {"values": {}, "arrays": [["a", "<f8", ["two"]]]}, {"values": {}, "arrays": [["a", "<f8", [1.5]]]},
    {"values": {}, "arrays": [["a", 8, [1]]]}, {"values": {}, "csr": [["m", [2, 2], "<f8", [0]]]}, {"arrays": []},
    {"values": {}, "arrays": [["a", None, [1]]]}, {"values": {}, "arrays": [["a", "<f8", ""]]},
    {"values": {}, "arrays": [["a", "<f8", [[[[1]]]]]]},
    {"values": {}, "csr": [["m", [2 ** 70, 2], "<f8", [0], "<i4", [0], "<i4", [1]]]}])
def test_a_header_of_another_layout_is_refused_by_name(header):
    with pytest.raises(ValueError, match="malformed message header"):
        wire.decode(_forged(header, bytes(64)))


@pytest.mark.parametrize("payload", [b"", bytes(7), struct.pack(">Q", 2 ** 63) + b"{}", b"\x00" * 7 + b"\x10{}"])
def test_a_payload_shorter_than_its_header_is_refused(payload):
    with pytest.raises(ValueError, match="malformed message header"):
        wire.decode(payload)


def test_a_header_nested_past_the_parser_is_refused():
    head = b'{"wire": %d, "values": {"a": ' % wire.WIRE_FORMAT + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    with pytest.raises(ValueError, match="nested too deeply"):
        wire.decode(struct.pack(">Q", len(head)) + head)


def test_a_message_of_another_spark_bsvm_version_says_so():
    # the first wire format: an object per value, no version
    old = json.dumps({"a": {"kind": "array", "arrays": [{"dtype": "<f8", "shape": [1]}]}}).encode()
    with pytest.raises(ValueError, match="wire format 1, .* the driver and the executors run different spark-bsvm"):
        wire.decode(struct.pack(">Q", len(old)) + old + bytes(8))
    with pytest.raises(ValueError, match="wire format 3"):
        wire.decode(_forged({"wire": 3, "values": {}}))


def test_a_csr_block_whose_indices_leave_its_shape_is_refused():
    payload = wire.encode({"m": sp.csr_matrix(np.array([[0.0, 2.0], [3.0, 0.0]]))})
    (head_len,) = struct.unpack_from(">Q", payload)
    header = json.loads(payload[8:8 + head_len])
    header["csr"][0][1] = [2, 1]  # one column, where a stored entry sits in the second
    with pytest.raises(ValueError, match="must be < 1"):
        wire.decode(_forged(header, payload[8 + head_len:]))


def test_keys_that_are_not_strings_are_refused_when_encoding():
    with pytest.raises(TypeError, match="keys must be strings, got 1"):
        wire.encode({1: np.arange(2)})


def test_forged_dtype_names_cannot_grow_the_codec_without_bound():
    spellings = {prefix + np.dtype(code).str[1:] for code in "?bBhHiIlLqQefdg" for prefix in "<>=|"}
    spellings |= {f"{kind}{size}" for kind in "iuf" for size in (2, 4, 8)} | {"int8", "int16", "int32", "int64",
                                                                              "uint8", "uint16", "uint32", "uint64"}
    assert len(spellings) > 64
    for name in sorted(spellings):
        assert wire.decode(_forged({"values": {}, "arrays": [["a", name, [0]]]}))["a"].shape == (0,)
    assert len(wire._DTYPES) <= 64
    assert wire.decode(wire.encode({"a": np.arange(3.0)}))["a"].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("shape", [[-1, 4], [-2, -2]])
def test_a_negative_shape_is_refused(shape):
    with pytest.raises(ValueError, match="refusing an array of shape"):
        wire.decode(_forged({"values": {}, "arrays": [["a", "<f8", shape]]}, bytes(32)))


@pytest.mark.parametrize("size", [10, 400_000])  # one buffer, and the header then each array's bytes
def test_one_frame_reaches_every_recipient_intact(size):
    message = {"x": np.random.default_rng(1).random(size), "ids": np.arange(3), "function": "spsvm_line"}
    buffers = wire.frame(message)
    assert len(buffers) == (1 if size == 10 else 3)
    pairs = [socket.socketpair() for _ in range(2)]
    for _, right in pairs:
        right.settimeout(10.0)  # a frame that never arrives fails the test instead of hanging it
    senders = [threading.Thread(target=wire.send_frame, args=(left, buffers)) for left, _ in pairs]
    for sender in senders:
        sender.start()
    received = [wire.recv(right) for _, right in pairs]
    for sender in senders:
        sender.join(timeout=10.0)
    for left, right in pairs:
        left.close()
        right.close()
    assert all(_same(value, answer[key]) for answer in received for key, value in message.items())
