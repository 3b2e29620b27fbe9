"""Unit tests of the Python store's format rules, under the host's python3:

    python3 -m unittest discover -s python/store/tests

The component build runs the same modules inside CPython for WASI; tests/tests/all/python_store.rs
runs these and checks the component against the Rust and JavaScript stores.
"""

import base64
import hashlib
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from toolnexus_store.format import (  # noqa: E402
    PageCollector,
    Query,
    SortKey,
    Stamp,
    StoreError,
    decode_page_token,
    encode_id,
    encode_page_token,
    normalize_state,
    parse_record,
    parse_task,
    parse_timestamp,
    record_text,
    side_names,
    version_of,
)


class FileNames(unittest.TestCase):
    def test_names_follow_the_table_in_the_format_document(self):
        table = [
            ("abc-123", "abc-123.json"),
            ("a/b", "a%2Fb.json"),
            ("a_b", "a_b.json"),
            ("a%2Fb", "a%252Fb.json"),
            ("..", "%2E..json"),
            (".hidden", "%2Ehidden.json"),
            ("a\0b", "a%00b.json"),
            ("é", "%C3%A9.json"),
            ("~", "%7E.json"),
            ("🚀", "%F0%9F%9A%80.json"),
        ]
        for task_id, name in table:
            self.assertEqual(encode_id(task_id), name, task_id)
        self.assertEqual(side_names("a%2Fb.json"), (".~a%2Fb.v", ".~a%2Fb.l"))

    def test_long_ids_get_a_hashed_name_that_never_splits_an_escape(self):
        long = "x" * 10_000
        sha = hashlib.sha256(long.encode()).hexdigest()
        self.assertEqual(encode_id(long), "x" * 185 + "~" + sha + ".json")
        for pad in range(4):
            name = encode_id("y" * pad + "/" * 200)
            prefix = name[: name.index("~")]
            self.assertRegex(prefix, r"^y*(%2F)*$")
            self.assertLessEqual(len(name), 255)

    def test_an_empty_id_is_invalid_input(self):
        with self.assertRaises(StoreError) as caught:
            encode_id("")
        self.assertEqual(caught.exception.tag, "invalid-input")


class TaskText(unittest.TestCase):
    def test_bad_tasks_say_what_is_wrong(self):
        cases = [
            ("nope", "task is not valid JSON"),
            ("[1]", "task must be a JSON object, found array"),
            ('{"status":{}}', 'task has no "id" member'),
            ('{"id":7}', 'task "id" must be a string, found number'),
            ('{"id":""}', 'task "id" is an empty string'),
            ('{"id":"\\ud800"}', "task is not valid JSON: a lone surrogate"),
            ('{"id":"x","n":NaN}', "task is not valid JSON"),
            ("[" * 100_000, "task is not valid JSON"),
            ('{"id":"x","s":"\\udc00"}', "a lone surrogate"),
            ('{"id":"x","n":1e400}', "number out of range"),
            ('{"id":"x","a":' + "[" * 127 + "]" * 127 + "}", "nested deeper than 127 levels"),
        ]
        for text, message in cases:
            with self.assertRaises(ValueError, msg=text[:20]) as caught:
                parse_task(text)
            self.assertIn(message, str(caught.exception), text[:20])

    def test_what_the_rust_parser_accepts_is_accepted(self):
        deepest = '{"id":"x","a":' + "[" * 126 + "]" * 126 + "}"
        for text in (deepest, '{"id":"x","s":"\\ud83d\\ude80 \\\\ud800"}', '{"id":"x","n":1e308}'):
            self.assertEqual(parse_task(text)[1], "x", text[:30])

    def test_the_last_of_duplicate_ids_wins(self):
        self.assertEqual(parse_task('{"id":"a","id":"b"}')[1], "b")

    def test_states_in_every_spelling_agree(self):
        for spelling in ("TASK_STATE_INPUT_REQUIRED", "input-required", "INPUT_REQUIRED"):
            self.assertEqual(normalize_state(spelling), "input-required")
        for spelling in ("canceled", "cancelled", "TASK_STATE_CANCELLED"):
            self.assertEqual(normalize_state(spelling), "canceled")


