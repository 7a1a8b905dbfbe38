"""Whether an output file can be written, tried before any work: a run of minutes must not
end without its file, and ``os.access`` says yes to root anywhere (``/proc``, a read-only
file system). Used by every subcommand that writes files (:mod:`cusolver_trace.cli` and
``cusolver-trace trace``)."""
from __future__ import annotations

import os
import stat


def output_problem(path: str, flag: str, *, reads=(), dash: bool = True) -> str | None:
    """Why ``path`` cannot be written as ``flag``'s file, or None when it can. ``reads``:
    files the run reads (a script itself, an input), which the output may not be
    (:func:`same_file`); ``dash=False``: ``-`` is refused (a command whose stdout carries
    something else), not taken as a file of that name.

    Nothing the user has is changed: an existing regular file is opened to append and
    closed (nothing written, nothing truncated); a device (``/dev/null``, ``/dev/stdout``)
    is opened to write and closed; a new file is created and removed at once (which also
    catches a name too long, a read-only or virtual file system, a link to a missing
    folder). A pipe is left alone: opening it to try would hand its reader an end of file.

    Examples
    --------
    >>> output_problem("/nonexistent-folder/x.json", "--json")
    '--json /nonexistent-folder/x.json: no such folder: /nonexistent-folder'
    >>> output_problem("", "--out")
    '--out: empty file name'
    >>> output_problem("/etc/hostname", "--json", reads=("/etc/../etc/hostname",))
    '--json /etc/hostname is /etc/../etc/hostname, which this run reads; it would be overwritten'
    >>> output_problem("-", "--json", dash=False)
    '--json -: the output goes to a file here (stdout has the table); name a file'
    """
    if not path:
        return f"{flag}: empty file name"
    if path == "-" and not dash:
        return f"{flag} -: the output goes to a file here (stdout has the table); name a file"
    for src in reads:
        if same_file(path, src):
            return f"{flag} {path} is {src}, which this run reads; it would be overwritten"
    if path.endswith(("/", os.sep)) or os.path.isdir(path):
        return f"{flag} {path}: is a folder; give a file name"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        return f"{flag} {path}: cannot write there: {exc.strerror or exc}"
    try:
        if st is not None:
            if stat.S_ISFIFO(st.st_mode):
                return None
            mode = os.O_WRONLY | (os.O_APPEND if stat.S_ISREG(st.st_mode) else 0)
            os.close(os.open(path, mode))
            return None
        # a new file, or a link to one that is not there yet: its real place is tried
        target = os.path.realpath(path) if os.path.islink(path) else os.path.abspath(path)
        folder = os.path.dirname(target)
        if not os.path.isdir(folder):
            return f"{flag} {path}: no such folder: {folder}"
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        os.remove(target)
    except OSError as exc:
        return f"{flag} {path}: cannot write there: {exc.strerror or exc}"
    return None


def same_file(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are one regular file: the same inode where both exist (hard
    and symbolic links included), else the same resolved path (one that does not exist yet);
    devices such as ``/dev/null`` may be shared. What keeps an output from overwriting an
    input, or a second output.

    Examples
    --------
    >>> same_file("/nonexistent/a.json", "/nonexistent/../nonexistent/a.json")
    True
    >>> same_file("/dev/null", "/dev/null")
    False
    """
    try:
        return os.path.samefile(a, b) and os.path.isfile(a)
    except (OSError, ValueError):  # one of them does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def gpu_absent_reason() -> str | None:
    """Why no NVIDIA GPU can be visible to this process, found without importing torch or
    initializing CUDA (None: one may be): ``CUDA_VISIBLE_DEVICES`` hides every device, or
    the machine has no NVIDIA driver device.

    Examples
    --------
    >>> import os
    >>> os.environ["CUDA_VISIBLE_DEVICES"] = ""
    >>> gpu_absent_reason()
    'no GPU visible (CUDA_VISIBLE_DEVICES is empty)'
    >>> del os.environ["CUDA_VISIBLE_DEVICES"]
    """
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None and vis.strip() in ("", "-1", "none", "NoDevFiles"):
        return f"no GPU visible (CUDA_VISIBLE_DEVICES is {'empty' if not vis.strip() else repr(vis)})"
    if not any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia",
                                           "/dev/dxg")):   # /dev/dxg: WSL's GPU
        return "no NVIDIA GPU or driver on this machine"
    return None
