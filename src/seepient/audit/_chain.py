"""The hash chain shared by the writer and the verifier: entry encoding and hashing and a line-by-line walker
(the head anchor's file format is ``anchor.py``).

Both sides must agree byte for byte on what counts as a chained entry and what counts as sealed torn bytes,
so the rules live here once.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from seepient.protocol import canonical_json
from seepient.protocol.errors import AuditError

#: ``prev`` of the first entry. A fixed value (not a per-log secret), so any reader can check the chain.
GENESIS_HASH = "0" * 64
TORN_TAIL_TYPE = "torn_tail"
#: An entry a signing writer adds when it finds records after the last signed checkpoint (see log.py).
UNSIGNED_TAIL_TYPE = "unsigned_tail"

_HEX64_TEXT = re.compile("[0-9a-f]{64}")
# RFC 8785 numbers are IEEE doubles: integers beyond this lose precision and the library refuses them.
MAX_SAFE_INT = 2**53 - 1

# UTF-8 lead bytes F0–F4 begin exactly the characters beyond U+FFFF; an escaped surrogate spells one in ASCII.
_ASTRAL_LEADS = (b"\xf0", b"\xf1", b"\xf2", b"\xf3", b"\xf4")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _compact_json(*, sort_keys: bool) -> Callable[[Any], str]:
    """Compact JSON text with raw UTF-8 and no NaN, from an encoder built once.

    ``JSONEncoder.encode`` rebuilds its C encoder on every call, a measurable share of an append, so the C
    encoder it would build is built here once. It tracks no cycles: a value that contains itself exhausts
    the recursion limit (``RecursionError``) instead of raising ``ValueError``.
    """
    make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if make_encoder is None:
        return json.JSONEncoder(
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
            sort_keys=sort_keys,
            check_circular=False,
        ).encode
    iterencode = make_encoder(
        None, _not_json, json.encoder.encode_basestring, None, ":", ",", sort_keys, False, False
    )

    def encode(value: Any) -> str:
        return "".join(iterencode(value, 0))

    return encode


_line_json = _compact_json(sort_keys=False)
_sorted_json = _compact_json(sort_keys=True)


def anchor_path_for(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + ".anchor")


def lock_path_for(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + ".lock")


def iter_lines(data: bytes) -> Iterator[bytes]:
    """Lines split on ``\\n`` only (each keeps its newline; the last may lack one), as the verifier reads them."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        if end < 0:
            yield data[start:]
            return
        yield data[start : end + 1]
        start = end + 1


def _may_hold_astral(data: bytes) -> bool:
    """Whether JSON text ``data`` may hold a character beyond U+FFFF (or a lone surrogate), decoded or escaped."""
    if not data.isascii() and any(lead in data for lead in _ASTRAL_LEADS):
        return True
    return b"\\u" in data and _SURROGATE_ESCAPE.search(data) is not None


class _Inexact(AuditError):
    """The JSON holds a float or an integer beyond ±(2^53−1), so only RFC 8785 proper can canonicalise it."""


def _refuse_inexact(text: str) -> Any:
    raise _Inexact


def _exact_int(text: str) -> int:
    value = int(text)
    if -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
        return value
    raise _Inexact


# Stateless, so writers in several threads and the verifier share them (as json.loads shares its own).
_FAST_DECODER = json.JSONDecoder(
    parse_float=_refuse_inexact, parse_int=_exact_int, parse_constant=_refuse_inexact
)
_PLAIN_DECODER = json.JSONDecoder()


