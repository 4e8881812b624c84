"""Scheduler plugins, one module each; importing the package registers the built-in ones (`registry`)."""

from apportion.plugins.registry import register_builtins

register_builtins()
