"""The toolnexus on-disk Task format (docs/on-disk-format.md), in plain Python.

Everything here is pure: no file system, so the same module runs inside the component
(CPython built for WASI by componentize-py) and under the host's python3 in the unit tests
(python/store/tests/). It follows the Rust reference implementation in
`shared/format/src/{id,task,query,state}.rs` and `shared/format/src/dir/` rule for rule, as the
JavaScript port (`js/store/src/format.js`) does.
"""

import base64
import bisect
import hashlib
import json
import re

#: The extension of every Task file.
EXTENSION = ".json"
#: The longest file name most file systems accept (ext4, XFS, APFS, NTFS), in bytes.
MAX_FILE_NAME = 255
#: The readable prefix kept in a hashed name: prefix + "~" + 64 hex + ".json" <= 255.
HASHED_PREFIX_MAX = MAX_FILE_NAME - len(EXTENSION) - 1 - 64
#: Prefix of every temp file name. Hidden, so never mistaken for a Task file.
TEMP_PREFIX = ".tmp-"
#: A temp file older than this (milliseconds) is a crashed writer's leftover.
STALE_TEMP_AGE_MS = 60 * 60 * 1000
#: The largest Task file read; a larger one is corrupt, never read into memory.
MAX_TASK_FILE_BYTES = 64 * 1024 * 1024
#: How long (milliseconds) another writer must see a writer's lock on one Task unchanged, by its
#: own monotonic clock, before it may break it; `configure(lock-lease-ms)` changes it. A writer
#: gives up a save after half of it.
DEFAULT_LOCK_LEASE_MS = 4_000
MIN_LOCK_LEASE_MS = 10
MAX_LOCK_LEASE_MS = 3_600_000
#: Page size when the query says 0, and the most a page ever holds.
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
#: The largest u64, where a version counter stops (saturates).
U64_MAX = (1 << 64) - 1
I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1
#: A version record longer than this is not read past it (and so does not parse).
MAX_RECORD_BYTES = 512
#: The length of every version record these stores write: one line of JSON padded with
#: spaces. A record of exactly this length is overwritten in place by the next save; any other
#: is replaced by a rename.
RECORD_LEN = 256
#: The longest page token decoded; anything longer is not one of ours.
MAX_PAGE_TOKEN = 4096

_PLAIN = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_.")


class StoreError(Exception):
    """An error with a WIT `store-error` case: `invalid-input`, `corrupt`, `io`, `conflict` or
    `other`. A `conflict` also carries `current`, the stored version (`None` when there is no
    Task); an `io` error may carry the `errno` of the failed call."""

    def __init__(self, tag, message, current=None, errno=None):
        super().__init__(message)
        self.tag = tag
        self.message = message
        self.current = current
        self.errno = errno


def utf8(text):
    """The UTF-8 bytes of a string; `ValueError` for one with a lone surrogate."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError("not valid Unicode (a lone surrogate)") from e


def decode_utf8(data):
    """Decodes UTF-8 strictly: `None` if the bytes are not UTF-8. A byte-order mark is kept
    (and then fails JSON parsing), exactly as the Rust stores treat it."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


# --- Ids and file names (shared/format/src/id.rs) ---


def encode_id(task_id):
    """The file name (with `.json`) that holds the Task with this id."""
    if task_id == "":
        raise StoreError("invalid-input", "task id is empty")
    try:
        data = utf8(task_id)
    except ValueError:
        raise StoreError("invalid-input", "task id is not valid Unicode (a lone surrogate)")
    parts = []
    for i, byte in enumerate(data):
        if byte in _PLAIN and not (i == 0 and byte == 0x2E):
            parts.append(chr(byte))
        else:
            parts.append("%%%02X" % byte)
    name = "".join(parts)
    if len(name) + len(EXTENSION) > MAX_FILE_NAME:
        cut = HASHED_PREFIX_MAX
        # Never split a `%XX` escape: back up to the start of the escape the cut falls in.
        pos = name[cut - 2 : cut].rfind("%")
        if pos >= 0:
            cut = cut - 2 + pos
        name = name[:cut] + "~" + sha256_hex(data)
    return name + EXTENSION