class VersionRecords(unittest.TestCase):
    def test_a_record_is_the_rust_text_padded_to_256_bytes_and_parses_back(self):
        text = record_text(7, Stamp(17, 1_700_000_000_123_456_789), Stamp(16, -5))
        self.assertEqual(len(text.encode()), 256)
        self.assertTrue(text.endswith(" \n"))
        self.assertTrue(
            text.startswith(
                '{"format":2,"version":7,"size":17,"mtime_ns":1700000000123456789,'
                '"prev_size":16,"prev_mtime_ns":-5,"check":"'
            )
        )
        record = parse_record(text)
        self.assertEqual(
            (record.version, record.stamp, record.prev),
            (7, Stamp(17, 1_700_000_000_123_456_789), Stamp(16, -5)),
        )

    def test_a_torn_or_foreign_record_does_not_parse(self):
        text = record_text(3, Stamp(10, 20))
        self.assertIsNone(parse_record(text.replace('"size":10', '"size":11')))
        self.assertIsNone(parse_record(text[:40]))
        self.assertIsNone(parse_record('{"format":3,"version":1,"size":1,"mtime_ns":1}'))
        self.assertIsNone(parse_record('{"format":1,"version":1.0,"size":1,"mtime_ns":1}'))
        self.assertIsNone(parse_record('{"format":1,"version":18446744073709551616,"size":1,"mtime_ns":1}'))
        # Format 1 without a check: written by a rename, never torn.
        old = parse_record('{"mtime_ns":-1,"size":2,"version":18446744073709551615,"format":1}')
        self.assertEqual((old.version, old.stamp), ((1 << 64) - 1, Stamp(2, -1)))

    def test_the_version_of_a_task_file_follows_its_record(self):
        record = parse_record(record_text(5, Stamp(10, 20), Stamp(9, 19)))
        self.assertEqual(version_of(None, Stamp(1, 1)), 1)
        self.assertEqual(version_of(record, Stamp(10, 20)), 5)
        self.assertEqual(version_of(record, Stamp(9, 19)), 4)
        self.assertEqual(version_of(record, Stamp(11, 20)), 6)


class Timestamps(unittest.TestCase):
    def test_rfc3339_with_the_time_crates_rules(self):
        self.assertEqual(parse_timestamp("1970-01-01T00:00:00Z"), 0)
        self.assertEqual(parse_timestamp("1970-01-01t00:00:01.5+01:00"), -3_598_500_000_000)
        self.assertEqual(parse_timestamp("1970-01-01 00:00:00.1234567891z"), 123_456_789)
        self.assertEqual(
            parse_timestamp("2016-12-31T23:59:60Z"), parse_timestamp("2016-12-31T23:59:59.999999999Z")
        )
        for bad in (
            "2016-12-30T23:59:60Z",
            "2023-02-29T00:00:00Z",
            "2023-01-01T24:00:00Z",
            "2023-01-01T00:00:00+24:00",
            "2023-01-01T00:00:00",
            "23-01-01T00:00:00Z",
        ):
            with self.assertRaises(ValueError, msg=bad):
                parse_timestamp(bad)


class Listing(unittest.TestCase):
    def test_page_tokens_round_trip_and_foreign_ones_are_refused(self):
        for key in (SortKey(None, "a/b"), SortKey(-(10**20), "é"), SortKey(5, "x")):
            back = decode_page_token(encode_page_token(key))
            self.assertEqual((back.timestamp, back.id), (key.timestamp, key.id))
        # The Rust store's own spelling: base64url of `["<ns>","<id>"]`, no padding.
        rust = base64.urlsafe_b64encode(b'["1000","t1"]').rstrip(b"=").decode()
        self.assertEqual(encode_page_token(SortKey(1000, "t1")), rust)
        good = encode_page_token(SortKey(1, "ab"))
        for bad in ("!!", good + "=", good[:-1] + chr(ord(good[-1]) + 1), "W10", "x" * 5000):
            with self.assertRaises(StoreError, msg=bad[:20]) as caught:
                decode_page_token(bad)
            self.assertEqual(caught.exception.tag, "invalid-input")

    def test_pages_are_newest_first_ties_by_id_untimed_last(self):
        keys = [SortKey(None, "z"), SortKey(1, "b"), SortKey(2, "c"), SortKey(1, "a"), SortKey(None, "y")]
        order = []
        cursor = None
        while True:
            page = PageCollector(2, cursor)
            for key in keys:
                page.offer(key, key.id)
            items, token, total = page.finish()
            self.assertEqual(total, 5)
            order += items
            if token is None:
                break
            cursor = decode_page_token(token)
        self.assertEqual(order, ["c", "a", "b", "y", "z"])

    def test_queries_filter_by_context_state_and_time(self):
        query = Query(context_id="c", state="TASK_STATE_WORKING", after="2020-01-01T00:00:00Z")
        task = {"id": "t", "contextId": "c", "status": {"state": "working"}}
        ts = parse_timestamp("2021-01-01T00:00:00Z")
        self.assertTrue(query.matches(task, ts))
        self.assertFalse(query.matches(task, None))
        self.assertFalse(query.matches(dict(task, contextId="d"), ts))
        self.assertFalse(query.matches(dict(task, status={"state": "completed"}), ts))
        self.assertEqual(Query(page_size=0).limit, 50)
        self.assertEqual(Query(page_size=5000).limit, 1000)
        with self.assertRaises(StoreError):
            Query(after="yesterday")


if __name__ == "__main__":
    unittest.main()
