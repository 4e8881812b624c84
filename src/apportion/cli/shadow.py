"""`apportion shadow`: a shadow Volcano next to a live cluster, fed by a watch stream."""

from __future__ import annotations

import click

from apportion.cli.guard import run_guarded


def register(group: click.Group) -> None:
    """Attach the command."""
    group.add_command(shadow)


@click.command()
@click.argument("stream")
@click.option("--period", type=click.FloatRange(min=0.0, min_open=True), default=1.0, show_default=True,
              help="Seconds of stream time between sessions (also how long a pause must be).")
@click.option("--once", is_flag=True, help="Apply every event, run one session, print what `cycle -o json` prints.")
@click.option("--keep-going", is_flag=True, help="Skip a malformed event (and say so) instead of stopping.")
@click.option("--apply", "apply_", is_flag=True,
              help="Send each session's decisions back into the cache, as if this scheduler ran the cluster.")
@click.option("--conf", "conf_path", type=click.Path(dir_okay=False), help="volcano-scheduler.conf (or its ConfigMap)")
def shadow(stream: str, period: float, once: bool, keep_going: bool, apply_: bool, conf_path: str | None) -> None:
    """Keep a scheduler cache from a watch STREAM (a file, or `-` for stdin) and print each session's
    decisions as JSON lines, e.g.

    kubectl get nodes,pods,podgroups,queues,priorityclasses -A -w -o json --output-watch-events | apportion shadow -
    """

    def body() -> None:
        from apportion.cli.cycle import emit
        from apportion.engine import load_conf_file
        from apportion.kube.watch import LineSource
        from apportion.shadow import Shadow, open_stream

        conf = load_conf_file(conf_path) if conf_path else None
        sh = Shadow(conf, period=period, apply=apply_, keep_going=keep_going)
        fh = open_stream(stream)
        name = "<stdin>" if stream == "-" else stream
        try:
            sh.feed(LineSource(fh), name, once=once)
        finally:
            if stream != "-":
                fh.close()
        if once:
            result = sh.run_session()
            for w in result.warnings:
                click.echo(f"warning: {w}", err=True)
            emit(result, "json")
        if sh.skipped:
            click.echo(f"apportion: {sh.skipped} malformed event(s) skipped", err=True)

    run_guarded(body)