def is_task_file_name(name):
    """Whether a directory entry is a Task file (not a temp, side or foreign file)."""
    return len(name) > len(EXTENSION) and name.endswith(EXTENSION) and not name.startswith(".")


def side_names(task_file):
    """The names beside the Task file `<stem>.json`: its version record and its lock."""
    stem = task_file[: -len(EXTENSION)] if task_file.endswith(EXTENSION) else task_file
    return ".~%s.v" % stem, ".~%s.l" % stem


# --- Task text ---


def _refuse_constant(name):
    raise ValueError("%s is not JSON" % name)


def _json_kind(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


#: The deepest nesting of arrays and objects the Rust stores' parser (serde_json) accepts.
MAX_DEPTH = 127

_SURROGATE_ESCAPE = re.compile(r"(\\+)u[dD]([89a-fA-F])[0-9a-fA-F]{2}")


def _finite_float(text):
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number out of range")
    return value


def _check_depth(value):
    """`ValueError` if arrays and objects nest deeper than `MAX_DEPTH`."""
    level = [value]
    for _ in range(MAX_DEPTH):
        level = [
            inner
            for outer in level
            for inner in (outer.values() if isinstance(outer, dict) else outer)
            if isinstance(inner, (dict, list))
        ]
        if not level:
            return
    raise ValueError("nested deeper than %d levels" % MAX_DEPTH)


def _check_surrogates(text):
    """`ValueError` for a `\\u` escape of a lone surrogate, which is not Unicode. (Python's
    parser would make it a string that cannot be encoded; the Rust stores refuse it.)"""
    high_ends = None
    for m in _SURROGATE_ESCAPE.finditer(text):
        if len(m.group(1)) % 2 == 0:
            continue  # an escaped backslash, then a plain "u"
        escape_start = m.end() - 6
        if m.group(2) in "89abAB":
            if high_ends is not None:
                break
            high_ends = m.end()
        elif high_ends == escape_start:
            high_ends = None
        else:
            break
    else:
        if high_ends is None:
            return
    raise ValueError("a lone surrogate in a string escape")


def parse_json(text):
    """Strict JSON (RFC 8259) as the Rust stores read it: `NaN`, `Infinity`, numbers out of
    range, escapes of lone surrogates and nesting past `MAX_DEPTH` are refused; the last of
    duplicate keys wins."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise ValueError("nested deeper than %d levels" % MAX_DEPTH)
    if isinstance(value, (dict, list)):
        _check_depth(value)
    if "\\u" in text:
        _check_surrogates(text)
    return value


def parse_task(text, what="task"):
    """Parses Task text: `(task, id)`, or `ValueError` saying what is wrong (the caller decides
    whose fault it is). The text itself is what gets stored, never a re-serialization, so
    numbers such as 9007199254740993 and -0.0 survive byte for byte."""
    try:
        task = parse_json(text)
    except ValueError as e:
        raise ValueError("%s is not valid JSON: %s" % (what, e))
    if not isinstance(task, dict):
        raise ValueError("%s must be a JSON object, found %s" % (what, _json_kind(task)))
    if "id" not in task:
        raise ValueError('%s has no "id" member' % what)
    task_id = task["id"]
    if not isinstance(task_id, str):
        raise ValueError('%s "id" must be a string, found %s' % (what, _json_kind(task_id)))
    if task_id == "":
        raise ValueError('%s "id" is an empty string' % what)
    try:
        utf8(task_id)
    except ValueError:
        raise ValueError('%s "id" is not valid Unicode (a lone surrogate)' % what)
    return task, task_id


def normalize_state(state):
    """A Task state in one spelling: `TASK_STATE_INPUT_REQUIRED` and `input-required` agree,
    and so do `canceled`, `cancelled` and `TASK_STATE_CANCELLED` (shared/format/src/state.rs)."""
    bare = state[len("TASK_STATE_") :] if state.startswith("TASK_STATE_") else state
    folded = re.sub("[A-Z]", lambda m: m.group(0).lower(), bare).replace("_", "-")
    return "canceled" if folded == "cancelled" else folded


# --- Version records (shared/format/src/dir/) ---


class Stamp:
    """A file's identity as version records remember it: size and modification time (ns)."""

    __slots__ = ("size", "mtime_ns")

    def __init__(self, size, mtime_ns):
        self.size = size
        self.mtime_ns = mtime_ns

    def __eq__(self, other):
        return isinstance(other, Stamp) and (self.size, self.mtime_ns) == (
            other.size,
            other.mtime_ns,
        )

    def __repr__(self):
        return "Stamp(%d, %d)" % (self.size, self.mtime_ns)


class Record:
    """A parsed version record: the version, the stamp of the Task file it describes and, when
    its save replaced a Task file, that file's stamp (`prev`)."""

    __slots__ = ("version", "stamp", "prev")

    def __init__(self, version, stamp, prev=None):
        self.version = version
        self.stamp = stamp
        self.prev = prev


def record_check(version, stamp, prev=None):
    """The first 8 bytes of the SHA-256 of `"<version> <size> <mtime_ns>"` (and, with a
    previous file, `" <prev_size> <prev_mtime_ns>"`), in hex: a record torn by a concurrent
    in-place write fails it."""
    fields = "%d %d %d" % (version, stamp.size, stamp.mtime_ns)
    if prev is not None:
        fields += " %d %d" % (prev.size, prev.mtime_ns)
    return sha256_hex(fields.encode("ascii"))[:16]


def record_text(version, stamp, prev=None):
    """The text of a version record (format 2), padded with spaces to `RECORD_LEN` bytes
    including the final newline."""
    prev_members = ""
    if prev is not None:
        prev_members = ',"prev_size":%d,"prev_mtime_ns":%d' % (prev.size, prev.mtime_ns)
    line = '{"format":2,"version":%d,"size":%d,"mtime_ns":%d%s,"check":"%s"}' % (
        version,
        stamp.size,
        stamp.mtime_ns,
        prev_members,
        record_check(version, stamp, prev),
    )
    # Always shorter: the longest fields there are make 238 bytes.
    return line + " " * max(0, RECORD_LEN - 1 - len(line)) + "\n"


class _Number:
    """A JSON number kept as its text, so u64 and i64 values survive exactly."""

    __slots__ = ("raw",)

    def __init__(self, raw):
        self.raw = raw


_UINT = re.compile(r"(0|[1-9][0-9]*)\Z")
_INT = re.compile(r"-?(0|[1-9][0-9]*)\Z")


def _u64(value):
    if not isinstance(value, _Number) or not _UINT.match(value.raw):
        return None
    n = int(value.raw)
    return n if n <= U64_MAX else None


def _i64(value):
    if not isinstance(value, _Number) or not _INT.match(value.raw):
        return None
    n = int(value.raw)
    return n if I64_MIN <= n <= I64_MAX else None


def parse_record(text):
    """Parses a version record as the Rust store does (any key order, the last of duplicate
    keys wins, other members ignored): a `Record`, or `None` for anything that is not a
    readable record of format 1 or 2, or whose `check` fails."""
    try:
        value = json.loads(
            text,
            parse_int=_Number,
            parse_float=_Number,
            parse_constant=_refuse_constant,
        )
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    fmt = _u64(value.get("format"))
    if fmt not in (1, 2):
        return None
    version = _u64(value.get("version"))
    size = _u64(value.get("size"))
    mtime_ns = _i64(value.get("mtime_ns"))
    if version is None or size is None or mtime_ns is None:
        return None
    prev = None
    if "prev_size" in value or "prev_mtime_ns" in value:
        prev_size = _u64(value.get("prev_size"))
        prev_mtime_ns = _i64(value.get("prev_mtime_ns"))
        if fmt != 2 or prev_size is None or prev_mtime_ns is None:
            return None
        prev = Stamp(prev_size, prev_mtime_ns)
    stamp = Stamp(size, mtime_ns)
    # Format-1 records written before checks (always by rename, never torn) have none.
    if "check" not in value:
        return Record(version, stamp, prev) if fmt == 1 else None
    if value["check"] != record_check(version, stamp, prev):
        return None
    return Record(version, stamp, prev)


def version_of(record, stamp):
    """The version of a Task file with this stamp, given the record (if any) read before it:
    the record's version if it describes this file; one less if it is the file the record's
    save replaced (that save has not renamed its Task file into place yet); one past it if it
    is another (a writer crashed before writing its record, or one that knows nothing of
    versions wrote it); 1 if there is no record."""
    if record is None:
        return 1
    if record.stamp == stamp:
        return record.version
    if record.prev is not None and record.prev == stamp:
        return record.version - 1 if record.version > 1 else 1
    return record.version + 1 if record.version < U64_MAX else U64_MAX


# --- Timestamps (RFC 3339, as the Rust `time` crate parses them) ---

_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[\x00-\x7f]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]+))?(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))\Z"
)


