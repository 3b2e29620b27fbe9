"""Unit tests of the Python store over a real directory of the host (the component runs the same
code over the directory its host preopens). Run with the format tests:

    python3 -m unittest discover -s python/store/tests
"""

import json
import os
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from toolnexus_store import Query, Settings, Store, StoreError  # noqa: E402
from toolnexus_store.format import parse_record  # noqa: E402


def task(task_id, **members):
    return json.dumps(dict({"id": task_id}, **members), separators=(",", ":"))


class StoreTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        self.store = Store(self.root)

    def tearDown(self):
        self.tmp.cleanup()

    def files(self):
        return sorted(os.listdir(self.root))

    def assert_error(self, tag, call, *args):
        with self.assertRaises(StoreError) as caught:
            call(*args)
        self.assertEqual(caught.exception.tag, tag, caught.exception.message)
        return caught.exception


class Versions(StoreTest):
    def test_saves_count_versions_get_returns_text_and_delete_forgets(self):
        self.assertIsNone(self.store.get("a/b"))
        self.assertEqual(self.store.save(task("a/b", n=1), ("any",)), 1)
        self.assertEqual(self.store.save(task("a/b", n=2), ("any",)), 2)
        self.assertEqual(self.store.get("a/b"), (task("a/b", n=2), 2))
        self.assertEqual(self.files(), [".~a%2Fb.v", "a%2Fb.json"])
        with open(os.path.join(self.root, ".~a%2Fb.v")) as f:
            record = parse_record(f.read())
        self.assertEqual(record.version, 2)
        self.assertEqual(record.stamp.size, len(task("a/b", n=2)))
        self.assertTrue(self.store.delete("a/b"))
        self.assertFalse(self.store.delete("a/b"))
        self.assertIsNone(self.store.get("a/b"))
        self.assertEqual(self.files(), [])

    def test_text_is_stored_exactly_as_given(self):
        text = '{ "id" : "t", "n": 9007199254740993, "z": -0.0 }'
        self.store.save(text, ("any",))
        self.assertEqual(self.store.get("t")[0], text)

    def test_conditional_saves_hold_or_conflict_and_a_conflict_changes_nothing(self):
        self.assertEqual(self.store.save(task("t", n=1), ("absent",)), 1)
        before = self.files()
        error = self.assert_error("conflict", self.store.save, task("t", n=2), ("absent",))
        self.assertEqual(error.current, 1)
        error = self.assert_error("conflict", self.store.save, task("t", n=2), ("version", 7))
        self.assertEqual(error.current, 1)
        self.assertIn("expected version 7, found version 1", error.message)
        self.assertEqual(self.store.save(task("t", n=2), ("version", 1)), 2)
        error = self.assert_error("conflict", self.store.save, task("u"), ("version", 1))
        self.assertIsNone(error.current)
        self.assertEqual(self.files(), before)

    def test_a_task_file_written_by_a_store_without_versions_is_one_past_the_record(self):
        self.store.save(task("t", n=1), ("any",))
        with open(os.path.join(self.root, "t.json"), "w") as f:
            f.write(task("t", n="foreign writer"))
        self.assertEqual(self.store.get("t")[1], 2)
        self.assertEqual(self.store.save(task("t", n=3), ("version", 2)), 3)

    def test_bad_input_is_invalid_input_and_writes_nothing(self):
        for text in ("nope", "[1]", '{"id":7}', '{"id":""}'):
            self.assert_error("invalid-input", self.store.save, text, ("any",))
        self.assert_error("invalid-input", self.store.get, "")
        self.assertEqual(self.files(), [])

    def test_files_that_are_not_tasks_are_corrupt_never_a_miss(self):
        os.mkdir(os.path.join(self.root, "dir.json"))
        os.symlink("/etc/passwd", os.path.join(self.root, "link.json"))
        os.mkfifo(os.path.join(self.root, "fifo.json"))
        with open(os.path.join(self.root, "other.json"), "w") as f:
            f.write(task("not-other"))
        with open(os.path.join(self.root, "bad.json"), "wb") as f:
            f.write(b'{"id":"bad","x":"\xff"}')
        for task_id, reason in [
            ("dir", "is a directory"),
            ("link", "symbolic link"),
            ("fifo", "not a regular file"),
            ("other", 'holds task "not-other", not "other"'),
            ("bad", "not UTF-8"),
        ]:
            error = self.assert_error("corrupt", self.store.get, task_id)
            self.assertIn("/%s.json" % task_id, error.message)
            self.assertIn(reason, error.message)
        error = self.assert_error("io", self.store.save, task("dir"), ("any",))
        self.assertIn("/dir.json", error.message)
        self.assert_error("corrupt", self.store.list, Query())

    def test_a_host_that_checks_answers_gets_the_text_unscanned(self):
        settings = Settings()
        settings.configure([("answers-checked", "true")])
        with open(os.path.join(self.root, "t.json"), "w") as f:
            f.write("not json")
        self.assertEqual(Store(self.root, settings).get("t"), ("not json", 1))


