"""`apportion submit`: a job for a Ray-backed service (`apportion serve --backend ray`)."""

from __future__ import annotations

import click

from apportion.cli.guard import run_guarded

DEFAULT_SERVER = "http://127.0.0.1:8088"


@click.command("submit", context_settings={"ignore_unknown_options": True})
@click.option("--queue", default="default", show_default=True, help="The queue the job waits in.")
@click.option("--tasks", default=1, show_default=True, type=int, help="How many tasks (each runs the command).")
@click.option("--min-member", default=None, type=int, help="Tasks that start together or not at all (default: all).")
@click.option("--resources", default="cpu=1", show_default=True, help="Each task's resources: cpu=2,GPU=1,memory=4Gi,X=1.")
@click.option("--name", default=None, help="The job's name (default job-<random>).")
@click.option("--namespace", default="default", show_default=True, help="The job's namespace.")
@click.option("--reservation", default=None, help="Run in this reservation (its queue's plan).")
@click.option("--server", default=DEFAULT_SERVER, show_default=True, help="The service's URL.")
@click.option("--user", default=None, help="Caller name (?user.name=); default $USER.")
@click.option("--token", default=None, envvar="APPORTION_TOKEN", help="Bearer token instead of --user.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def submit(queue: str, tasks: int, min_member: int | None, resources: str, name: str | None, namespace: str,
           reservation: str | None, server: str, user: str | None, token: str | None,
           command: tuple[str, ...]) -> None:
    """Submit COMMAND (after --) as a job of --tasks tasks; prints the job's namespace/name."""
    def body() -> None:
        from apportion.backends.ray_submit import submit as submit_job

        click.echo(submit_job(list(command), queue=queue, tasks=tasks, min_member=min_member, resources=resources,
                              name=name, namespace=namespace, reservation=reservation, server=server,
                              user=user, token=token))

    run_guarded(body)


def register(group: click.Group) -> None:
    """Attach `submit`."""
    group.add_command(submit)