def _is_leap_year(y):
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def _days_in_month(y, m):
    return [31, 29 if _is_leap_year(y) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]


def _days_from_civil(y, m, d):
    """Days since 1970-01-01 of a proleptic Gregorian date (any year)."""
    yy = y - 1 if m <= 2 else y
    era = yy // 400
    yoe = yy - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z):
    """The civil date `(y, m, d)` of a day number from `_days_from_civil`."""
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if m <= 2 else 0), m, d


def parse_timestamp(text):
    """Parses RFC 3339 text to nanoseconds since the Unix epoch, with exactly the rules of the
    `time` crate the Rust stores use: a 4-digit year, any one-byte date/time separator,
    fraction digits past the ninth ignored, `Z` in either case, offsets up to ±23:59, a leap
    second (`:60`) only as the last second of a month in UTC, read as 23:59:59.999999999.
    `ValueError` says what is wrong."""
    m = _RFC3339.match(text) if isinstance(text, str) else None
    if not m:
        raise ValueError("not of the form YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)")
    year, month, day, hour, minute, second = (int(g) for g in m.group(1, 2, 3, 4, 5, 6))
    nanos = int(m.group(7)[:9].ljust(9, "0")) if m.group(7) else 0
    offset = 0
    if m.group(8):
        oh, om = int(m.group(9)), int(m.group(10))
        if oh > 23:
            raise ValueError("offset hour out of range")
        if om > 59:
            raise ValueError("offset minute out of range")
        offset = (-1 if m.group(8) == "-" else 1) * (oh * 3600 + om * 60)
    leap = second == 60
    if leap:
        second, nanos = 59, 999_999_999
    if not 1 <= month <= 12:
        raise ValueError("month out of range")
    if not 1 <= day <= _days_in_month(year, month):
        raise ValueError("day out of range")
    if hour > 23:
        raise ValueError("hour out of range")
    if minute > 59:
        raise ValueError("minute out of range")
    if second > 59:
        raise ValueError("second out of range")
    secs = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    secs -= offset
    if leap:
        utc_day, in_day = divmod(secs, 86400)
        y, mo, d = _civil_from_days(utc_day)
        if in_day != 86399 or d != _days_in_month(y, mo):
            raise ValueError("a leap second must be the last second of a month in UTC")
    return secs * 1_000_000_000 + nanos


