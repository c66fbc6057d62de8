"""The driver <-> task wire format: authenticated frames of JSON and raw array bytes.

Nothing received is ever unpickled or evaluated.  A message is a flat dict whose values are None,
bools, numbers, strings, lists/dicts of those (JSON), numpy arrays of a plain numeric or bool dtype,
or CSR row blocks (three arrays and a shape).  A frame is an 8-byte big-endian length and the
payload; the payload is an 8-byte header length, a JSON header and then the arrays' bytes, C order,
one after the other.  The header holds the wire format's version, the JSON values as one object, a list
with each array's key, dtype string and shape, and a list with each CSR block's key, shape and its three
arrays' dtypes and shapes, whose bytes follow the arrays' (``_VALUES``, ``_ARRAYS``, ``_CSR``): decoding a
message parses few JSON objects.  Arrays are read back with ``np.frombuffer`` (one copy out of the frame,
so they own their memory and are writable; empty ones are made, not read): no ``.npy`` headers to parse,
which cost ~0.2 ms an array (``ast.literal_eval``).  A CSR block is checked in full (its indices within its
shape) before any kernel sees it.  A frame of another version is refused with a message that says the
driver and the executors run different spark-bsvm versions.

A connection starts with a handshake in which neither side sends the per-fit secret, and each shows the
other it knows it (``greet``): the coordinator sends a greeting (a tag of this handshake, a random nonce and
the fit's mark, a one-way digest of the secret by which a task of another fit, trying ports in turn, leaves
without a word); the task answers with its hello (its own nonce, its partition id and an HMAC under the
secret of both nonces and the id); the coordinator checks that HMAC in constant time before reading anything
else, admits the task and answers with an HMAC of both nonces and the port it listens on, which the task
checks against the port it reached.  So a task that looks for a coordinating task among a few ports
(``spark_bsvm.engine.hosted``) learns nothing of the secret to another service on one of them, and a service
that relays it to the coordinator from another port is refused.
"""

import hashlib
import hmac
import json
import math
import os
import struct

import numpy as np

from core.rows import csr_from_arrays, is_sparse

STOP = "__stop__"  # the function name of the message that ends a task
# the function name of the message that tells tasks which checked their own rows what their blocks hold
CHECKED = "__checked__"
ERROR = "__error__"  # key of a task's error frame: the exception's type name; "message" holds its text
GROUPS = "groups"  # key of a task's checks of its rows: their groups (``blocks.partition_groups``)
WORK = "__work__"  # key of the seconds a task spent in the round's partition function, beside its answer

_LENGTH = struct.Struct(">Q")
MAX_FRAME = 1 << 34  # 16 GiB: anything larger is a corrupt or hostile length
# dtypes an array on the wire may have: plain numbers and bools, in either byte order
_KINDS = frozenset("biuf")
_DTYPES = {}  # dtype string -> numpy dtype, of the first names read (later ones are looked up by numpy each time)
_MAX_DTYPES = 64
# the header's sections: the format's version, the JSON values as they are, then [key, dtype, shape] per array
# and [key, shape, (dtype, shape) x 3] per CSR block (data, indices, indptr), in the order of their bytes
_VERSION, _VALUES, _ARRAYS, _CSR = "wire", "values", "arrays", "csr"
_SECTIONS = frozenset((_VERSION, _VALUES, _ARRAYS, _CSR))
WIRE_FORMAT = 2  # the first format (a JSON object per value, no version) was 1
OTHER_VERSIONS = ("the driver and the executors run different spark-bsvm versions; install the driver's version on "
                  "every node, or ship it with --py-files (README: Running on a cluster)")
_JSON_SCALARS = (str, int, float)  # bools are ints


def _array_spec(array, blobs):
    """[dtype string, shape] of one array, whose bytes (C order) go onto ``blobs``."""
    if array.dtype.kind not in _KINDS:
        raise TypeError(f"arrays on the wire must be numeric or bool, got dtype {array.dtype}")
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    blobs.append(array)  # sent through the buffer protocol: no copy of a C-ordered array
    return [array.dtype.str, list(array.shape)]


def _encode_parts(message):
    """The JSON header and the arrays whose bytes follow it (the arrays', then the CSR blocks')."""
    values, arrays, csr, array_blobs, csr_blobs = {}, [], [], [], []
    for key, value in message.items():
        if type(key) is not str:
            raise TypeError(f"a message's keys must be strings, got {key!r}")
        if isinstance(value, np.ndarray):
            arrays.append([key, *_array_spec(value, array_blobs)])
        elif value is None or isinstance(value, _JSON_SCALARS):  # most values: no sparse test for them
            values[key] = value
        elif isinstance(value, np.generic):
            values[key] = value.item()
        elif is_sparse(value):
            value = value.tocsr()
            parts = [_array_spec(part, csr_blobs) for part in (value.data, value.indices, value.indptr)]
            csr.append([key, list(value.shape), *[item for part in parts for item in part]])
        else:
            values[key] = value
    header = {_VERSION: WIRE_FORMAT, _VALUES: values}
    if arrays:
        header[_ARRAYS] = arrays
    if csr:
        header[_CSR] = csr
    return json.dumps(header).encode(), array_blobs + csr_blobs