class Locks(StoreTest):
    def lease(self, ms):
        settings = Settings()
        settings.configure([("lock-lease-ms", str(ms))])
        return Store(self.root, settings)

    def test_a_live_lock_makes_a_save_fail_after_three_leases_changing_nothing(self):
        store = self.lease(50)
        store.save(task("t", n=1), ("any",))
        lock = os.path.join(self.root, ".~t.l")
        stop = threading.Event()

        def keep_fresh():
            while not stop.is_set():
                os.utime(lock)
                stop.wait(0.01)

        with open(lock, "w"):
            pass
        keeper = threading.Thread(target=keep_fresh)
        keeper.start()
        try:
            error = self.assert_error("io", store.save, task("t", n=2), ("any",))
        finally:
            stop.set()
            keeper.join()
        self.assertIn("cannot lock /.~t.l", error.message)
        self.assertEqual(store.get("t")[0], task("t", n=1))

    def test_a_lock_older_than_the_lease_is_broken_and_the_save_goes_ahead(self):
        store = self.lease(50)
        lock = os.path.join(self.root, ".~t.l")
        with open(lock, "w") as f:
            f.write("left by a crashed writer")
        old = time.time() - 10
        os.utime(lock, (old, old))
        self.assertEqual(store.save(task("t"), ("absent",)), 1)
        self.assertEqual(self.files(), [".~t.v", "t.json"])

    def test_the_first_call_sweeps_stale_temp_files_and_locks_keeping_young_ones(self):
        old = time.time() - 2 * 3600
        for name in (".tmp-old", ".~stale.l"):
            with open(os.path.join(self.root, name), "w"):
                pass
            os.utime(os.path.join(self.root, name), (old, old))
        with open(os.path.join(self.root, ".tmp-young"), "w"):
            pass
        self.store.get("anything")
        self.assertEqual(self.files(), [".tmp-young"])

    def test_writers_racing_one_version_have_one_winner(self):
        self.store.save(task("t", n=0), ("any",))
        results = []

        def racer(i):
            store = Store(self.root)
            try:
                results.append(store.save(task("t", n=i), ("version", 1)))
            except StoreError as e:
                results.append(e.tag)

        threads = [threading.Thread(target=racer, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(sorted(results, key=str), [2] + ["conflict"] * 7)


class Listing(StoreTest):
    def test_pages_walk_every_match_once_newest_first(self):
        for i in range(12):
            status = {"state": "working" if i % 2 else "completed"}
            if i < 10:
                status["timestamp"] = "2026-01-01T00:00:%02dZ" % i
            self.store.save(task("t%02d" % i, contextId="c", status=status), ("any",))
        seen = []
        token = None
        while True:
            texts, token, total = self.store.list(Query(page_size=5, page_token=token))
            self.assertEqual(total, 12)
            seen += [json.loads(t)["id"] for t in texts]
            if token is None:
                break
        self.assertEqual(seen, ["t%02d" % i for i in range(9, -1, -1)] + ["t10", "t11"])
        texts, _, total = self.store.list(Query(state="TASK_STATE_WORKING"))
        self.assertEqual(total, 6)
        self.assert_error("invalid-input", Query, None, None, None, 0, "junk")


class PushConfigs(StoreTest):
    def test_configs_are_saved_listed_by_id_and_go_with_their_task(self):
        config = lambda i: json.dumps({"id": i, "url": "https://example.com/" + i})  # noqa: E731
        self.store.save(task("a/b"), ("any",))
        for config_id in ("c2", "c/1", "B"):
            self.store.set_push_config("a/b", config(config_id))
        self.assertEqual(
            sorted(os.listdir(os.path.join(self.root, ".push", "a%2Fb"))),
            ["B.json", "c%2F1.json", "c2.json"],
        )
        self.assertEqual(
            self.store.list_push_configs("a/b"), [config("B"), config("c/1"), config("c2")]
        )
        self.assertEqual(self.store.get_push_config("a/b", "c2"), config("c2"))
        self.assertTrue(self.store.delete_push_config("a/b", "c2"))
        self.assertFalse(self.store.delete_push_config("a/b", "c2"))
        self.assertIsNone(self.store.get_push_config("a/b", "c2"))
        self.assertTrue(self.store.delete("a/b"))
        self.assertEqual(self.store.list_push_configs("a/b"), [])
        self.assertEqual(os.listdir(os.path.join(self.root, ".push")), [])

    def test_bad_configs_are_invalid_input(self):
        for task_id, text in [("", '{"id":"c"}'), ("t", '{"id":""}'), ("t", "[]")]:
            self.assert_error("invalid-input", self.store.set_push_config, task_id, text)
        big = json.dumps({"id": "c", "pad": "x" * 70_000})
        self.assert_error("invalid-input", self.store.set_push_config, "t", big)
        self.assertFalse(os.path.exists(os.path.join(self.root, ".push")))


class Configure(unittest.TestCase):
    def test_values_are_checked_and_a_refused_call_changes_nothing(self):
        settings = Settings()
        settings.configure([("durability", "relaxed"), ("lock-lease-ms", "+250"), ("x", "y")])
        self.assertEqual((settings.durable, settings.lease_ms), (False, 250))
        for pairs in (
            [("durability", "full"), ("lock-lease-ms", "9")],
            [("durability", "sometimes")],
            [("lock-lease-ms", "1e3")],
            [("lock-lease-ms", "3600001")],
            [("answers-checked", "yes")],
        ):
            with self.assertRaises(ValueError):
                settings.configure(pairs)
            self.assertEqual((settings.durable, settings.lease_ms), (False, 250))


if __name__ == "__main__":
    unittest.main()
