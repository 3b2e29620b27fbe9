#!/usr/bin/env python3
"""Writes the project's test vector Tasks into tests/vectors/tasks/.

Deterministic: the same bytes on every run and every Python 3 version. No
randomness is used; every "random-looking" value comes from a SHA-256 hash
chain over a fixed seed. Standard library only.

Run from anywhere:  python3 tests/vectors/generate.py
"""

import base64
import hashlib
import json
import os

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tasks")


# ---------------------------------------------------------------------------
# Deterministic helpers


class HashChain:
    """A byte stream from iterated SHA-256 over a fixed seed."""

    def __init__(self, seed):
        self.state = hashlib.sha256(seed.encode("utf-8")).digest()
        self.buf = b""

    def take(self, n):
        chunks = [self.buf]
        have = len(self.buf)
        while have < n:
            self.state = hashlib.sha256(self.state).digest()
            chunks.append(self.state)
            have += len(self.state)
        data = b"".join(chunks)
        out, self.buf = data[:n], data[n:]
        return out

    def below(self, n):
        """An integer in [0, n); the modulo bias is irrelevant here."""
        return int.from_bytes(self.take(4), "big") % n

    def choice(self, seq):
        return seq[self.below(len(seq))]


def uuid_like(label):
    """A version-4-shaped UUID derived from a label (stable across runs)."""
    h = bytearray(hashlib.sha256(label.encode("utf-8")).digest()[:16])
    h[6] = (h[6] & 0x0F) | 0x40
    h[8] = (h[8] & 0x3F) | 0x80
    x = h.hex()
    return "%s-%s-%s-%s-%s" % (x[:8], x[8:12], x[12:16], x[16:20], x[20:])


def timestamp(seconds_after_base):
    """ISO 8601 UTC time, counted from 2025-06-01T09:00:00Z (no clock is read)."""
    s = 9 * 3600 + seconds_after_base
    day, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return "2025-06-%02dT%02d:%02d:%02d.000Z" % (1 + day, h, m, s)


def write_json(name, doc, indent=2):
    text = json.dumps(doc, indent=indent, ensure_ascii=False) + "\n"
    write_text(name, text)