def encode(message):
    """Bytes of one message (see the module doc for what values may hold)."""
    head, blobs = _encode_parts(message)
    return b"".join([_LENGTH.pack(len(head)), head, *blobs])


def _dtype(name):
    """The numpy dtype named ``name``, refused unless plain numbers or bools (known names are looked up)."""
    dtype = _DTYPES.get(name)
    if dtype is None:
        dtype = np.dtype(name)
        if dtype.kind not in _KINDS:
            raise ValueError(f"refusing an array of dtype {dtype} in a message")
        if len(_DTYPES) < _MAX_DTYPES:  # forged names cannot grow it without bound
            _DTYPES[name] = dtype
    return dtype


def _read_array(payload, offset, name, shape):
    """The array of dtype ``name`` and ``shape`` at ``offset`` of ``payload`` (a copy), and the offset after it."""
    if type(name) is not str or type(shape) is not list:
        raise _malformed(f"an array's dtype must be a string and its shape a list, got {name!r} and {shape!r}")
    dtype = _dtype(name)
    if min(shape, default=0) < 0:
        raise ValueError(f"refusing an array of shape {tuple(shape)} in a message")
    count = math.prod(shape)  # np.prod took 2 of the 3.7 us an array's read cost
    if not count:  # nothing to read (a round's answers often hold empty arrays)
        return np.empty(shape, dtype), offset
    size = count * dtype.itemsize
    if offset + size > len(payload):
        raise ValueError("an array in a message runs past its frame")
    array = np.frombuffer(payload, dtype=dtype, count=count, offset=offset).reshape(shape).copy()
    return array, offset + size


def _malformed(what):
    return ValueError(f"a malformed message header: {what}")


def decode(payload):
    """The message encoded in ``payload`` (arrays are copied out of it, never unpickled)."""
    if len(payload) < 8:
        raise _malformed(f"a payload of {len(payload)} bytes has no header length")
    (head_len,) = _LENGTH.unpack_from(payload, 0)
    if 8 + head_len > len(payload):
        raise _malformed(f"a header of {head_len} bytes runs past its frame of {len(payload)}")
    try:
        header = json.loads(bytes(payload[8:8 + head_len]))
    except RecursionError:
        raise _malformed("nested too deeply") from None
    if not isinstance(header, dict):
        raise _malformed("it must be a JSON object")
    if header.get(_VERSION) != WIRE_FORMAT:
        raise ValueError(f"a message in wire format {header.get(_VERSION, 1)!r}, where this spark-bsvm reads format "
                         f"{WIRE_FORMAT}: {OTHER_VERSIONS}")
    unknown = set(header) - _SECTIONS
    if unknown:
        raise _malformed(f"unknown section(s) {sorted(unknown)}")
    message, offset = header.get(_VALUES), 8 + head_len
    if not isinstance(message, dict):
        raise _malformed(f"its {_VALUES!r} must be a JSON object")
    try:
        for entry in header.get(_ARRAYS, ()):
            if type(entry) is not list or len(entry) != 3:
                raise _malformed(f"an array's entry must be [key, dtype, shape], got {entry!r}")
            key, name, shape = entry
            message[key], offset = _read_array(payload, offset, name, shape)
        for entry in header.get(_CSR, ()):
            if type(entry) is not list or len(entry) != 8:
                raise _malformed(f"a CSR block's entry must be [key, shape] and 3 x [dtype, shape], got {entry!r}")
            key, shape, *parts = entry
            arrays = []
            for name, part_shape in zip(parts[0::2], parts[1::2]):
                array, offset = _read_array(payload, offset, name, part_shape)
                arrays.append(array)
            block = csr_from_arrays(*arrays, tuple(shape))
            block.check_format(full_check=True)  # indices within the shape, indptr rising: kernels index by them
            message[key] = block
    except (TypeError, OverflowError) as exc:  # a section, key, dtype or shape unlike encode's
        raise _malformed(str(exc)) from None
    return message


def frame(message):
    """The frame of ``message`` as the buffers to send in turn: one for small messages (one system call), else the
    length and header, then each array (C-ordered arrays are sent as they lie, not copied).  Built once for any
    number of recipients (``send_frame``)."""
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