def timestamp_of(task):
    """The status timestamp (`status.timestamp`) of a parsed Task in nanoseconds, or `None`."""
    status = task.get("status")
    if not isinstance(status, dict) or not isinstance(status.get("timestamp"), str):
        return None
    try:
        return parse_timestamp(status["timestamp"])
    except ValueError:
        return None


# --- Listing order and page tokens (shared/format/src/query.rs) ---


class SortKey:
    """A Task's place in list order: the newest status timestamp first, ties by id (by UTF-8
    bytes, which is code point order), Tasks without a timestamp after all others."""

    __slots__ = ("timestamp", "id", "_key")

    def __init__(self, timestamp, task_id):
        self.timestamp = timestamp
        self.id = task_id
        self._key = (timestamp is None, -(timestamp or 0), task_id)

    def __lt__(self, other):
        return self._key < other._key

    def __le__(self, other):
        return self._key <= other._key


def _b64url_encode(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def encode_page_token(key):
    """The opaque page token continuing after `key`: base64url (no padding) of the JSON
    `[timestamp in ns as a decimal string, or null, id]`, the Rust stores' own token, so a
    token from any of the stores works with the others."""
    timestamp = None if key.timestamp is None else str(key.timestamp)
    text = json.dumps([timestamp, key.id], ensure_ascii=False, separators=(",", ":"))
    return _b64url_encode(text.encode("utf-8"))


_B64URL = re.compile(r"[A-Za-z0-9_-]*\Z")
_DECIMAL = re.compile(r"[+-]?[0-9]+\Z")


def decode_page_token(token):
    """Reads a page token made by `encode_page_token`; anything else is `invalid-input`."""
    shown = json.dumps(token[:64], ensure_ascii=False)

    def bad(reason):
        return StoreError("invalid-input", "invalid page token: %s (%s)" % (reason, shown))

    if len(token.encode("utf-8", "surrogatepass")) > MAX_PAGE_TOKEN:
        raise bad("too long")
    # Strict base64url without padding: the canonical spelling of the bytes it decodes to,
    # so a token with other trailing bits or any other character is not one of ours.
    if not _B64URL.match(token) or len(token) % 4 == 1:
        raise bad("not base64url")
    data = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    if _b64url_encode(data) != token:
        raise bad("not base64url")
    try:
        value = parse_json(data.decode("utf-8"))
    except ValueError:
        raise bad("not a token of this store")
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not (value[0] is None or isinstance(value[0], str))
        or not isinstance(value[1], str)
    ):
        raise bad("not a token of this store")
    try:
        utf8(value[1])
    except ValueError:
        raise bad("not a token of this store")
    timestamp = None
    if value[0] is not None:
        if not _DECIMAL.match(value[0]):
            raise bad("bad timestamp")
        timestamp = int(value[0])
        if not -(1 << 127) <= timestamp < 1 << 127:
            raise bad("bad timestamp")
    if value[1] == "":
        raise bad("no id")
    return SortKey(timestamp, value[1])


