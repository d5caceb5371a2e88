"""``python -m grader sandbox ...``: build, doctor, sweep."""

from __future__ import annotations

import argparse

from ..console import console


def register(sub: argparse._SubParsersAction, formatter: type) -> None:
    p = sub.add_parser("sandbox", help="build the sandbox image, check its isolation, sweep containers",
                       description="The Docker sandbox that runs model-written code.", formatter_class=formatter)
    ps = p.add_subparsers(dest="sandbox_command", metavar="SUBCOMMAND")
    ps.required = True

    q = ps.add_parser("build", help="build the image (offline when no registry is reachable)",
                      formatter_class=formatter,
                      description="Build the sandbox image and tag it with a content hash of the Dockerfile, "
                      "the harness and the base. Idempotent: an up-to-date image is reused in seconds. "
                      "Without a reachable registry, a minimal Debian base with python3 and numpy is made "
                      "with debootstrap and imported (needs root and Debian's package mirror).",
                      epilog="examples:\n  python -m grader sandbox build\n"
                      "  python -m grader sandbox build --base offline\n"
                      "  python -m grader sandbox build --base python:3.11-slim --force")
    q.add_argument("--base", default="auto",
                   help="auto (default), offline, or an image reference such as python:3.11-slim")
    q.add_argument("--force", action="store_true", help="rebuild even if the image is up to date")
    q.set_defaults(handler=cmd_build)

    q = ps.add_parser("doctor", help="check the engine, the image and the isolation (live probe)",
                      formatter_class=formatter,
                      description="Check that the Docker engine answers, that the image is present and "
                      "current, and run a probe inside a sandbox container proving the isolation holds "
                      "(no network, read-only root, non-root, no capabilities, no-new-privileges, limits "
                      "in force). Exit status 0 when every check passes, 1 otherwise.")
    q.add_argument("--runtime", choices=["runc", "runsc"], default=None,
                   help="prove the isolation under this OCI runtime (runsc: gVisor; default: the engine's)")
    q.set_defaults(handler=cmd_doctor)

    q = ps.add_parser("sweep", help="remove leftover sandbox containers", formatter_class=formatter,
                      description="Remove containers left by grader processes that are no longer running "
                      "(or, with --all, every sandbox container on this engine).")
    q.add_argument("--all", action="store_true", help="also containers of graders still running")
    q.set_defaults(handler=cmd_sweep)


def cmd_build(args: argparse.Namespace) -> int:
    from sandbox import image
    from sandbox.engine import connect

    con = console(stderr=True)
    client = connect()
    with con.status("building the sandbox image", spinner="dots") as status:
        def progress(msg: str) -> None:
            con.print(f"  {msg}")
            status.update(msg[:80])

        st = image.build(client, base=args.base, force=args.force, progress=progress)
    console().print(f"sandbox image {st.tag} ({st.image_id[:19] if st.image_id else '?'}) from {st.base_ref}: {st.reason}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from sandbox.doctor import run_checks

    con = console()
    failed = 0

    def show(c) -> None:
        nonlocal failed
        mark = "[green]PASS[/green]" if c.ok else "[bold red]FAIL[/bold red]"
        con.print(f"{mark}  {c.name:<18} {c.detail}")
        if not c.ok:
            failed += 1
            con.print(f"      fix: {c.fix}")

    if args.runtime:
        from sandbox.engine import connect
        from sandbox.runtimes import require_runtime

        require_runtime(connect(), args.runtime)
        con.print(f"runtime: {args.runtime}")
    checks = run_checks(progress=show, runtime=args.runtime)
    con.print(f"{len(checks) - failed}/{len(checks)} checks pass")
    return 0 if failed == 0 and checks else 1


def cmd_sweep(args: argparse.Namespace) -> int:
    from sandbox.engine import connect, sweep

    n = sweep(connect(), orphans_only=not args.all)
    console().print(f"removed {n} container(s)")
    return 0
