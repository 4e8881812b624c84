"""apportion's Python API for Ray users: `apportion.ray.submit(fn_or_actor_class, queue=..., tasks=...,
min_member=..., resources=...)` sends work to a service started with `apportion serve --backend ray`."""

from apportion.backends.ray_submit import submit

__all__ = ["submit"]
