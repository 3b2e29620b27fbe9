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
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from toolnexus_store import Query, Settings, Store, StoreError  # noqa: E402
from toolnexus_store import tasks as tasks_module  # noqa: E402
from toolnexus_store.files import Dir  # noqa: E402
from toolnexus_store.format import parse_record  # noqa: E402
from toolnexus_store.tasks import TaskDir  # noqa: E402


MS = 1_000_000


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

    def test_a_version_record_that_does_not_read_whole_under_the_lock_is_corrupt(self):
        # Under the lock no one writes the record, so a torn one was left by a crash or a disk
        # fault: the Task's version is unknown, and counting from 1 again would let an old
        # conditional save win. A reader without the lock still counts it as none.
        for n in (1, 2, 3):
            self.assertEqual(self.store.save(task("t", n=n), ("any",)), n)
        record_path = os.path.join(self.root, ".~t.v")
        with open(record_path) as f:
            good = f.read()
        self.assertIn('"version":3,', good)
        torn = good.replace('"version":3,', '"version":9,')  # its check fails
        with open(record_path, "w") as f:
            f.write(torn)
        with open(os.path.join(self.root, "t.json")) as f:
            text = f.read()
        for condition in (("any",), ("version", 1)):
            with self.subTest(condition=condition):
                error = self.assert_error(
                    "corrupt", self.store.save, task("t", n="lost"), condition
                )
                self.assertEqual(
                    error.message,
                    "corrupt task file /.~t.v: the version record does not read whole, so the "
                    "Task's version is unknown; remove it to count versions from 1 again",
                )
                with open(record_path) as f:
                    self.assertEqual(f.read(), torn, "the record is left as it is")
                with open(os.path.join(self.root, "t.json")) as f:
                    self.assertEqual(f.read(), text, "the Task is left as it is")
                self.assertEqual(self.files(), [".~t.v", "t.json"], "no lock left, no temp file")
        self.assertEqual(self.store.get("t"), (text, 1), "a read counts it as none")
        os.unlink(record_path)
        self.assertEqual(self.store.save(task("t", n=4), ("any",)), 2)
        self.assertEqual(self.store.get("t"), (task("t", n=4), 2))
        # Without a Task file a torn record describes nothing: the Task is new, version 1.
        with open(record_path, "w") as f:
            f.write(torn)
        os.unlink(os.path.join(self.root, "t.json"))
        self.assertEqual(self.store.save(task("t", n=5), ("absent",)), 1)
        self.assertEqual(self.store.get("t"), (task("t", n=5), 1))

    def test_bad_input_is_invalid_input_and_writes_nothing(self):
        for text in ("nope", "[1]", '{"id":7}', '{"id":""}'):
            self.assert_error("invalid-input", self.store.save, text, ("any",))
        self.assert_error("invalid-input", self.store.get, "")
        self.assertEqual(self.files(), [])

    def test_a_flush_that_fails_after_the_rename_is_an_unknown_outcome(self):
        # The new Task file is in place when the directory flush fails: whether the save
        # survives a power loss is unknown, and the caller is told so (not "io", which promises
        # that nothing changed).
        self.assertEqual(self.store.save(task("t", n=1), ("any",)), 1)

        def failing_sync(_dir):
            raise OSError(5, "Input/output error")

        with mock.patch.object(Dir, "sync_dir", failing_sync):
            error = self.assert_error(
                "outcome-unknown", self.store.save, task("t", n=2), ("version", 1)
            )
        self.assertIn("after the save's rename", error.message)
        self.assertIn("read the Task again", error.message)
        # Reading again tells: here the save did take effect.
        self.assertEqual(json.loads(self.store.get("t")[0])["n"], 2)

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
        # A 400 ms lease against a renewal every 10 ms: the holder would have to stall for 40 of
        # them (a loaded machine) before the waiter could see the lock unchanged for a lease.
        store = self.lease(400)
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
            started = time.monotonic()
            error = self.assert_error("io", store.save, task("t", n=2), ("any",))
            waited = time.monotonic() - started
        finally:
            stop.set()
            keeper.join()
        self.assertIn(
            "cannot lock /.~t.l: another writer kept the task locked for over 1200ms", error.message
        )
        self.assertGreaterEqual(waited, 1.2)
        self.assertEqual(store.get("t")[0], task("t", n=1))
        self.assertEqual(self.files(), [".~t.l", ".~t.v", "t.json"], "not ours to remove")

    def tasks(self, lease_ms, cls=TaskDir):
        """The Task files of the test's directory under a lease of `lease_ms`, as a `Store` call
        sees them (`cls`: a `TaskDir` with some step changed)."""
        return cls(Dir(self.root), True, lease_ms)

    def path(self, name):
        return os.path.join(self.root, name)

    def write(self, name, data):
        with open(self.path(name), "w") as f:
            f.write(data)

    def read(self, name, mode="r"):
        with open(self.path(name), mode) as f:
            return f.read()

    def replace_by_another_file(self, name, text="someone else"):
        """Another writer's file at `name`, put there as a lock is: by a rename."""
        self.write("other", text)
        os.rename(self.path("other"), self.path(name))

    def keep_changing(self, name, behind_ns):
        """Starts a holder that renews the lock `name` every 10 ms, giving it the modification
        time `behind_ns` before now (each a little later than the last); returns the function
        that stops it."""
        stop = threading.Event()

        def renew():
            last = 0
            while not stop.is_set():
                last = max(time.time_ns() - behind_ns, last + MS)
                os.utime(self.path(name), ns=(last, last))
                stop.wait(0.01)

        holder = threading.Thread(target=renew)
        holder.start()

        def stopped():
            stop.set()
            holder.join()

        return stopped

    def test_a_dead_lock_seen_unchanged_for_a_lease_is_broken_and_the_save_goes_ahead(self):
        store = self.lease(400)
        lock = self.path(".~t.l")
        with open(lock, "w") as f:
            f.write("left by a crashed writer")
        old = time.time() - 10
        os.utime(lock, (old, old))
        started = time.monotonic()
        self.assertEqual(store.save(task("t"), ("absent",)), 1)
        self.assertGreaterEqual(time.monotonic() - started, 0.4, "watched for a lease first")
        self.assertEqual(self.files(), [".~t.v", "t.json"])

    def test_a_dead_lock_from_the_future_is_broken_after_one_lease(self):
        # Its modification time an hour ahead (a clock stepped back since it was written): by
        # the file's time against the wall clock it looked younger than the lease for an hour,
        # and the Task could not be saved. The waiter ages it by its own clock.
        store = self.lease(400)
        store.save(task("f", n=1), ("any",))
        self.write(".~f.l", "dead writer")
        ahead = time.time() + 3600
        os.utime(self.path(".~f.l"), (ahead, ahead))
        started = time.monotonic()
        self.assertEqual(store.save(task("f", n=2), ("version", 1)), 2)
        waited = time.monotonic() - started
        self.assertGreaterEqual(waited, 0.4)
        self.assertLess(waited, 1.2, "broken after one lease, before the three a waiter gives up at")
        self.assertEqual(self.files(), [".~f.v", "f.json"])
        self.assertEqual(store.get("f"), (task("f", n=2), 2))

    def test_a_lock_renewed_with_times_long_past_is_never_broken(self):
        # A live holder whose clock is far behind (or the waiter's stepped forward): by the
        # file's time against the wall clock the lock looked stale at once and was broken under
        # the writer. The waiter sees it change, so waits three leases and gives up.
        store = self.lease(400)  # renewed every 10 ms
        store.save(task("p", n=1), ("any",))
        self.write(".~p.l", "live writer")
        stop = self.keep_changing(".~p.l", 3600 * 10**9)
        try:
            started = time.monotonic()
            error = self.assert_error("io", store.save, task("p", n=2), ("any",))
            waited = time.monotonic() - started
        finally:
            stop()
        self.assertIn(
            "cannot lock /.~p.l: another writer kept the task locked for over 1200ms", error.message
        )
        self.assertGreaterEqual(waited, 1.2)
        self.assertEqual(self.read(".~p.l"), "live writer", "not broken")
        self.assertEqual(store.get("p"), (task("p", n=1), 1))

    def test_breaking_a_lock_never_puts_one_back(self):
        # Between the waiter's last look and its rename the stale lock is broken by another
        # writer, which takes the lock afresh: the rename moves that fresh lock aside. Putting it
        # back could replace a lock taken meanwhile (two writers winning one version); it is
        # removed, and its writer finds its lock gone at its next check.
        test = self
        after_break = []

        class Raced(TaskDir):
            def break_lock(self, name):
                test.replace_by_another_file(name, "fresh lock")
                super().break_lock(name)
                after_break.append(sorted(os.listdir(test.root)))

        self.write(".~b.l", "dead writer")
        tasks = self.tasks(400, Raced)
        self.assertEqual(tasks.save(task("b"), ("absent",)), 1, "the waiter then takes the lock")
        self.assertEqual(after_break, [[]], "nothing put back, nothing left aside")
        self.assertEqual(self.files(), [".~b.v", "b.json"])
        self.assertEqual(tasks.get("b"), (task("b"), 1))

    def test_a_lock_the_host_refuses_to_move_is_waited_for_not_broken(self):
        # A host that fences its components' locks refuses to rename one a live writer holds
        # (EBUSY): the waiter does nothing and keeps waiting, then gives up after three leases.
        tasks = self.tasks(50)
        self.write(".~h.l", "held")
        tasks.dir.rename_quietly = lambda source, target: False
        error = self.assert_error("io", tasks.save, task("h"), ("any",))
        self.assertIn("cannot lock /.~h.l", error.message)
        self.assertEqual(self.files(), [".~h.l"])

    def test_a_slow_flush_renews_then_checks_and_a_lock_taken_over_writes_no_record(self):
        # The flush takes longer than a quarter lease, and meanwhile the lock was broken and
        # taken by another writer. The save renews, then finds the lock is not its own and gives
        # up before writing the record: checking only later, it wrote its record over the one
        # the other writer's save relies on.
        tasks = self.tasks(400)
        self.assertEqual(tasks.save(task("s", n=1), ("any",)), 1)
        self.assertEqual(tasks.save(task("s", n=2), ("any",)), 2)
        record = self.read(".~s.v", "rb")
        real_sync = tasks_module.sync_data
        calls = []

        def slow_sync(fd):
            real_sync(fd)
            if not calls:  # the flush of the save's text, the first of the save
                time.sleep(0.15)
                self.replace_by_another_file(".~s.l")
            calls.append(fd)

        with mock.patch.object(tasks_module, "sync_data", slow_sync):
            error = self.assert_error("io", tasks.save, task("s", n=3), ("any",))
        self.assertIn("cannot save under lock /.~s.l", error.message)
        self.assertIn("taken over; nothing was saved", error.message)
        self.assertEqual(len(calls), 1)
        self.assertEqual(self.read(".~s.v", "rb"), record, "the record was not rewritten")
        self.assertEqual(self.read(".~s.l"), "someone else", "not ours: left alone")
        self.assertEqual(tasks.get("s"), (task("s", n=2), 2))

    def test_a_rename_past_half_the_lease_is_not_acknowledged_unless_it_moved_its_own_file(self):
        # The sequence without kernel locks: the writer stalls just before its rename,
        # past half its lease, and meanwhile its lock was broken and taken by another writer.
        # Its rename then moves that writer's lock over the Task: it must not be told it won.
        # A rename as late that moved its own file is acknowledged.
        tasks = self.tasks(100)
        self.assertEqual(tasks.save(task("r", n=1), ("any",)), 1)
        real_rename = Dir.rename_into

        def stalled(taken_over):
            def rename_into(d, src, dst):
                if src == ".~r.l":
                    time.sleep(0.08)
                    if taken_over:
                        self.replace_by_another_file(".~r.l")
                return real_rename(d, src, dst)

            return rename_into

        with mock.patch.object(Dir, "rename_into", stalled(True)):
            error = self.assert_error("outcome-unknown", tasks.save, task("r", n=2), ("version", 1))
        self.assertIn("past half the lock's lease", error.message)
        self.assertIn("read the Task again", error.message)
        with mock.patch.object(Dir, "rename_into", stalled(False)):
            version = tasks.save(task("r", n=3), ("any",))
        self.assertEqual(tasks.get("r"), (task("r", n=3), version))

    def test_a_delete_whose_lock_was_taken_over_or_held_too_long_removes_nothing(self):
        # The delete checks its lock is still its own, and young, right before it removes the
        # Task file: a lock broken (and perhaps taken by a save) meanwhile is not its to delete
        # under.
        test = self
        tasks = self.tasks(400)
        self.assertEqual(tasks.save(task("d"), ("any",)), 1)
        config = json.dumps({"id": "c", "url": "https://example.com/c"})
        self.store.set_push_config("d", config)
        text = self.read("d.json")
        record = self.read(".~d.v", "rb")

        def taken_over(lock):
            test.replace_by_another_file(lock.name)

        def held_too_long(lock):
            lock.acquired -= 300 * MS  # of a 400 ms lease

        for lose, left in (
            (taken_over, [".push", ".~d.l", ".~d.v", "d.json"]),
            (held_too_long, [".push", ".~d.v", "d.json"]),
        ):
            with self.subTest(lose.__name__):

                class Lost(TaskDir):
                    def lock(self, name):
                        lock = super().lock(name)
                        lose(lock)
                        return lock

                error = self.assert_error("io", self.tasks(400, Lost).delete, "d")
                self.assertEqual(
                    error.message,
                    "cannot save under lock /.~d.l: the lock was held past half its lease "
                    "(200ms) or taken over; nothing was saved",
                )
                self.assertEqual(self.read("d.json"), text)
                self.assertEqual(self.read(".~d.v", "rb"), record)
                self.assertEqual(self.store.list_push_configs("d"), [config], "its configs stay")
                self.assertEqual(self.files(), left, "only the delete's own lock is removed")
                if os.path.exists(self.path(".~d.l")):
                    os.unlink(self.path(".~d.l"))
        self.assertTrue(tasks.delete("d"))
        self.assertEqual(self.store.list_push_configs("d"), [])
        self.assertEqual([n for n in self.files() if n != ".push"], [])

    def test_the_first_call_sweeps_stale_temp_files_keeping_young_ones_and_every_lock(self):
        # One look cannot tell a crashed writer's lock from a live one's: the sweep leaves
        # locks to the next save of their Task, which breaks a dead one after a lease.
        old = time.time() - 2 * 3600
        for name in (".tmp-old", ".~stale.l"):
            with open(os.path.join(self.root, name), "w"):
                pass
            os.utime(os.path.join(self.root, name), (old, old))
        with open(os.path.join(self.root, ".tmp-young"), "w"):
            pass
        self.store.get("anything")
        self.assertEqual(self.files(), [".tmp-young", ".~stale.l"])

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