def parse_json(text: str, data: bytes) -> tuple[Any, bool]:
    """``text`` (whose UTF-8 is ``data``) decoded, and whether ``canonical_bytes`` needs RFC 8785 proper for it.

    ``json.dumps(sort_keys=True, ensure_ascii=False)`` with compact separators gives RFC 8785's bytes when
    the value has no floats, no integers beyond ±(2^53−1) and no character beyond U+FFFF: strings are
    escaped alike (only ``"``, ``\\`` and U+0000–U+001F, as ``\\b \\t \\n \\f \\r`` or lowercase ``\\u00hh``;
    everything else, DEL and U+2028 included, as raw UTF-8; RFC 8785 §3.2.2.2), integers print alike
    (§3.2.2.3), and keys sort alike because code point order equals UTF-16 code unit order (§3.2.3) until a
    surrogate pair meets U+E000–U+FFFF. Anything else goes through ``canonical_json``. The writer and the
    verifier both hash through here, so they cannot disagree, and a 100k-record log verifies in seconds.
    """
    try:
        return _FAST_DECODER.decode(text), _may_hold_astral(data)
    except _Inexact:
        return _PLAIN_DECODER.decode(text), True


def canonical_bytes(value: Any, exact: bool) -> bytes:
    """RFC 8785 bytes of a value ``parse_json`` returned with ``exact`` (``ValueError`` if it has none)."""
    if exact:
        return canonical_json(value)
    return _sorted_json(value).encode("utf-8")


def decode_line(body: bytes, line_no: int) -> ChainedEntry | _Bad:
    """One line's body (without its newline) as a self-consistent entry, or why it is not one."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return _Bad(f"line {line_no} is not UTF-8 text")
    try:
        obj, exact = parse_json(text, body)
    except json.JSONDecodeError:
        return _Bad(f"line {line_no} is not valid JSON" if body.strip() else f"line {line_no} is empty")
    if not isinstance(obj, dict):
        return _Bad(f"line {line_no} is not a JSON object")
    seq, prev, stated = obj.get("seq"), obj.get("prev"), obj.get("hash")
    if type(seq) is not int or not isinstance(prev, str) or not isinstance(stated, str):
        return _Bad(f"line {line_no} is not an audit entry (it lacks a numeric seq, a prev or a hash)")
    # Re-serialising is cheap and equal for every line Seepient wrote; only a differing line pays for the
    # duplicate-key scan (json keeps the last duplicate, other readers the first: they would disagree).
    reformatted = json.dumps(obj, separators=(",", ":"), ensure_ascii=False) != text
    if reformatted and _has_duplicate_key(text):
        return _Bad(
            f"line {line_no} (seq {seq}) names one key twice, so readers could disagree on its content"
        )
    try:
        canonical = canonical_bytes({k: v for k, v in obj.items() if k != "hash"}, exact)
    except ValueError as error:
        return _Bad(f"line {line_no} (seq {seq}) cannot be canonicalised ({error})")
    entry_type = obj.get("type")
    entry = ChainedEntry(
        seq=seq,
        prev=prev,
        hash=stated,
        type=entry_type if isinstance(entry_type, str) else None,
        line_no=line_no,
        fields=obj,
        reformatted=reformatted,
    )
    if hashlib.sha256(canonical).hexdigest() != stated:
        return _Bad(f"line {line_no} (seq {seq}) was edited: its content no longer matches its hash", entry)
    return entry


class EncodedFields(NamedTuple):
    """A record's fields encoded once, before any lock is taken: the line's middle and the value hashed."""

    #: the fields' members as the line holds them (insertion order, raw UTF-8), without the braces
    members: bytes
    #: the fields as a reader parses them back from the line: what the entry hash covers
    value: dict[str, Any]
    #: canonicalise with RFC 8785 proper (floats, characters beyond U+FFFF) instead of the fast path
    exact: bool


def encode_fields(fields: dict[str, Any]) -> EncodedFields:
    """Encode an entry's fields other than ``seq``/``prev``; ``ValueError``/``TypeError`` if not RFC 8785 JSON."""
    text = _line_json(fields)
    data = text.encode("utf-8")  # lone surrogates fail here, as RFC 8785 requires
    try:
        # The text was just generated, so it has no surrounding whitespace to skip: scan it directly.
        value, exact = _FAST_DECODER.scan_once(text, 0)[0], _may_hold_astral(data)
    except _Inexact:
        value, exact = _PLAIN_DECODER.decode(text), True
    if value != fields:
        # json.dumps quietly writes tuples as arrays and turns number keys into strings. Hashing what a
        # reader parses back keeps writer and verifier in step; the original must still canonicalise (RFC
        # 8785 refuses non-string keys) to the same bytes, or the line would not say what the caller meant.
        if canonical_json(fields) != canonical_json(value):
            raise ValueError("its JSON text does not read back as the same value")
    elif exact:
        canonical_json(value)  # refuses integers beyond ±(2^53−1) now, before anything is written
    return EncodedFields(data[1:-1], value, exact)


