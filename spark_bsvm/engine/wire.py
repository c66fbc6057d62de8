"""The driver <-> task wire format: authenticated frames of JSON and .npy bytes.

Nothing received is ever unpickled.  A message is a flat dict whose values
are None, bools, numbers, strings, lists/dicts of those (JSON), numpy arrays
(``.npy`` bytes read back with ``allow_pickle=False``) or CSR row blocks
(three arrays and a shape).  A frame is an 8-byte big-endian length and the
payload; the payload is a JSON header naming each value's kind and the byte
lengths of its arrays, followed by those arrays.

A connection starts with the task sending the per-fit secret (32 bytes in
hex) and its partition id; the coordinator compares the secret in constant
time before reading anything else.
"""

import hmac
import io
import json
import struct

import numpy as np
import scipy.sparse as sp

_LENGTH = struct.Struct(">Q")
MAX_FRAME = 1 << 34  # 16 GiB: anything larger is a corrupt or hostile length


def _npy(array):
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def encode(message):
    """Bytes of one message (see the module doc for what values may hold)."""
    header, blobs = {}, []
    for key, value in message.items():
        if isinstance(value, np.ndarray):
            blob = _npy(value)
            header[key] = {"kind": "array", "sizes": [len(blob)]}
            blobs.append(blob)
        elif sp.issparse(value):
            value = sp.csr_matrix(value)
            parts = [_npy(value.data), _npy(value.indices), _npy(value.indptr)]
            header[key] = {"kind": "csr", "shape": list(value.shape), "sizes": [len(b) for b in parts]}
            blobs.extend(parts)
        elif isinstance(value, np.generic):
            header[key] = {"kind": "json", "value": value.item()}
        else:
            header[key] = {"kind": "json", "value": value}
    head = json.dumps(header).encode()
    return _LENGTH.pack(len(head)) + head + b"".join(blobs)


def decode(payload):
    """The message encoded in ``payload`` (arrays are read without pickle)."""
    (head_len,) = _LENGTH.unpack_from(payload, 0)
    header = json.loads(payload[8:8 + head_len])
    offset = 8 + head_len
    message = {}

    def next_array(size):
        nonlocal offset
        array = np.load(io.BytesIO(payload[offset:offset + size]), allow_pickle=False)
        offset += size
        return array

    for key, spec in header.items():
        if spec["kind"] == "json":
            message[key] = spec["value"]
        elif spec["kind"] == "array":
            message[key] = next_array(spec["sizes"][0])
        elif spec["kind"] == "csr":
            data, indices, indptr = (next_array(s) for s in spec["sizes"])
            message[key] = sp.csr_matrix((data, indices, indptr), shape=tuple(spec["shape"]))
        else:
            raise ValueError(f"unknown value kind {spec['kind']!r} in a message")
    return message


def send(sock, message):
    payload = encode(message)
    sock.sendall(_LENGTH.pack(len(payload)) + payload)


def _recv_exactly(sock, n):
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def recv(sock):
    (n,) = _LENGTH.unpack(_recv_exactly(sock, 8))
    if n > MAX_FRAME:
        raise ConnectionError(f"refusing a frame of {n} bytes")
    return decode(_recv_exactly(sock, n))


HELLO = struct.Struct(">64sq")  # hex secret, partition id


def send_hello(sock, secret, partition_id):
    sock.sendall(HELLO.pack(secret.encode(), partition_id))


def recv_hello(sock, secret):
    """Partition id of an authenticated task; raise PermissionError for a wrong secret."""
    token, partition_id = HELLO.unpack(_recv_exactly(sock, HELLO.size))
    if not hmac.compare_digest(token, secret.encode()):
        raise PermissionError("a connection presented a wrong secret")
    return partition_id
