"""The driver <-> task wire format: authenticated frames of JSON and raw array bytes.

Nothing received is ever unpickled or evaluated.  A message is a flat dict whose values are None,
bools, numbers, strings, lists/dicts of those (JSON), numpy arrays of a plain numeric or bool dtype,
or CSR row blocks (three arrays and a shape).  A frame is an 8-byte big-endian length and the
payload; the payload is an 8-byte header length, a JSON header naming each value's kind (arrays:
dtype string and shape) and then the arrays' bytes, C order, one after the other.  Arrays are read
back with ``np.frombuffer`` (one copy out of the frame, so they own their memory and are writable):
no ``.npy`` headers to parse, which cost ~0.2 ms an array (``ast.literal_eval``).

A connection starts with the task sending the per-fit secret (32 bytes in hex) and its partition id;
the coordinator compares the secret in constant time before reading anything else.
"""

import hmac
import json
import math
import struct

import numpy as np

from core.rows import csr_from_arrays, is_sparse

STOP = "__stop__"  # the function name of the message that ends a task
# the function name of the message that tells tasks which checked their own rows what their blocks hold
CHECKED = "__checked__"
ERROR = "__error__"  # key of a task's error frame: the exception's type name; "message" holds its text
WORK = "__work__"  # key of the seconds a task spent in the round's partition function, beside its answer

_LENGTH = struct.Struct(">Q")
MAX_FRAME = 1 << 34  # 16 GiB: anything larger is a corrupt or hostile length
# dtypes an array on the wire may have: plain numbers and bools, in either byte order
_KINDS = frozenset("biuf")


def _array_spec(array):
    """(JSON spec, bytes view) of one array."""
    if array.dtype.kind not in _KINDS:
        raise TypeError(f"arrays on the wire must be numeric or bool, got dtype {array.dtype}")
    flat = np.ascontiguousarray(array).reshape(-1)  # C order (ascontiguousarray makes a 0-d array 1-d)
    return {"dtype": array.dtype.str, "shape": list(array.shape)}, flat.view(np.uint8)


def _encode_parts(message):
    """The JSON header and the list of byte buffers of ``message``."""
    header, blobs = {}, []
    for key, value in message.items():
        if isinstance(value, np.ndarray):
            spec, blob = _array_spec(value)
            header[key] = {"kind": "array", "arrays": [spec]}
            blobs.append(blob)
        elif is_sparse(value):
            value = value.tocsr()
            specs = [_array_spec(part) for part in (value.data, value.indices, value.indptr)]
            header[key] = {"kind": "csr", "shape": list(value.shape), "arrays": [spec for spec, _ in specs]}
            blobs.extend(blob for _, blob in specs)
        elif isinstance(value, np.generic):
            header[key] = {"kind": "json", "value": value.item()}
        else:
            header[key] = {"kind": "json", "value": value}
    return json.dumps(header).encode(), blobs


def encode(message):
    """Bytes of one message (see the module doc for what values may hold)."""
    head, blobs = _encode_parts(message)
    return b"".join([_LENGTH.pack(len(head)), head, *blobs])


def _read_array(payload, offset, spec):
    dtype = np.dtype(spec["dtype"])
    if dtype.kind not in _KINDS:
        raise ValueError(f"refusing an array of dtype {dtype} in a message")
    shape = tuple(int(n) for n in spec["shape"])
    if min(shape, default=0) < 0:
        raise ValueError(f"refusing an array of shape {shape} in a message")
    count = math.prod(shape)  # np.prod took 2 of the 3.7 us an array's read cost
    size = count * dtype.itemsize
    if offset + size > len(payload):
        raise ValueError("an array in a message runs past its frame")
    array = np.frombuffer(payload, dtype=dtype, count=count, offset=offset).reshape(shape).copy()
    return array, offset + size


def decode(payload):
    """The message encoded in ``payload`` (arrays are copied out of it, never unpickled)."""
    (head_len,) = _LENGTH.unpack_from(payload, 0)
    header = json.loads(bytes(payload[8:8 + head_len]))
    offset = 8 + head_len
    message = {}
    for key, spec in header.items():
        kind = spec["kind"]
        if kind == "json":
            message[key] = spec["value"]
        elif kind == "array":
            message[key], offset = _read_array(payload, offset, spec["arrays"][0])
        elif kind == "csr":
            parts = []
            for part in spec["arrays"]:
                array, offset = _read_array(payload, offset, part)
                parts.append(array)
            message[key] = csr_from_arrays(*parts, tuple(spec["shape"]))
        else:
            raise ValueError(f"unknown value kind {kind!r} in a message")
    return message


def frame(message):
    """The frame of ``message`` as the buffers to send in turn: one for small messages (one system call), else the
    length and header, then each array's bytes (large arrays are not copied).  Built once for any number of
    recipients (``send_frame``)."""
    head, blobs = _encode_parts(message)
    size = 8 + len(head) + sum(blob.nbytes for blob in blobs)
    prefix = _LENGTH.pack(size) + _LENGTH.pack(len(head)) + head
    if size < 1 << 16:
        return [b"".join([prefix, *blobs])]
    return [prefix, *blobs]


def send_frame(sock, buffers):
    """Send a frame made by ``frame``."""
    for buffer in buffers:
        sock.sendall(buffer)


def send(sock, message):
    """Send ``message`` as one frame."""
    send_frame(sock, frame(message))


def _recv_exactly(sock, n):
    """Exactly ``n`` bytes from ``sock``, read into one buffer."""
    buffer = bytearray(n)
    view, got = memoryview(buffer), 0
    while got < n:
        chunk = sock.recv_into(view[got:], min(n - got, 1 << 22))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        got += chunk
    return buffer


def recv(sock):
    (n,) = _LENGTH.unpack(_recv_exactly(sock, 8))
    if n > MAX_FRAME:
        raise ConnectionError(f"refusing a frame of {n} bytes")
    return decode(_recv_exactly(sock, n))


HELLO = struct.Struct(">64sq")  # hex secret, partition id


def send_hello(sock, secret, partition_id):
    sock.sendall(HELLO.pack(secret.encode(), partition_id))


def read_hello(hello, secret):
    """Partition id in ``hello`` (``HELLO.size`` bytes); raise PermissionError for a wrong secret."""
    token, partition_id = HELLO.unpack(hello)
    if not hmac.compare_digest(token, secret.encode()):
        raise PermissionError("a connection presented a wrong secret")
    return partition_id
