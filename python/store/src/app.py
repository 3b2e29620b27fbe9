"""The toolnexus file store in Python as a component: the exports of the WIT world
`push-task-store` (wit/task-store.wit, `toolnexus:task-store@0.4.0`), built with componentize-py
by scripts/build-python-store.sh.

It keeps one JSON file per Task in the directory the host preopens at `/`, with its version
record and (while saving) its lock, in exactly the format of the Rust and JavaScript stores
(docs/on-disk-format.md), so any of them can open a directory another wrote and all can write it
at once. Per-instance memory holds only the settings: every Task and push config lives on disk,
because the host pools several instances and calls them concurrently.

The classes below only translate between the WIT values (the bindings componentize-py
generates as `wit_world`) and the plain Python of `toolnexus_store`.
"""

import traceback

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import catalog as wit_catalog
from wit_world.exports import store as wit_store

from toolnexus_store import Query, Settings, Store, StoreError

#: One store per instance; `Config.configure` changes its settings.
_STORE = Store("/", Settings())


def _to_wit(e):
    """The WIT `store-error` of a `StoreError`."""
    if e.tag == "invalid-input":
        return wit_store.StoreError_InvalidInput(e.message)
    if e.tag == "corrupt":
        return wit_store.StoreError_Corrupt(e.message)
    if e.tag == "io":
        return wit_store.StoreError_Io(e.message)
    if e.tag == "outcome-unknown":
        return wit_store.StoreError_OutcomeUnknown(e.message)
    if e.tag == "conflict":
        return wit_store.StoreError_Conflict(wit_store.VersionConflict(e.current, e.message))
    return wit_store.StoreError_Other(e.message)


def _call(body, *args):
    """Runs `body`, turning failures into the WIT `store-error`. A bug (any other exception)
    becomes `other` with its traceback rather than a trap, so the host can say what happened."""
    try:
        return body(*args)
    except StoreError as e:
        raise Err(_to_wit(e))
    except Exception:
        raise Err(wit_store.StoreError_Other("python store failed: " + traceback.format_exc()))


def _condition(condition):
    if isinstance(condition, wit_store.Condition_Absent):
        return ("absent",)
    if isinstance(condition, wit_store.Condition_Version):
        return ("version", condition.value)
    return ("any",)


class Store(exports.Store):
    def get(self, id):
        found = _call(_STORE.get, id)
        return None if found is None else wit_store.StoredTask(found[0], found[1])

    def save(self, task, condition):
        return _call(_STORE.save, task, _condition(condition))


class Lean(exports.Lean):
    def save(self, id, task, condition):
        return _call(_STORE.save, task, _condition(condition), id)

    def get_text(self, id):
        found = _call(_STORE.get, id)
        return None if found is None else found[0]


class Catalog(exports.Catalog):
    def list(self, query):
        def page():
            texts, token, total = _STORE.list(
                Query(
                    context_id=query.context_id,
                    state=query.state,
                    after=query.status_timestamp_after,
                    page_size=query.page_size,
                    page_token=query.page_token,
                )
            )
            return wit_catalog.TaskPage(texts, token, total)

        return _call(page)

    def delete(self, id):
        return _call(_STORE.delete, id)


class PushConfigs(exports.PushConfigs):
    def set(self, task_id, config):
        _call(_STORE.set_push_config, task_id, config)

    def get(self, task_id, config_id):
        return _call(_STORE.get_push_config, task_id, config_id)

    def list(self, task_id):
        return _call(_STORE.list_push_configs, task_id)

    def delete(self, task_id, config_id):
        return _call(_STORE.delete_push_config, task_id, config_id)


class Config(exports.Config):
    def configure(self, settings):
        try:
            _STORE.settings.configure(settings)
        except ValueError as e:
            raise Err(str(e))