def encode_entry(seq: int, prev: str, fields: EncodedFields) -> tuple[bytes, str]:
    """The line of entry ``seq`` chained to ``prev`` (``seq`` and ``prev`` first, ``hash`` last) and its hash.

    ``prev`` is always a hex digest (the genesis value or a hash this module computed or checked), so it is
    written without escaping.
    """
    digest = hashlib.sha256(
        canonical_bytes({"seq": seq, "prev": prev, **fields.value}, fields.exact)
    ).hexdigest()
    if fields.members:
        return b'{"seq":%d,"prev":"%s",%s,"hash":"%s"}\n' % (
            seq,
            prev.encode("ascii"),
            fields.members,
            digest.encode("ascii"),
        ), digest
    return b'{"seq":%d,"prev":"%s","hash":"%s"}\n' % (
        seq,
        prev.encode("ascii"),
        digest.encode("ascii"),
    ), digest


def encode_line(entry_without_hash: dict[str, Any]) -> tuple[bytes, str]:
    """The line written for an entry whose first keys are ``seq`` and ``prev``, and its hash."""
    seq, prev = entry_without_hash["seq"], entry_without_hash["prev"]
    if type(seq) is not int or not isinstance(prev, str) or _HEX64_TEXT.fullmatch(prev) is None:
        raise ValueError("an entry's seq is an integer and its prev a SHA-256 hex digest")
    fields = {k: v for k, v in entry_without_hash.items() if k not in ("seq", "prev")}
    return encode_entry(seq, prev, encode_fields(fields))


@dataclass(frozen=True)
class ChainedEntry:
    seq: int
    prev: str
    hash: str
    type: str | None
    line_no: int
    fields: dict[str, Any]
    #: the line's bytes differ from how Seepient writes it (whitespace, escapes), though its content hashes right
    reformatted: bool = False


@dataclass(frozen=True)
class ChainProblem:
    """Where the chain stops being trustworthy: ``seq`` is the first bad sequence number."""

    seq: int
    sentence: str


@dataclass(frozen=True)
class _Bad:
    """A line that is not a well-formed, self-consistent entry, and why."""

    reason: str
    entry: ChainedEntry | None = None


def _has_duplicate_key(text: str) -> bool:
    found = False

    def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal found
        if len({key for key, _ in pairs}) != len(pairs):
            found = True
        return dict(pairs)

    json.loads(text, object_pairs_hook=_pairs)
    return found


@dataclass
class _Region:
    """Bytes after the last chained entry that are not themselves chained entries (torn or foreign lines)."""

    problem: ChainProblem
    first_line: int
    lines: int = 0
    length: int = 0
    ends_with_newline: bool = True
    digest: Any = field(default_factory=hashlib.sha256)

    def add(self, raw: bytes) -> None:
        self.digest.update(raw)
        self.length += len(raw)
        self.lines += 1
        self.ends_with_newline = raw.endswith(b"\n")


@dataclass
class WalkerState:
    last_seq: int = 0
    last_hash: str = GENESIS_HASH
    last_prev: str | None = None


