"""The scheduler conf each session runs with, reloaded as Volcano reloads it.

Volcano's scheduler watches its conf file (the `volcano-scheduler-configmap` mounted as a file) and
reloads it when it is written; each session runs with the conf loaded last, and a conf that no longer
parses is logged and the previous one kept. The service does the same at every tick: `--conf FILE`
is read again when its modification time or size changed (a file that stops parsing, or names no
action, as a file caught while being rewritten does, keeps the last good conf, logged once); without `--conf`, the stored scheduler ConfigMap's conf is used (an apply
checks it, so a stored one parses), else Volcano's default. Whatever decides the plugins decides
`enableHierarchy` too: the live view re-renders the reservable queues when it changes (live.py).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from apportion.errors import ApportionError, ConfError
from apportion.framework.conf import SchedulerConf, default_conf, parse_conf
from apportion.kube.conf import CONF_KEY

log = logging.getLogger(__name__)

ObjectKey = tuple[str, str, str]


def hierarchical(conf: SchedulerConf) -> bool:
    """Whether a plugin of the conf runs with `enableHierarchy`."""
    return any(opt.enabled("enableHierarchy") for t in conf.tiers for opt in t.plugins)


def stored_conf_text(objects: dict[ObjectKey, dict[str, Any]]) -> str | None:
    """The volcano-scheduler.conf a stored ConfigMap carries (an apply refuses two that differ)."""
    found: tuple[ObjectKey, str] | None = None
    for key, obj in objects.items():
        if key[0] == "ConfigMap":
            text = (obj.get("data") or {}).get(CONF_KEY)
            if isinstance(text, str) and (found is None or key < found[0]):
                found = (key, text)
    return found[1] if found is not None else None


class ConfWatch:
    """The conf of the next session: `--conf`'s file as last read, else the stored ConfigMap's."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        #: the file's (mtime_ns, size) when last read, and the conf it gave
        self._stamp: tuple[int, int] | None = None
        self._file_conf: SchedulerConf | None = None
        #: why the file's current content is not in use (None while it is)
        self.file_error: str | None = None
        self._stored: tuple[str, SchedulerConf] | None = None
        self._default = default_conf()
        if path is not None:
            from apportion.engine import load_conf_file

            self._stamp = self._stat()
            self._file_conf = load_conf_file(path)  # a conf that does not parse at start stops `serve`

    def _stat(self) -> tuple[int, int] | None:
        assert self.path is not None
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def file_conf(self) -> SchedulerConf | None:
        """`--conf`'s conf (None without `--conf`), read again if the file changed since."""
        if self.path is None:
            return None
        stamp = self._stat()
        if stamp is not None and stamp != self._stamp:
            from apportion.engine import load_conf_file

            self._stamp = stamp
            try:
                conf = load_conf_file(self.path)
                if not conf.actions:
                    # Volcano finds no action named "" and refuses the conf; a reload also meets this
                    # when it reads a file being rewritten in place (truncated, not yet written), which
                    # must not leave the sessions with no action until the next write
                    raise ConfError(f"{self.path}: names no action")
                self._file_conf = conf
            except ApportionError as e:
                # Volcano: "Scheduler config ... is invalid", and the previous configuration stays
                self.file_error = str(e)
                log.error("the scheduler conf %s does not parse; the previous one stays in use: %s", self.path, e)
            else:
                if self.file_error is not None:
                    log.warning("the scheduler conf %s parses again and is in use", self.path)
                self.file_error = None
                log.info("scheduler conf %s reloaded", self.path)
        return self._file_conf

    def effective(self, objects: dict[ObjectKey, dict[str, Any]]) -> tuple[SchedulerConf | None, SchedulerConf]:
        """(what to hand the session: the file's conf, None to let it read the stored ConfigMap, or
        Volcano's default when there is neither; the conf the session will run with)."""
        file_conf = self.file_conf()
        if file_conf is not None:
            return file_conf, file_conf
        text = stored_conf_text(objects)
        if text is None:
            # one parsed default for every tick, not the YAML parsed again by each session
            return self._default, self._default
        if self._stored is None or self._stored[0] != text:
            try:
                self._stored = (text, parse_conf(text, source=f"ConfigMap: data.{CONF_KEY}"))
            except ApportionError:
                return None, self._default  # the session reports it (a database written before the check)
        return None, self._stored[1]
