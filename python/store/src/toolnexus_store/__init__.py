"""The toolnexus file store in Python: Task files, versions, locks and push configs in the
on-disk format the Rust and JavaScript stores share (docs/on-disk-format.md).

`app.py` (beside this package) exports it as a component of the WIT world `push-task-store`;
`Settings` and `Store` here are plain Python, so the unit tests run them on a directory of the
host.
"""

import json

from . import push
from .files import Dir
from .format import (
    DEFAULT_LOCK_LEASE_MS,
    MAX_LOCK_LEASE_MS,
    MIN_LOCK_LEASE_MS,
    Query,
    StoreError,
)
from .tasks import TaskDir

__all__ = ["Settings", "Store", "StoreError", "Query"]


class Settings:
    """What `configure` sets: durability, the lock lease, and whether the host checks `get`
    answers itself."""

    def __init__(self):
        self.durable = True
        self.lease_ms = DEFAULT_LOCK_LEASE_MS
        self.answers_checked = False

    def configure(self, pairs):
        """Applies `(name, value)` pairs, checked in full before anything changes: a refused
        call leaves the settings as they were. Unknown names are ignored, as the contract says.
        A refused value raises `ValueError` with the message for the host."""
        durable, lease_ms, answers_checked = self.durable, self.lease_ms, self.answers_checked
        for name, value in pairs:
            if name == "durability":
                if value not in ("full", "relaxed"):
                    raise ValueError("durability must be full or relaxed, not %s" % _shown(value))
                durable = value == "full"
            elif name == "lock-lease-ms":
                digits = value[1:] if value.startswith("+") else value
                ms = int(digits) if digits.isascii() and digits.isdigit() else -1
                if not MIN_LOCK_LEASE_MS <= ms <= MAX_LOCK_LEASE_MS:
                    raise ValueError(
                        "lock-lease-ms must be a whole number of milliseconds from %d to %d, "
                        "not %s" % (MIN_LOCK_LEASE_MS, MAX_LOCK_LEASE_MS, _shown(value))
                    )
                lease_ms = ms
            elif name == "answers-checked":
                if value not in ("true", "false"):
                    raise ValueError("answers-checked must be true or false, not %s" % _shown(value))
                answers_checked = value == "true"
        self.durable, self.lease_ms, self.answers_checked = durable, lease_ms, answers_checked


class Store:
    """Every operation of the contract over one directory (`root`: `/` in the component)."""

    def __init__(self, root, settings=None):
        self.dir = Dir(root)
        self.settings = settings or Settings()
        self._swept = False

    def _tasks(self):
        """The Task files under the current settings, after this store's first call swept what
        crashed writers left (temp files)."""
        tasks = TaskDir(self.dir, self.settings.durable, self.settings.lease_ms)
        if not self._swept:
            self._swept = True
            tasks.sweep()
        return tasks

    def get(self, task_id):
        """`(text, version)` of the Task, or `None`."""
        return self._tasks().get(task_id, checked=not self.settings.answers_checked)

    def save(self, text, condition, task_id=None):
        """The new version; `condition` is `("any",)`, `("absent",)` or `("version", n)`."""
        return self._tasks().save(text, condition, task_id)

    def list(self, query):
        """`(texts, next_page_token, total_size)` of one page."""
        return self._tasks().list(query)

    def delete(self, task_id):
        return self._tasks().delete(task_id)

    def set_push_config(self, task_id, text):
        self._tasks()
        push.save(self.dir, task_id, text, self.settings.durable)

    def get_push_config(self, task_id, config_id):
        self._tasks()
        return push.get(self.dir, task_id, config_id)

    def list_push_configs(self, task_id):
        self._tasks()
        return push.list_all(self.dir, task_id)

    def delete_push_config(self, task_id, config_id):
        self._tasks()
        return push.delete(self.dir, task_id, config_id, self.settings.durable)


def _shown(value):
    return json.dumps(value, ensure_ascii=False)
