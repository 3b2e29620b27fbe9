"""A Task's push-notification configs (contract 0.3, `push-configs`), in exactly the files of
the Rust store (`shared/format/src/dir/push.rs`; docs/on-disk-format.md, "Push-notification
configs"):

- `.push/<S(T)>/`: the configs of the Task `T`, where `S(T)` is `T`'s Task file name without
  `.json`;
- `.push/<S(T)>/<S(C)>.json`: its config `C`, the JSON text exactly as given, only ever
  replaced by renaming a complete, flushed temp file (`.tmp-<32 hex>`, in the same directory)
  over it.

Configs have no versions and no locks: the last rename wins, and a reader sees a whole config.
"""

import errno
import json

from .files import in_dir, io_error
from .format import (
    EXTENSION,
    STALE_TEMP_AGE_MS,
    StoreError,
    encode_id,
    is_task_file_name,
    parse_task,
)

#: The directory, in the root, that holds every Task's configs.
PUSH_DIR = ".push"
#: The longest push config, in bytes of JSON text (UTF-8). A config file over it is corrupt.
MAX_PUSH_CONFIG_BYTES = 64 * 1024
#: How many times a save makes its Task's config directory again when a concurrent delete of
#: the Task removed it between its creation and the temp file's.
SAVE_ATTEMPTS = 3


def parse_config(text):
    """The id of the push config in `text`: a JSON object whose `id` is a non-empty string, at
    most `MAX_PUSH_CONFIG_BYTES` (checked first, so nothing larger is parsed). `ValueError`
    says what is wrong, in the words of the Rust check."""
    size = len(text.encode("utf-8"))
    if size > MAX_PUSH_CONFIG_BYTES:
        raise ValueError(
            "push config is %d bytes of JSON, over the limit of %d" % (size, MAX_PUSH_CONFIG_BYTES)
        )
    return parse_task(text, what="push config")[1]


def _corrupt(name, reason):
    return StoreError("corrupt", "corrupt push config file /%s: %s" % (name, reason))


def _too_large(size):
    return "is %d bytes, over the largest push config (%d bytes)" % (size, MAX_PUSH_CONFIG_BYTES)


def _dir_of(task_id):
    """`.push/<S(T)>`: the config directory of the Task `task_id`."""
    return "%s/%s" % (PUSH_DIR, encode_id(task_id)[: -len(EXTENSION)])


def _file_of(directory, config_id):
    if config_id == "":
        raise StoreError("invalid-input", "push config id is empty")
    return "%s/%s" % (directory, encode_id(config_id))


def _stored_id(name, text):
    try:
        return parse_config(text)
    except ValueError as e:
        raise _corrupt(name, str(e))


def save(store_dir, task_id, text, durable):
    """Saves the push config `text` of the Task `task_id`, replacing the one with its id.
    `text` is checked (`invalid-input` if it is not a config), then written exactly as given."""
    if task_id == "":
        raise StoreError("invalid-input", "task id is empty")
    try:
        config_id = parse_config(text)
    except ValueError as e:
        raise StoreError("invalid-input", str(e))
    directory = _dir_of(task_id)
    target = _file_of(directory, config_id)
    data = text.encode("utf-8")
    attempt = 1
    while True:
        made_push = store_dir.make_dir(PUSH_DIR)
        made_dir = store_dir.make_dir(directory)
        try:
            temp, _ = store_dir.write_temp(data, durable, directory)
        except StoreError as e:
            # The Task was deleted, its directory with it, since `make_dir`: a save after a
            # delete keeps its config, so this one does too.
            if attempt < SAVE_ATTEMPTS and e.errno == errno.ENOENT:
                attempt += 1
                continue
            raise
        try:
            store_dir.rename_into(temp, target)
        except StoreError:
            store_dir.remove_quietly(temp)
            raise
        if durable:
            store_dir.sync_dir(directory)
            # A directory made here is an entry of its parents: flushed too, up to the root.
            if made_dir or made_push:
                store_dir.sync_dir(PUSH_DIR)
                store_dir.sync_dir()
        return


