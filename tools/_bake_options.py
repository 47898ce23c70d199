"""The Loop and Pre-roll options the headless tools share (tools/bake_headless.py, tools/bake_forest.py): their
command-line arguments, their checks, and the scene settings (``scene.stiff_rods``) they stand for."""


def add_arguments(ap, what: str = "a seamless loop") -> None:
    """``--loop FRAMES`` and ``--preroll FRAMES`` on the parser ``ap``."""
    ap.add_argument(
        "--loop",
        type=int,
        metavar="FRAMES",
        help=f"bake {what} of FRAMES frames from the start frame (the wind repeats, the tree is warmed up until its "
        "sway repeats; the last key equals the first)",
    )
    ap.add_argument(
        "--preroll",
        type=int,
        metavar="FRAMES",
        help="simulate FRAMES frames before the start frame, not keyed (with --loop: the warm-up, instead of the "
        "automatic whole loops)",
    )


def check(ap, args) -> None:
    """Refuse, through ``ap.error``, a loop shorter than 2 frames or a negative pre-roll."""
    if args.loop is not None and args.loop < 2:
        ap.error(f"--loop {args.loop}: a loop needs at least 2 frames")
    if args.preroll is not None and args.preroll < 0:
        ap.error(f"--preroll {args.preroll}: frames before the start cannot be negative")


def scene_settings(args) -> dict:
    """``--loop`` and ``--preroll`` as the scene's Loop and Pre-roll settings (names of ``scene.stiff_rods``)."""
    out: dict = {}
    if args.loop is not None:
        out.update(use_loop=True, loop_frames=args.loop)
    if args.preroll is not None:
        out.update(preroll_frames=args.preroll, use_auto_preroll=False)
    return out