class ChainWalker:
    """Feeds raw lines (each with its newline, the last maybe without) and follows the chain.

    A line that does not continue the chain opens a *region*; the region ends only at a ``torn_tail``
    entry that continues the chain and whose ``torn_sha256``/``torn_length`` match the region's exact bytes.
    A region still open at the end is reported by ``finish``; its problem names the first bad sequence number.
    """

    def __init__(self, state: WalkerState | None = None) -> None:
        self.state = state or WalkerState()
        self.region: _Region | None = None
        self.sealed: list[tuple[ChainedEntry, int, int]] = []
        self.reformatted: list[int] = []

    def feed(self, raw: bytes, line_no: int) -> ChainedEntry | None:
        """The entry this line adds to the chain, or None when the line joins (or opens) a region."""
        body = raw[:-1] if raw.endswith(b"\n") else raw
        decoded = decode_line(body, line_no) if raw.endswith(b"\n") else None
        state = self.state
        if self.region is not None:
            if (
                isinstance(decoded, ChainedEntry)
                and self._continues(decoded)
                and decoded.type == TORN_TAIL_TYPE
            ):
                if self._seals(decoded, self.region):
                    self.sealed.append((decoded, self.region.first_line, self.region.length))
                    self.region = None
                    return self._accept(decoded)
                self.region.problem = ChainProblem(
                    decoded.seq,
                    f"lines {self.region.first_line}–{line_no - 1} were sealed by the torn_tail record "
                    f"seq {decoded.seq} (line {line_no}), but those bytes changed after sealing",
                )
            self.region.add(raw)
            return None
        if isinstance(decoded, ChainedEntry) and self._continues(decoded) and decoded.type != TORN_TAIL_TYPE:
            return self._accept(decoded)
        expected = state.last_seq + 1
        if decoded is None:
            problem = ChainProblem(
                expected,
                f"line {line_no} ends without a newline: it is an incomplete record ({len(raw)} bytes)",
            )
        else:
            problem = self._classify(decoded, expected, line_no)
        self.region = _Region(problem=problem, first_line=line_no)
        self.region.add(raw)
        return None

    def finish(self) -> ChainProblem | None:
        return None if self.region is None else self.region.problem

    def _continues(self, entry: ChainedEntry) -> bool:
        return entry.seq == self.state.last_seq + 1 and entry.prev == self.state.last_hash

    @staticmethod
    def _seals(entry: ChainedEntry, region: _Region) -> bool:
        return (
            entry.fields.get("torn_length") == region.length
            and entry.fields.get("torn_sha256") == region.digest.hexdigest()
        )

    def _accept(self, entry: ChainedEntry) -> ChainedEntry:
        if entry.reformatted:
            self.reformatted.append(entry.line_no)
        self.state = WalkerState(last_seq=entry.seq, last_hash=entry.hash, last_prev=entry.prev)
        return entry

    def _classify(self, decoded: ChainedEntry | _Bad, expected: int, line_no: int) -> ChainProblem:
        if isinstance(decoded, _Bad):
            return ChainProblem(expected, decoded.reason)
        state = self.state
        seq = decoded.seq
        if decoded.type == TORN_TAIL_TYPE and self._continues(decoded):
            return ChainProblem(
                seq, f"line {line_no} is a torn_tail record (seq {seq}) with no torn bytes before it"
            )
        if seq == state.last_seq and decoded.prev == state.last_prev:
            if decoded.hash == state.last_hash:
                return ChainProblem(expected, f"line {line_no} repeats record {seq} (a copied line)")
            return ChainProblem(
                seq,
                f"two different records claim seq {seq} (lines {line_no - 1} and {line_no}): one was inserted",
            )
        if seq == expected:
            if seq == 1:
                return ChainProblem(
                    1, f"the first record (line {line_no}) does not start from the genesis value"
                )
            return ChainProblem(
                seq - 1,
                f"record {seq} (line {line_no}) does not chain to record {seq - 1}: record {seq - 1} was "
                f"changed and its hash recomputed (or record {seq}'s link was rewritten)",
            )
        if seq > expected:
            if expected == 1:
                missing = "record 1 is" if seq == 2 else f"records 1–{seq - 1} are"
                return ChainProblem(
                    1, f"the log starts at seq {seq}: {missing} missing (the head was deleted)"
                )
            return ChainProblem(
                expected,
                f"line {line_no} holds seq {seq} where {expected} was expected: record {expected} was deleted "
                "or records were reordered",
            )
        return ChainProblem(
            expected,
            f"line {line_no} holds seq {seq} where {expected} was expected: a record was inserted, copied "
            "or moved",
        )