class Query:
    """A WIT `list-query` with its defaults applied; a malformed one is `invalid-input`."""

    def __init__(self, context_id=None, state=None, after=None, page_size=0, page_token=None):
        self.context_id = context_id
        self.state = None if state is None else normalize_state(state)
        self.after = None
        if after is not None:
            try:
                self.after = parse_timestamp(after)
            except ValueError as e:
                raise StoreError(
                    "invalid-input",
                    "invalid timestamp %s (RFC 3339 expected): %s"
                    % (json.dumps(after[:64], ensure_ascii=False), e),
                )
        size = page_size or 0
        self.limit = DEFAULT_PAGE_SIZE if size == 0 else min(size, MAX_PAGE_SIZE)
        self.cursor = None if page_token is None else decode_page_token(page_token)

    def matches(self, task, timestamp):
        """Whether a parsed Task (with its status timestamp, `None` if none) matches."""
        if self.context_id is not None and task.get("contextId") != self.context_id:
            return False
        if self.state is not None:
            status = task.get("status")
            state = status.get("state") if isinstance(status, dict) else None
            if not isinstance(state, str) or normalize_state(state) != self.state:
                return False
        if self.after is not None and (timestamp is None or timestamp < self.after):
            return False
        return True

    def collector(self):
        return PageCollector(self.limit, self.cursor)


class PageCollector:
    """Cuts one page from Tasks offered in any order, keeping at most `limit + 1` of them (so
    the memory of a listing is bounded by its page), and counts every match for the total."""

    def __init__(self, limit, cursor=None):
        self.limit = limit
        self.cursor = cursor
        self.best = []  # (key, item) in list order
        self.total = 0

    def wants(self, key):
        """Whether an item with this key would be kept."""
        if self.cursor is not None and key <= self.cursor:
            return False
        return len(self.best) <= self.limit or key < self.best[-1][0]

    def offer(self, key, item):
        """Counts a match, and keeps it if it falls within the page."""
        self.total += 1
        if not self.wants(key):
            return
        at = bisect.bisect_left(self.best, key, key=lambda pair: pair[0])
        self.best.insert(at, (key, item))
        if len(self.best) > self.limit + 1:
            self.best.pop()

    def finish(self):
        """The page: `(items, next_page_token, total)`."""
        token = None
        if len(self.best) > self.limit:
            token = encode_page_token(self.best[self.limit - 1][0])
        return [item for _, item in self.best[: self.limit]], token, self.total