def write_text(name, text):
    with open(os.path.join(OUT_DIR, name), "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


# ---------------------------------------------------------------------------
# The vectors


def minimal():
    return {"id": "task-minimal", "status": {"state": "submitted"}}


def completed_with_artifact():
    ctx = uuid_like("ctx-artifact")
    return {
        "id": "task-artifact",
        "contextId": ctx,
        "kind": "task",
        "status": {"state": "completed", "timestamp": timestamp(42)},
        "artifacts": [
            {
                "artifactId": uuid_like("artifact-summary"),
                "name": "summary",
                "parts": [
                    {
                        "kind": "text",
                        "text": "The quarterly report has been summarised in three bullet points.",
                    }
                ],
            }
        ],
    }


def a2a_v03_task():
    task_id = uuid_like("task-a2a-v03")
    ctx = uuid_like("ctx-a2a-v03")

    def msg(n, role, parts):
        return {
            "kind": "message",
            "messageId": uuid_like("v03-msg-%d" % n),
            "role": role,
            "parts": parts,
            "contextId": ctx,
            "taskId": task_id,
        }

    return {
        "id": task_id,
        "contextId": ctx,
        "kind": "task",
        "status": {
            "state": "working",
            "timestamp": timestamp(300),
            "message": msg(
                4,
                "agent",
                [{"kind": "text", "text": "Fetching the remaining flight options…"}],
            ),
        },
        "history": [
            msg(
                1,
                "user",
                [{"kind": "text", "text": "Find me a flight from Lisbon to Oslo next Friday."}],
            ),
            msg(
                2,
                "agent",
                [
                    {"kind": "text", "text": "I found two candidates so far."},
                    {
                        "kind": "data",
                        "data": {
                            "query": {"from": "LIS", "to": "OSL", "date": "2025-06-13"},
                            "candidates": [
                                {
                                    "carrier": "XA",
                                    "legs": [
                                        {"from": "LIS", "to": "CPH", "departs": "07:05"},
                                        {"from": "CPH", "to": "OSL", "departs": "12:40"},
                                    ],
                                    "price": {"amount": 212.5, "currency": "EUR"},
                                    "refundable": False,
                                },
                                {
                                    "carrier": "YB",
                                    "legs": [{"from": "LIS", "to": "OSL", "departs": "10:15"}],
                                    "price": {"amount": 348, "currency": "EUR"},
                                    "refundable": True,
                                    "notes": None,
                                },
                            ],
                            "filters": {"maxStops": 1, "cabins": ["economy", "premium"], "tags": []},
                            "page": {"size": 2, "next": None},
                        },
                        "metadata": {"schema": "flight-search/v2"},
                    },
                ],
            ),
            msg(
                3,
                "user",
                [{"kind": "text", "text": "Only direct flights, please."}],
            ),
        ],
        "metadata": {
            "source": {"channel": "web", "client": {"name": "planner", "version": "3.4.1"}},
            "trace": {"spanIds": ["a1b2c3", "d4e5f6"], "sampled": True},
            "priority": 2,
            "labels": {},
        },
    }


def a2a_v1_task():
    task_id = uuid_like("task-a2a-v1")
    ctx = uuid_like("ctx-a2a-v1")

    def msg(n, role, parts):
        return {
            "messageId": uuid_like("v1-msg-%d" % n),
            "contextId": ctx,
            "taskId": task_id,
            "role": role,
            "parts": parts,
        }

    return {
        "id": task_id,
        "contextId": ctx,
        "status": {
            "state": "TASK_STATE_COMPLETED",
            "timestamp": timestamp(900),
            "message": msg(3, "ROLE_AGENT", [{"text": "The translation is ready."}]),
        },
        "history": [
            msg(
                1,
                "ROLE_USER",
                [
                    {"text": "Translate the attached paragraph into German."},
                    {
                        "data": {
                            "paragraph": "Persistence keeps tasks alive across restarts.",
                            "options": {"formality": "formal", "glossary": ["task", "store"]},
                        },
                        "mediaType": "application/json",
                    },
                ],
            ),
            msg(2, "ROLE_AGENT", [{"text": "Working on it."}]),
        ],
        "artifacts": [
            {
                "artifactId": uuid_like("v1-artifact-translation"),
                "name": "translation",
                "description": "German translation of the paragraph",
                "parts": [
                    {"text": "Persistenz hält Aufgaben über Neustarts hinweg am Leben."},
                    {"data": {"sourceLanguage": "en", "targetLanguage": "de", "confidence": 0.97}},
                ],
                "metadata": {"model": {"family": "example", "revision": 7}},
            }
        ],
        "metadata": {"tenant": "acme", "tags": ["translation", "de"]},
    }


def unicode_task():
    # CJK, non-BMP emoji, combining marks, RTL (Hebrew, Arabic), a ZWJ sequence.
    task_id = "task-ユニコード-任务-🚀-e\u0301-שלום-👩\u200d💻"
    return {
        "id": task_id,
        "contextId": "контекст-上下文-🌍",
        "kind": "task",
        "status": {"state": "completed", "timestamp": timestamp(60)},
        "history": [
            {
                "kind": "message",
                "messageId": "msg-メッセージ-1",
                "role": "user",
                "parts": [
                    {
                        "kind": "text",
                        "text": "こんにちは! Ça va? Straße, naïve café (cafe\u0301), 🎉🦀𝄞, مرحبا بالعالم, שלום עולם",
                    }
                ],
            },
            {
                "kind": "message",
                "messageId": "msg-メッセージ-2",
                "role": "agent",
                "parts": [
                    {
                        "kind": "data",
                        "data": {
                            "名前": "東京タワー",
                            "город": "Москва",
                            "עיר": "ירושלים",
                            "مدينة": "القاهرة",
                            "emoji🔑": "👨\u200d👩\u200d👧\u200d👦",
                            "Z\u0351\u0300a\u0306l\u0308g\u0327o": "Z\u0351\u0300a\u0306l\u0308g\u0327o",
                            "flags🏳️\u200d🌈": ["🇵🇹", "🇯🇵", "🇧🇷"],
                            "math": "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ∑∞≠≤",
                            "bidi": "abc \u202bעברית\u202c def",
                        },
                    }
                ],
            },
        ],
        "artifacts": [
            {
                "artifactId": "成果物-α",
                "name": "résumé-履歴書",
                "parts": [{"kind": "text", "text": "Ünïcödé ✓ 한국어 ไทย हिन्दी Ελληνικά"}],
            }
        ],
        "metadata": {"ключ": "значение", "鍵": "値", "🔐": "🗝️"},
    }


def file_part():
    # 48 KiB of bytes give exactly 64 KiB of base64 text.
    raw = HashChain("toolnexus file-part vector").take(48 * 1024)
    b64 = base64.b64encode(raw).decode("ascii")
    digest = hashlib.sha256(raw).hexdigest()
    return {
        "id": "task-file-part",
        "contextId": uuid_like("ctx-file-part"),
        "kind": "task",
        "status": {"state": "completed", "timestamp": timestamp(120)},
        "artifacts": [
            {
                "artifactId": uuid_like("artifact-file-part"),
                "name": "payload",
                "parts": [
                    {"kind": "text", "text": "Here is the generated binary payload."},
                    {
                        "kind": "file",
                        "file": {
                            "name": "payload.bin",
                            "mimeType": "application/octet-stream",
                            "bytes": b64,
                        },
                    },
                ],
                "metadata": {"sha256": digest, "length": len(raw)},
            }
        ],
    }


WORDS = (
    "store task agent context message artifact status history part text data "
    "file bytes json version save load update cancel resume retry stream event "
    "queue worker lease timeout deadline checkpoint snapshot journal replay order "
    "budget quota token prompt answer summary draft review approve reject detail "
    "report chart table row column index cursor page filter sort merge split "
    "deploy build test bench profile trace metric log alert incident fix patch"
).split()

USER_OPENERS = [
    "Could you", "Please", "Now", "Next,", "Also", "Can you", "I need you to",
    "Quickly", "Before that,", "After that,",
]
AGENT_OPENERS = [
    "Done:", "Sure, I", "Working on it; I", "Understood. I", "Here is what I found:",
    "I have", "Update:", "Result:", "Noted, and I", "Completed step:",
]


def sentence(rng, words):
    return " ".join(rng.choice(WORDS) for _ in range(words))


def long_history():
    task_id = "task-long-history"
    ctx = uuid_like("ctx-long-history")
    rng = HashChain("toolnexus long-history vector")
    history = []
    for i in range(1000):
        role = "user" if i % 2 == 0 else "agent"
        opener = rng.choice(USER_OPENERS if role == "user" else AGENT_OPENERS)
        n_sentences = 1 + rng.below(2)
        body = ". ".join(sentence(rng, 5 + rng.below(8)) for _ in range(n_sentences))
        text = "%s %s (step %d)." % (opener, body, i + 1)
        history.append(
            {
                "kind": "message",
                "messageId": uuid_like("long-history-msg-%d" % i),
                "role": role,
                "parts": [{"kind": "text", "text": text}],
                "contextId": ctx,
                "taskId": task_id,
            }
        )
    return {
        "id": task_id,
        "contextId": ctx,
        "kind": "task",
        "status": {"state": "working", "timestamp": timestamp(3600)},
        "history": history,
        "metadata": {"messages": len(history)},
    }


# Written as literal text so that the exact spelling of every number and escape
# is kept (json.dumps would rewrite 1.5E+300, \u0001, "\/", "\ud83d\ude00", ...).
# Stores must give back a document equal as JSON when both are parsed with
# arbitrary precision. The surrogate pair is valid; there is no lone surrogate.
NUMBERS_AND_ESCAPES = r"""{
  "id": "task-numbers-and-escapes",
  "status": {"state": "completed", "timestamp": "2025-06-01T09:00:00.000Z"},
  "numbers": {
    "beyondDoublePrecision": 9007199254740993,
    "maxSafeInteger": 9007199254740991,
    "thirtyDigits": 123456789012345678901234567890,
    "negativeBig": -98765432109876543210987654321,
    "negativeZero": -0.0,
    "zero": 0,
    "tiny": 1e-300,
    "huge": 1.5E+300,
    "oneTenth": 0.1,
    "negative": -42,
    "negativeFraction": -3.14159265358979323846264338327950288,
    "exponentNoSign": 2E10,
    "longFraction": 0.30000000000000004,
    "list": [1, -1, 1.0, 1e0, 100e-2, 9223372036854775807, 18446744073709551616]
  },
  "strings": {
    "control": "\u0001 start\tTab\nNewline\rCarriage\bBackspace\fFormfeed\u001f end",
    "nul": "before\u0000after",
    "quote": "she said \"hi\"",
    "backslash": "C:\\temp\\new",
    "slash": "a\/b and a/b",
    "surrogatePair": "smile \ud83d\ude00 and raw 😀",
    "bmpEscapes": "\u00e9\u4e2d\u200d\uFEFF\u2028\u2029",
    "empty": ""
  },
  "key \"with\" \\ escapes\n\tand \u00fcnicode": true,
  "": "the empty key",
  "nested": [[[]], {}, [null, false, true], {"a": {"b": {"c": [0.5, -0.5e-5]}}}]
}
"""


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    write_json("minimal.json", minimal())
    write_json("completed-with-artifact.json", completed_with_artifact())
    write_json("a2a-v03-task.json", a2a_v03_task())
    write_json("a2a-v1-task.json", a2a_v1_task())
    write_json("unicode.json", unicode_task())
    write_json("file-part.json", file_part())
    # Indent 1 keeps the ~360 KiB total with realistic message lengths.
    write_json("long-history.json", long_history(), indent=1)
    write_text("numbers-and-escapes.json", NUMBERS_AND_ESCAPES)


if __name__ == "__main__":
    main()
