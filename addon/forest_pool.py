"""A forest bake's worker side and its process pool.

* **One tree in a worker** (:func:`bake_tree`): Bake's simulation (``bake.run_bake`` on a Session of the tree)
  over the frame range, kept as a BakeRecord; :func:`bake_one` opens the file first and gives the record's bytes.
* **The process pool** (:class:`ForestPool`): N worker processes, each a headless Blender (``blender -b
  FILE --python-expr ...``) or a Python with the ``bpy`` module, opening the saved .blend read-only and
  baking one tree after the other, biggest first, as the parent hands them out; ``poll()`` (trees done /
  total, frames per second, ETA) and ``cancel()`` for a modal operator. The scene is not touched until every
  tree is done; a cancelled or failed bake removes its cache folder.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

import bpy

from . import reader, settings, wind
from .bake import plan_bones, run_bake
from .bake_record import BakeRecord
from .forest_records import new_manifest, save_record, write_manifest
from .session import Session

MARKER = "STIFF_RODS_FOREST"  # prefix of the worker's protocol lines on its stdout
ADDON_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder with the package's __init__.py
PROGRESS_INTERVAL = 0.25  # s between a worker's frame reports


# ------------------------------------------------------------------ one tree (worker side)
def bake_tree(scene, name: str, start: int, end: int, progress=None) -> BakeRecord:
    """Simulate the tree or curve ``name`` of ``scene`` over frames ``start``..``end`` exactly as Bake does
    (its per-object settings, the scene's wind and colliders) and return its record (addon/bake_record.py);
    nothing in the scene changes. ``progress(frames done)`` is called after every frame."""
    obj = bpy.data.objects.get(name)
    if obj is None:
        raise reader.ReadError(f"No object '{name}' in the scene")
    t0 = time.perf_counter()
    s = Session(obj, scene)
    s.set_wind(wind.SceneWind.from_scene(scene, loop=settings.bake_spec(scene).loop > 0))
    rec = run_bake(scene, s, start, end, plan_bones(s), progress)
    rec.seconds = time.perf_counter() - t0  # the model's building included
    return rec


# ------------------------------------------------------------------ worker processes
def open_blend(path: str) -> None:
    """Open ``path`` unless it is the open file, unchanged since it was opened (a worker keeps it open
    between trees: a bake leaves the scene as it found it)."""
    path = os.path.abspath(path)
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    if bpy.data.filepath and os.path.abspath(bpy.data.filepath) == path and getattr(open_blend, "key", None) == key:
        return
    bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
    open_blend.key = key  # type: ignore[attr-defined]


def set_scene_settings(scene, settings):
    """Set the scene's Stiff Rods settings ``settings`` (name → value) before a bake."""
    for key, value in settings.items():
        setattr(scene.stiff_rods, key, value)


def bake_guarded(blend: str, name: str, start: int, end: int, progress=None, settings: dict | None = None):
    """(the BakeRecord or None, ``{"tree", "record": None, "error" (a message) or None, "seconds", "segments",
    "pid"}``) of tree ``name`` baked in ``blend`` (opened if needed) with the scene's Stiff Rods ``settings`` set
    first (name → value, e.g. ``use_loop``). Bad input and solver failures come back as ``error``; anything else
    (a file that cannot be read) raises, so a scheduler may retry elsewhere."""
    open_blend(blend)
    set_scene_settings(bpy.context.scene, settings or {})
    out: dict = dict(tree=name, record=None, error=None, seconds=None, segments=None, pid=os.getpid())
    try:
        rec = bake_tree(bpy.context.scene, name, start, end, progress)
    except (OSError, MemoryError):
        raise
    except (reader.ReadError, ValueError) as exc:  # bad input: the same message as Bake's
        out["error"] = str(exc)
        return None, out
    except Exception as exc:  # the solver failed on this tree
        out["error"] = f"{type(exc).__name__}: {exc}"
        return None, out
    out.update(seconds=rec.seconds, segments=rec.segments)
    return rec, out


def bake_one(blend: str, name: str, start: int, end: int, progress=None, settings: dict | None = None) -> dict:
    """Open ``blend`` (if needed) and bake tree ``name``: :func:`bake_guarded`'s dict with ``record``, the
    BakeRecord's bytes (the .npz), when it baked."""
    rec, out = bake_guarded(blend, name, start, end, progress, settings)
    if rec is not None:
        out["record"] = rec.to_bytes()
    return out


def reopen_blend(path: str) -> None:
    """Open ``path`` again, whatever :func:`open_blend` remembers (a worker that keyed a tree into its copy of
    the scene gives the next tree the scene as saved)."""
    open_blend.key = None  # type: ignore[attr-defined]
    open_blend(path)


def _say(**msg) -> None:
    sys.stdout.write(MARKER + " " + json.dumps(msg) + "\n")
    sys.stdout.flush()


def worker_main(blend: str, folder: str, start: int, end: int) -> None:
    """The loop of one pool worker: a JSON line ``{"tree": name, "file": name.npz}`` on stdin per tree to
    bake into ``folder``; stops at end of input or ``{"quit": true}``. Answers on stdout (``MARKER`` lines):
    ``ready``, ``frame`` progress, then ``done`` or ``error`` per tree."""
    open_blend(blend)
    _say(ready=True, pid=os.getpid())
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("quit"):
            break
        name, last = msg["tree"], [0.0]

        def progress(frames, name=name, last=last):
            now = time.perf_counter()
            if now - last[0] >= PROGRESS_INTERVAL:
                last[0] = now
                _say(tree=name, frame=frames)

        try:
            out = bake_one(blend, name, start, end, progress)
        except Exception as exc:  # reported to the parent, which decides: the worker goes on
            _say(tree=name, error=f"{type(exc).__name__}: {exc}")
            continue
        if out["error"] is not None:
            _say(tree=name, error=out["error"])
            continue
        save_record(os.path.join(folder, msg["file"]), out["record"])
        _say(tree=name, done=True, seconds=out["seconds"], segments=out["segments"])


# Runs in the worker process: import the add-on from its folder (as package stiff_rods) and start the loop.
_WORKER_CODE = (
    "import importlib.util, sys\n"
    "sys.path += [p for p in {paths!r} if p not in sys.path]\n"
    "spec = importlib.util.spec_from_file_location('stiff_rods', {init!r}, submodule_search_locations=[{root!r}])\n"
    "pkg = importlib.util.module_from_spec(spec)\n"
    "sys.modules['stiff_rods'] = pkg\n"
    "spec.loader.exec_module(pkg)\n"
    "pkg.register()\n"
    "from stiff_rods.addon import forest_pool\n"
    "forest_pool.worker_main({blend!r}, {folder!r}, {start}, {end})\n"
)


def worker_command(blend: str, folder: str, start: int, end: int, kind: str = "blender", binary=None) -> list:
    """The command line of one worker: ``kind`` "blender" (a headless Blender, ``binary`` or this Blender's)
    or "python" (a Python with the ``bpy`` module, ``binary`` or this interpreter). Either imports this
    add-on from its folder, with this process's ``sys.path`` (site-packages, extension wheels) added."""
    code = _WORKER_CODE.format(
        paths=[p for p in sys.path if p],
        init=os.path.join(ADDON_ROOT, "__init__.py"),
        root=ADDON_ROOT,
        blend=os.path.abspath(blend),
        folder=os.path.abspath(folder),
        start=int(start),
        end=int(end),
    )
    if kind == "blender":
        exe = binary or bpy.app.binary_path
        return [exe, "-b", "--factory-startup", os.path.abspath(blend), "--python-expr", code]
    if kind == "python":
        return [binary or sys.executable, "-c", code]
    raise ValueError(f"worker kind must be 'blender' or 'python', got {kind!r}")


@dataclass
class Progress:
    trees_total: int
    trees_done: int
    trees_failed: int
    frames_total: int
    frames_done: int
    fps: float  # simulated frames per second, all workers together
    eta_s: float | None
    finished: bool
    failures: dict  # tree name -> message


class _Worker:
    def __init__(self, index, proc, log):
        self.index, self.proc, self.log = index, proc, log
        self.tree: str | None = None
        self.frames = 0
        self.ready = False  # it has opened the file and waits for trees
        self.alive = True


@dataclass(frozen=True)
class WorkerOptions:
    """How a pool starts its workers beyond their kind: ``binary`` (the Blender or Python to run; None: this
    one), ``env`` (their environment; None: this process's), and how many times a tree whose worker died is
    handed to another worker (``retries``) before it fails."""

    binary: str | None = None
    env: dict | None = None
    retries: int = 1


class ForestPool:
    """Bake ``trees`` over frames ``start``..``end`` in ``workers`` processes that open ``blend`` (a saved
    file: forest_records.save_snapshot for the open one). Results go to ``folder``
    (forest_records.cache_folder). ``start()``, then ``poll()`` until ``progress.finished``; ``cancel()`` stops
    the workers and removes the folder. ``kind`` and ``options``: :func:`worker_command`, :class:`WorkerOptions`."""

    def __init__(self, blend, trees, start, end, folder, workers=2, kind="blender", options=None):
        options = WorkerOptions() if options is None else options
        if not trees:
            raise ValueError("No tree to bake")
        if end < start:
            raise ValueError(f"Bake range is empty: end frame {end} is before start frame {start}")
        if int(workers) < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.blend, self.start_frame, self.end_frame = os.path.abspath(blend), int(start), int(end)
        self.trees = sorted(trees, key=lambda t: -t.weight)  # biggest first: the last trees are short
        self.folder, self.n_workers, self.kind, self.binary = folder, int(workers), kind, options.binary
        self.env, self.retries = options.env, int(options.retries)
        self.frames_per_tree = self.end_frame - self.start_frame + 1
        self.manifest = new_manifest(self.blend, self.trees, self.start_frame, self.end_frame)
        self.entry = {t["name"]: t for t in self.manifest["trees"]}
        self.pending = [t.name for t in self.trees]
        self.attempts = {t.name: 0 for t in self.trees}
        self.events: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.workers: list[_Worker] = []
        self.t0: float | None = None
        self.cancelled = False

    # -- starting and stopping
    def start(self) -> None:
        os.makedirs(self.folder, exist_ok=True)
        write_manifest(self.folder, self.manifest)
        self.t0 = time.perf_counter()
        for i in range(min(self.n_workers, len(self.trees))):
            log = open(os.path.join(self.folder, f"worker_{i}.log"), "w", encoding="utf-8")
            proc = subprocess.Popen(
                worker_command(self.blend, self.folder, self.start_frame, self.end_frame, self.kind, self.binary),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=self.env,
            )
            w = _Worker(i, proc, log)
            self.workers.append(w)
            threading.Thread(target=self._read, args=(w,), daemon=True).start()

    def cancel(self) -> None:
        """Stop every worker now and remove the cache folder: nothing is left behind."""
        self.cancelled = True
        self._stop_workers(kill=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    def close(self) -> None:
        """Let the workers quit (after :meth:`poll` says finished); the cache folder stays for :func:`write_forest`."""
        self._stop_workers(kill=False)

    def _stop_workers(self, kill: bool) -> None:
        for w in self.workers:
            try:
                if kill:
                    w.proc.kill()
                elif w.proc.poll() is None and w.proc.stdin:
                    w.proc.stdin.write(json.dumps({"quit": True}) + "\n")
                    w.proc.stdin.flush()
            except OSError:
                pass
        for w in self.workers:
            try:
                w.proc.wait(timeout=None if kill else 30)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
            if w.proc.stdin:
                try:
                    w.proc.stdin.close()
                except OSError:
                    pass
            w.log.close()

    # -- the workers' side, one reader thread each
    def _send_next(self, w: _Worker) -> None:
        """Give ``w`` the next pending tree (under the lock), or nothing when none is left."""
        if self.cancelled or not self.pending:
            w.tree = None
            return
        name = self.pending.pop(0)
        w.tree, w.frames = name, 0
        self.attempts[name] += 1
        self.events.put(("running", name, w.proc.pid))
        try:
            assert w.proc.stdin is not None
            w.proc.stdin.write(json.dumps({"tree": name, "file": self.entry[name]["file"]}) + "\n")
            w.proc.stdin.flush()
        except OSError:
            pass  # the worker is gone: its reader sees the end of its output and hands the tree on

    def _read(self, w: _Worker) -> None:
        assert w.proc.stdout is not None
        for line in w.proc.stdout:
            if not line.startswith(MARKER + " "):
                w.log.write(line)
                continue
            msg = json.loads(line[len(MARKER) + 1 :])
            with self.lock:
                if msg.get("ready"):
                    w.ready = True
                    self._send_next(w)
                elif "frame" in msg:
                    w.frames = int(msg["frame"])
                elif msg.get("done") or "error" in msg:
                    self.events.put(("done" if msg.get("done") else "failed", msg["tree"], msg))
                    self._send_next(w)
        code = w.proc.wait()
        with self.lock:
            w.alive = False
            lost = w.tree
            w.tree = None
            if lost is not None and not self.cancelled:
                if self.attempts[lost] <= self.retries and any(x.alive for x in self.workers):
                    self.pending.insert(0, lost)
                    for other in self.workers:  # an idle worker takes it at once
                        if other.alive and other.ready and other.tree is None:
                            self._send_next(other)
                            break
                else:
                    self.events.put(("failed", lost, {"error": f"its worker process exited with code {code}"}))
            if not any(x.alive for x in self.workers):
                for name in self.pending:
                    self.events.put(("failed", name, {"error": "no worker process is left to bake it"}))
                self.pending.clear()
            self.events.put(("exit", w.index, code))

    # -- the parent's side
    def poll(self) -> Progress:
        """Take the workers' news (without waiting) and say where the bake is."""
        changed = False
        while True:
            try:
                kind, name, info = self.events.get_nowait()
            except queue.Empty:
                break
            if kind == "exit":
                continue
            e = self.entry[name]
            changed = True
            if kind == "running":
                e.update(status="running", worker=info)
            elif kind == "done":
                e.update(status="done", seconds=info["seconds"], segments=info["segments"], error=None)
            else:
                e.update(status="failed", error=info["error"])
        if changed:
            write_manifest(self.folder, self.manifest)
        return self.progress()

    def progress(self) -> Progress:
        entries = self.manifest["trees"]
        done = sum(e["status"] == "done" for e in entries)
        failed = {e["name"]: e["error"] for e in entries if e["status"] == "failed"}
        with self.lock:
            # a worker's frames include its pre-roll: counted up to the tree's share
            running = sum(min(w.frames, self.frames_per_tree) for w in self.workers if w.tree is not None)
        frames_done = (done + len(failed)) * self.frames_per_tree + running
        frames_total = len(entries) * self.frames_per_tree
        elapsed = time.perf_counter() - (self.t0 or time.perf_counter())
        fps = frames_done / elapsed if elapsed > 0 else 0.0
        eta = (frames_total - frames_done) / fps if fps > 0 else None
        return Progress(
            len(entries),
            done,
            len(failed),
            frames_total,
            frames_done,
            fps,
            eta,
            done + len(failed) == len(entries),
            failed,
        )

    def run(self, on_progress=None, interval: float = 0.1) -> Progress:
        """Start, poll until every tree is done or failed (``on_progress(Progress)`` at each poll), close."""
        self.start()
        try:
            while True:
                p = self.poll()
                if on_progress is not None:
                    on_progress(p)
                if p.finished:
                    return p
                time.sleep(interval)
        finally:
            self.close()