# the tag that starts the coordinator's greeting and the task's hello: this handshake's (BSV1 greeted with no
# fit's mark); every spark-bsvm tag starts with HANDSHAKES, so that another version's is told from a stranger's
HANDSHAKE, HANDSHAKES = b"BSV2", b"BSV"
FIT_MARK_SIZE = 8
GREETING = struct.Struct(f">4s16s{FIT_MARK_SIZE}s")  # the coordinator's first bytes: the tag, its nonce, the fit's mark
HELLO = struct.Struct(">4s16sq32s")  # the task's: the tag, its nonce, its partition id, its HMAC
ANSWER_SIZE = hashlib.sha256().digest_size  # the coordinator's HMAC once it admitted the task


class OtherVersion(ConnectionError):
    """The peer speaks the handshake of another spark-bsvm version."""


class OtherFit(ConnectionError):
    """The peer is the coordinator of another fit (its greeting bears another fit's mark)."""


def _mac(secret, *parts):
    return hmac.new(secret.encode(), b"".join(parts), hashlib.sha256).digest()


def fit_mark(secret):
    """The mark of the fit of ``secret`` in its coordinator's greeting: a digest no one can tell the secret from
    (nor forge a hello by), which lets a task that meets another fit's coordinator leave before its hello."""
    return _mac(secret, b"fit mark")[:FIT_MARK_SIZE]


def greeting(secret):
    """(the greeting a coordinator of the fit of ``secret`` sends first on a connection, its nonce)."""
    nonce = os.urandom(16)
    return GREETING.pack(HANDSHAKE, nonce, fit_mark(secret)), nonce


def _task_mac(secret, greeting_nonce, nonce, partition_id):
    return _mac(secret, b"task", greeting_nonce, nonce, partition_id.to_bytes(8, "big", signed=True))


def answer(secret, greeting_nonce, hello_nonce, port):
    """The coordinator's answer to a hello it admitted (the nonces of its greeting and of the hello; ``port``:
    the port it listens on)."""
    return _mac(secret, b"coordinator", hello_nonce, greeting_nonce, port.to_bytes(2, "big"))


def greet(sock, secret, partition_id):
    """The task's side of a connection's start (waiting for the coordinator as long as ``sock``'s timeout):
    read the greeting, send the hello, check the answer.  An OtherVersion if the peer speaks another spark-bsvm
    version's handshake, an OtherFit if it greets as another fit's coordinator (the task then leaves without
    a hello), another ConnectionError if it closed first or does not speak this handshake, a PermissionError if
    its answer shows no knowledge of ``secret`` (a relay from another port)."""
    tag = bytes(_recv_exactly(sock, len(HANDSHAKE)))  # the tag alone first: another version's greeting may be shorter
    if tag != HANDSHAKE:
        if tag.startswith(HANDSHAKES):
            raise OtherVersion(f"it speaks the handshake {tag.decode(errors='replace')!r} of another spark-bsvm "
                               f"version, where this task speaks {HANDSHAKE.decode()!r}: {OTHER_VERSIONS}")
        raise ConnectionError("the peer does not greet as a spark-bsvm coordinator does")
    _, greeting_nonce, mark = GREETING.unpack(tag + _recv_exactly(sock, GREETING.size - len(tag)))
    if not hmac.compare_digest(mark, fit_mark(secret)):
        raise OtherFit("the peer is the coordinator of another fit")
    nonce = os.urandom(16)
    sock.sendall(HELLO.pack(HANDSHAKE, nonce, partition_id, _task_mac(secret, greeting_nonce, nonce, partition_id)))
    expected = answer(secret, greeting_nonce, nonce, sock.getpeername()[1])
    if not hmac.compare_digest(_recv_exactly(sock, ANSWER_SIZE), expected):
        raise PermissionError("the peer did not prove it knows the fit's secret")


def read_hello(hello, secret, greeting_nonce):
    """(partition id, the task's nonce) of ``hello`` (``HELLO.size`` bytes) on a connection greeted with
    ``greeting_nonce``; a PermissionError if it shows no knowledge of ``secret``, or speaks another handshake."""
    tag, nonce, partition_id, mac = HELLO.unpack(hello)
    if tag != HANDSHAKE:
        reason = "another spark-bsvm version" if tag.startswith(HANDSHAKES) else "not spark-bsvm"
        raise PermissionError(f"it spoke another handshake ({reason})")
    if not hmac.compare_digest(mac, _task_mac(secret, greeting_nonce, nonce, partition_id)):
        raise PermissionError("it presented a wrong secret")
    return partition_id, nonce