def get(store_dir, task_id, config_id):
    """The config `config_id` of the Task `task_id` as its text, or `None`; a foreign file is
    corrupt."""
    name = _file_of(_dir_of(task_id), config_id)
    found = store_dir.read_capped(name, MAX_PUSH_CONFIG_BYTES, _corrupt, _too_large)
    if found is None:
        return None
    text = found[0]
    stored = _stored_id(name, text)
    if stored != config_id:
        raise _corrupt(
            name,
            "holds push config %s, not %s"
            % (json.dumps(stored, ensure_ascii=False), json.dumps(config_id, ensure_ascii=False)),
        )
    return text


def list_all(store_dir, task_id):
    """Every config of the Task `task_id` as text, by config id (UTF-8 bytes, ascending);
    empty when it has none. Hidden names (temp files) and names that are not `<name>.json` are
    skipped; a config file that is not the config its name says fails the listing, naming it."""
    directory = _dir_of(task_id)
    configs = []
    for name, _ in store_dir.entries(directory) or []:
        if not is_task_file_name(name):
            continue
        path = in_dir(directory, name)
        found = store_dir.read_capped(path, MAX_PUSH_CONFIG_BYTES, _corrupt, _too_large)
        if found is None:
            continue  # deleted meanwhile
        config_id = _stored_id(path, found[0])
        if encode_id(config_id) != name:
            raise _corrupt(
                path,
                "holds push config %s, which belongs in another file"
                % json.dumps(config_id, ensure_ascii=False),
            )
        configs.append((config_id, found[0]))
    configs.sort(key=lambda config: config[0])
    return [text for _, text in configs]


def delete(store_dir, task_id, config_id, durable):
    """Removes the config `config_id` of the Task `task_id`: whether there was one."""
    directory = _dir_of(task_id)
    existed = store_dir.unlink(_file_of(directory, config_id))
    if existed and durable:
        store_dir.sync_dir(directory)
    return existed


def delete_all(store_dir, task_id, durable):
    """Removes every config of the Task `task_id`, with its directory (after the Task's own
    files are gone). A file a concurrent save adds while it is being emptied is removed on the
    next pass."""
    directory = _dir_of(task_id)
    attempt = 1
    while True:
        try:
            if not _remove_tree(store_dir, directory):
                return
            break
        except StoreError:
            if attempt >= SAVE_ATTEMPTS:
                raise
            attempt += 1
    if durable:
        store_dir.sync_dir(PUSH_DIR)


def _remove_tree(store_dir, path):
    """Removes the directory `path` and everything in it: whether it existed. Never through a
    link."""
    entries = store_dir.entries(path)
    if entries is None:
        return False
    for name, is_directory in entries:
        inner = in_dir(path, name)
        if is_directory:
            _remove_tree(store_dir, inner)
        else:
            store_dir.unlink(inner)
    try:
        store_dir.remove_dir(path)
    except FileNotFoundError:
        return True
    except OSError as e:
        raise io_error("delete", path, e)
    return True


def sweep_temps(store_dir, now_ms):
    """Removes the temp files of crashed writers (last changed `STALE_TEMP_AGE_MS` before
    `now_ms` or earlier) in every Task's config directory. Errors are ignored: housekeeping."""
    try:
        task_dirs = store_dir.entries(PUSH_DIR) or []
    except StoreError:
        return
    for name, is_directory in task_dirs:
        # Only the store's own directories are swept, never through a link.
        if not is_directory:
            continue
        directory = in_dir(PUSH_DIR, name)
        try:
            entries = store_dir.entries(directory) or []
        except StoreError:
            continue
        for entry, _ in entries:
            store_dir.remove_if_stale_temp(in_dir(directory, entry), now_ms, STALE_TEMP_AGE_MS)
