# weft-gdb.py: gdb commands for programs that use weft's user-level threads.
#
# Load it with   (gdb) source /path/to/share/weft/weft-gdb.py
#
#   info weft-threads            every ULT: id, name, state, worker, and for a
#                                parked one what it waits on
#   weft-thread ID [CMD...]      run a gdb command (default: bt) as if ID were
#                                a thread of its own; ID is a weft_t, or any
#                                expression without spaces giving one (or a
#                                descriptor address)
#   weft-thread all [CMD...]     the same for every ULT that has a stack
#   $weft_ult(ID)                the ULT's descriptor (wf_ult_t *)
#
# It works on a live process (gdb -p PID) and on a core file, and it never
# writes to the inferior: not to memory, not to registers.
#
# Where the data comes from
# -------------------------
# Everything is read through libweft's debug info (the default RelWithDebInfo
# build has it). The id -> descriptor table in src/runtime/registry.c
# ('registry.c'::chunks, filled up to next_fresh) lists every ULT that has
# not been freed, the root ULT included. A descriptor (wf_ult_t,
# src/sched/ult.h) carries the state, the worker, the name and, while it is
# PARKED, block_reason/block_obj. wf_rt.workers[i]->current is the ULT each
# worker runs now; the kernel thread of a worker is found through the
# thread-local 'sched.c'::wf_tls_worker (or, failing that, by comparing
# wf_worker.thread with the pthread handles gdb knows).
#
# How a ULT that is not running gets a backtrace
# ----------------------------------------------
# A parked or runnable ULT is suspended inside the context switch, and its
# registers are in its descriptor (wf_ult.ctx). Go's runtime-gdb.py (and
# QEMU's coroutine script, on a live process) load such registers into a real
# thread ($pc = ...) and run `bt`: that writes to the inferior, and a core
# file's registers cannot be written at all (QEMU patches a copy of the core
# and runs a second gdb on it). Instead this script borrows the selected
# kernel thread and installs a Python unwinder that answers only for that
# thread's innermost frame (#0), claiming that frame's caller has the ULT's
# saved registers. gdb then unwinds frames #1, #2, ... through the ULT's own
# stack with its normal DWARF unwinder. Frame #0 still has the borrowed
# thread's registers; a frame filter relabels it as the switch routine the
# ULT is suspended in (wf_ctx_jump, or wf_ucswap for the ucontext backend),
# and frame #1 is selected before the command runs, so `info locals`,
# `p var`, `info frame` look at the ULT's own code. When the command is done
# the unwinder and filter are switched off, gdb's frame cache is flushed and
# the thread and frame that were selected are selected again.
#
# Limits:
#   - frame #0 is a placeholder: `frame 0` or `info registers` in it see
#     the borrowed kernel thread, not the ULT; commands that would resume
#     that thread or write registers (step, finish, return, call, ...) are
#     refused for a suspended ULT;
#   - only callee-saved registers (and rsp/rip) are known for a suspended
#     ULT; gdb shows the borrowed thread's values for the others;
#   - a ULT that never ran has no stack yet: the script says which function
#     it will start in instead;
#   - an exited ULT has no stack worth reading (it may be freed);
#   - the state fields are read without the runtime's locks: a process
#     stopped in the middle of a switch can show a ULT as RUNNING on a
#     worker whose kernel thread still runs the previous one (the script
#     warns when the thread's stack pointer is outside the ULT's stack).
#
# Only x86-64 is supported (and memory is read as little-endian). For
# aarch64, _saved_registers() needs
#   - asm backend (src/arch/switch_aarch64_aapcs.S, 176-byte frame at
#     ctx.sp): x19..x28 at 0..72, x29 at 80, x30 (resume pc) at 88, d8..d15
#     at 96..152; the caller's sp is ctx.sp + 176, its pc is x30;
#   - ucontext backend (glibc swapcontext): uc_mcontext.regs[19..30],
#     uc_mcontext.sp and uc_mcontext.pc;
#   - the unwinder's register names (x19.., x29, x30, sp, pc) and the
#     new-context checks (x30 == wf_ctx_trampoline; pc == uc_entry).

import struct

import gdb
import gdb.unwinder
from gdb.FrameDecorator import FrameDecorator

# Layout of the id -> descriptor table (src/runtime/registry.c). These are
# macros, absent from debug info; the array length of `chunks` is checked
# against them.
SLOT_BITS = 22
CHUNK_BITS = 12
CHUNK_SIZE = 1 << CHUNK_BITS
SLOT_MASK = (1 << SLOT_BITS) - 1

# Fallbacks for enums, used only if debug info lacks them.
_STATE_FALLBACK = {0: "new", 1: "parked", 2: "running", 3: "runnable", 4: "exited"}
_REASON_FALLBACK = ["none", "join", "mutex", "cond", "rwlock", "sem", "barrier",
                    "once", "sleep", "park", "handoff", "io"]

# glibc's x86-64 gregs indices (sys/ucontext.h REG_*), and the asm frame
# (src/arch/switch_x86_64_sysv.S): slot offsets of what wf_ctx_jump saves.
_UC_GREGS = {"r12": 4, "r13": 5, "r14": 6, "r15": 7, "rbp": 10, "rbx": 11,
             "rsp": 15, "rip": 16}
_ASM_FRAME = {"r12": 8, "r13": 16, "r14": 24, "r15": 32, "rbx": 40, "rbp": 48,
              "rip": 56}
_ASM_FRAME_SIZE = 64

CTX_ASM, CTX_UCONTEXT = 1, 2


class WeftError(gdb.GdbError):
    pass


def _die(msg):
    raise WeftError("weft: " + msg)


# ---- access to the runtime ------------------------------------------------

def _eval(expr):
    return gdb.parse_and_eval(expr)


def _types():
    try:
        ult = gdb.lookup_type("wf_ult_t")
    except gdb.error:
        _die("no debug info for libweft (type wf_ult_t not found). Is this a "
             "weft program? Build weft with -g (the default RelWithDebInfo "
             "build has it) or install its debug symbols.")
    return ult, ult.pointer()


def _static(expr):
    try:
        return _eval(expr)
    except gdb.error as e:
        _die("cannot read %s (%s): libweft without debug info, or a newer "
             "weft than this script knows" % (expr, e))


def _enum_names(tname, fallback, strip):
    try:
        t = gdb.lookup_type(tname)
        return {int(f.enumval): f.name[len(strip):].lower() for f in t.fields()}
    except (gdb.error, RuntimeError):
        if isinstance(fallback, dict):
            return fallback
        return dict(enumerate(fallback))


def _runtime():
    _types()
    rt = _static("wf_rt")
    state = int(rt["state"])
    if state == 0:
        _die("the weft runtime is not running (wf_rt.state is OFF)")
    return rt


def _check_arch():
    try:
        arch = gdb.selected_inferior().architecture().name()
    except AttributeError:  # gdb < 12
        arch = gdb.newest_frame().architecture().name()
    if "x86-64" not in arch:
        _die("backtraces of suspended ULTs are implemented for x86-64 only "
             "(this is %s; see the notes at the top of weft-gdb.py)" % arch)


def _backend():
    return int(_static("wf_ctx_backend"))


def _workers(rt):
    n = int(rt["nworkers"])
    return [rt["workers"][i] for i in range(n)]


def _all_ults():
    """Every descriptor in the registry, in id (= creation) order."""
    _, ult_ptr = _types()
    chunks = _static("'registry.c'::chunks")
    lo, hi = chunks.type.range()
    if hi - lo + 1 != 1 << (SLOT_BITS - CHUNK_BITS):
        _die("registry layout changed (%d chunks); update SLOT_BITS/CHUNK_BITS "
             "in weft-gdb.py" % (hi - lo + 1))
    fresh = int(_static("'registry.c'::next_fresh"))
    inf = gdb.selected_inferior()
    psize = ult_ptr.sizeof
    fmt = "<" + ("Q" if psize == 8 else "I")
    found = []
    for ci in range(min(hi - lo + 1, (fresh + CHUNK_SIZE - 1) // CHUNK_SIZE)):
        base = int(chunks[ci])
        if not base:
            continue
        n = min(CHUNK_SIZE, fresh - ci * CHUNK_SIZE)
        try:
            mem = bytes(inf.read_memory(base, n * psize))
        except gdb.MemoryError:
            gdb.write("weft: registry chunk %d at 0x%x is unreadable\n" % (ci, base))
            continue
        for i in range(n):
            (p,) = struct.unpack_from(fmt, mem, i * psize)
            if p:
                found.append((ci * CHUNK_SIZE + i, gdb.Value(p).cast(ult_ptr)))
    result = []
    for slot, u in found:
        try:
            uid = int(u["id"])
        except gdb.MemoryError:
            gdb.write("weft: slot %d: descriptor 0x%x is unreadable\n" % (slot, int(u)))
            continue
        if uid & SLOT_MASK != slot:
            gdb.write("weft: slot %d: descriptor 0x%x has id %d (being reused?)\n"
                      % (slot, int(u), uid))
        result.append(u)
    result.sort(key=lambda u: int(u["id"]))
    return result


def _find_ult(arg):
    """A ULT by id, or by descriptor address."""
    try:
        v = int(_eval(arg))
    except gdb.error as e:
        _die("bad ULT id %r: %s" % (arg, e))
    ults = _all_ults()
    for u in ults:
        if int(u["id"]) == v:
            return u
    for u in ults:
        if int(u) == v:
            return u
    _die("no ULT with id %d (see info weft-threads)" % v)


def _name(u):
    try:
        return u["name"].string(errors="replace")
    except gdb.error:
        return "?"


class _Selection:
    """Restores the selected thread and frame on exit."""

    def __enter__(self):
        self.thread = gdb.selected_thread()
        self.frame = None
        self.level = None
        try:
            self.frame = gdb.selected_frame()
            self.level = self.frame.level()
        except gdb.error:
            pass
        return self

    def __exit__(self, *exc):
        try:
            if self.thread is not None and self.thread.is_valid():
                self.thread.switch()
            if self.frame is not None:
                if self.frame.is_valid():
                    self.frame.select()
                else:
                    f = gdb.newest_frame()
                    for _ in range(self.level):
                        if f.older() is None:
                            break
                        f = f.older()
                    f.select()
        except gdb.error:
            pass
        return False


def _worker_threads(rt):
    """{worker index: gdb.InferiorThread} for the workers we can place."""
    workers = _workers(rt)
    by_addr = {int(w): i for i, w in enumerate(workers)}
    threads = [t for t in gdb.selected_inferior().threads() if t.is_valid()]
    found = {}
    with _Selection():
        for t in threads:
            try:
                t.switch()
                i = by_addr.get(int(_eval("'sched.c'::wf_tls_worker")))
            except gdb.error:
                continue
            if i is not None:
                found[i] = t
    # No TLS (no libthread_db): match wf_worker.thread with the pthread
    # handles gdb knows. Worker 0 of a runtime with a root ULT is the thread
    # that called weft_init; its wf_worker.thread is not set.
    for i, w in enumerate(workers):
        if i in found:
            continue
        want = int(w["thread"])
        for t in threads:
            try:
                h = t.handle()
            except (gdb.error, AttributeError, RuntimeError):
                continue
            if h and int.from_bytes(h, "little") == want and want:
                found[i] = t
        if i == 0 and 0 not in found and int(rt["root"]) and \
                _name(rt["root"]) == "main":
            pid = gdb.selected_inferior().pid
            for t in threads:
                if t.ptid[1] == pid:
                    found[0] = t
    return found


def _running_on(workers, u):
    for i, w in enumerate(workers):
        try:
            if int(w["current"]) == int(u):
                return i
        except gdb.MemoryError:
            pass
    return None


def _describe_wait(u, reasons):
    r = int(u["block_reason"])
    obj = u["block_obj"]
    name = reasons.get(r, "reason %d" % r)
    if r == 0:
        return "-"
    if name in ("join", "handoff"):
        _, ult_ptr = _types()
        t = obj.cast(ult_ptr)
        try:
            return '%s ult %d "%s"' % ("join" if name == "join" else "handoff to",
                                      int(t["id"]), _name(t))
        except gdb.MemoryError:
            return "%s ult at 0x%x (unreadable)" % (name, int(obj))
    if name in ("sleep", "park") or not int(obj):
        return name  # (a sleep waits on a word of its own: nothing to show)
    # str() of a void * names the static it points into: "0x... <gt_mutex>".
    return "%s %s" % (name, str(obj.cast(gdb.lookup_type("void").pointer())))


# ---- the listing ------------------------------------------------------------

class InfoWeftThreads(gdb.Command):
    """List weft's user-level threads.

Usage: info weft-threads

For every ULT: its id (weft_t), name, state (running, runnable, parked,
exited), the worker running it (or the one it last ran on; "(bound)" if it
may run on no other) and, when parked, what it waits on. "*" marks the ULT
running on gdb's selected thread."""

    def __init__(self):
        super().__init__("info weft-threads", gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        rt = _runtime()
        workers = _workers(rt)
        states = _enum_names("enum wf_ult_state", _STATE_FALLBACK, "WF_")
        reasons = _enum_names("enum wf_block_reason", _REASON_FALLBACK, "WF_BLOCK_")
        threads = _worker_threads(rt)
        sel = gdb.selected_thread()
        here = None
        for i, t in threads.items():
            if sel is not None and t.ptid == sel.ptid:
                here = i
        rows = []
        for u in _all_ults():
            try:
                state = int(u["state"])
                on = _running_on(workers, u)
                bound = int(u["bound_worker"])
                worker = on if on is not None else int(u["last_worker"])
                if worker < 0:  # never ran
                    worker = bound
                wtext = "-" if worker < 0 else str(worker)
                if bound >= 0:
                    wtext += " (bound)"
                stext = states.get(state, "state %d" % state)
                if on is not None and stext != "running":
                    stext += "?"  # caught mid-switch
                wait = _describe_wait(u, reasons) if stext == "parked" else ""
                mark = "*" if on is not None and on == here else " "
                rows.append((mark, str(int(u["id"])), _name(u), stext, wtext, wait))
            except gdb.MemoryError as e:
                rows.append((" ", "?", "0x%x" % int(u), "unreadable", "", str(e)))
        head = (" ", "ID", "NAME", "STATE", "WORKER", "WAITING ON")
        widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
        for r in [head] + rows:
            line = "%s %s  %s  %s  %s  %s" % (
                r[0], r[1].rjust(widths[1]), r[2].ljust(widths[2]),
                r[3].ljust(widths[3]), r[4].ljust(widths[4]), r[5])
            gdb.write(line.rstrip() + "\n")
        lwps = ", ".join("%d: LWP %s" % (i, threads[i].ptid[1] if i in threads else "?")
                         for i in range(len(workers)))
        gdb.write("%d ULTs; workers %s; context backend: %s\n" % (
            len(rows), lwps, "ucontext" if _backend() == CTX_UCONTEXT else "asm"))


# ---- unwinding a suspended ULT ---------------------------------------------

class _FrameId:
    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


class _Borrow:
    """What the unwinder says while a command runs for a suspended ULT."""

    def __init__(self, ptid, anchor, regs, frame0_sp, frame0_pc, label):
        self.ptid = ptid
        self.anchor = anchor  # (rsp, rip) of the borrowed thread's frame #0
        self.regs = regs
        self.frame0_sp = frame0_sp
        self.frame0_pc = frame0_pc
        self.label = label


class _SavedContextUnwinder(gdb.unwinder.Unwinder):
    """Gives frame #0 of the borrowed thread the ULT's registers as its
    caller's, while a weft-thread command runs; does nothing otherwise."""

    def __init__(self):
        super().__init__("weft-saved-context")
        self.borrow = None

    def __call__(self, pending_frame):
        b = self.borrow
        if b is None:
            return None
        t = gdb.selected_thread()
        if t is None or t.ptid != b.ptid:
            return None
        try:
            if pending_frame.level() != 0:
                return None
        except AttributeError:  # gdb < 11 has no level(): compare registers
            if (int(pending_frame.read_register("rsp")),
                    int(pending_frame.read_register("rip"))) != b.anchor:
                return None
        info = pending_frame.create_unwind_info(_FrameId(
            gdb.Value(b.frame0_sp).cast(pending_frame.read_register("rsp").type),
            gdb.Value(b.frame0_pc).cast(pending_frame.read_register("rip").type)))
        for reg, val in b.regs.items():
            rtype = pending_frame.read_register(reg).type
            info.add_saved_register(reg, gdb.Value(val).cast(rtype))
        return info


class _SwitchFrame(FrameDecorator):
    def __init__(self, fobj, label, pc):
        super().__init__(fobj)
        self._label = label
        self._pc = pc

    def function(self):
        return self._label

    def address(self):
        return self._pc

    def filename(self):
        return None

    def line(self):
        return None

    def frame_args(self):
        return None

    def frame_locals(self):
        return None


class _SwitchFrameFilter:
    """Shows the borrowed frame #0 as the switch routine the ULT sleeps in."""

    def __init__(self, unwinder):
        self.name = "weft-saved-context"
        self.priority = 100
        self.enabled = True
        self.unwinder = unwinder

    def filter(self, frames):
        b = self.unwinder.borrow
        t = gdb.selected_thread()
        if b is None or t is None or t.ptid != b.ptid:
            return frames
        return self._relabel(frames, b)

    @staticmethod
    def _relabel(frames, b):
        for fd in frames:
            if fd.inferior_frame().level() == 0:
                yield _SwitchFrame(fd, b.label, b.frame0_pc)
            else:
                yield fd


# The unwinder stays registered (it answers nothing unless a command borrows
# a thread); the filter is in gdb.frame_filters only while one does, so that
# plain backtraces do not go through Python at all.
_unwinder = _SavedContextUnwinder()
gdb.unwinder.register_unwinder(None, _unwinder, replace=True)
_filter = _SwitchFrameFilter(_unwinder)

# Commands that would resume the borrowed kernel thread or write registers
# computed from the ULT's frames into it.
_RESUMING = {"c", "continue", "fg", "s", "step", "n", "next", "si", "stepi",
             "ni", "nexti", "finish", "fin", "u", "until", "advance", "jump",
             "j", "return", "call", "signal", "queue-signal", "kill", "run",
             "r", "start", "starti", "detach", "reverse-step", "reverse-next",
             "reverse-continue", "reverse-finish", "record"}


def _symbol_addr(name):
    try:
        return int(_eval("&'%s'" % name).cast(gdb.lookup_type("unsigned long")))
    except gdb.error:
        return None


def _read_words(addr, n):
    mem = bytes(gdb.selected_inferior().read_memory(addr, 8 * n))
    return struct.unpack("<%dQ" % n, mem)


def _stack_bounds(u):
    lo = int(u["ctx"]["stack_lo"])
    return lo, lo + int(u["ctx"]["stack_size"])


def _saved_registers(u):
    """(regs of the switch's caller, frame #0 sp, frame #0 pc, label), or a
    string saying why there is nothing to unwind."""
    _check_arch()
    ctx = u["ctx"]
    if _backend() == CTX_UCONTEXT:
        ucp = ctx["uc"]
        if not int(ucp):
            return "its ucontext pointer is NULL"
        gregs = ucp["uc_mcontext"]["gregs"]
        regs = {r: int(gregs[i]) & 0xFFFFFFFFFFFFFFFF for r, i in _UC_GREGS.items()}
        if regs["rip"] == _symbol_addr("uc_entry"):
            return None
        label = "wf_ucswap"
        sp = regs["rsp"] - 8
    else:
        sp = int(ctx["sp"])
        if not sp:
            return "its saved stack pointer is NULL"
        words = _read_words(sp, _ASM_FRAME_SIZE // 8)
        regs = {r: words[off // 8] for r, off in _ASM_FRAME.items()}
        regs["rsp"] = sp + _ASM_FRAME_SIZE
        if regs["rip"] == _symbol_addr("wf_ctx_trampoline"):
            return None
        label = "wf_ctx_jump"
    lo, hi = _stack_bounds(u)
    if lo and not lo <= regs["rsp"] <= hi:
        return "its saved stack pointer 0x%x is outside its stack [0x%x, 0x%x)" % (
            regs["rsp"], lo, hi)
    pc = _symbol_addr(label) or regs["rip"]
    return regs, sp, pc, label


def _run_on_saved(u, cmd, from_tty):
    saved = _saved_registers(u)
    if saved is None:
        gdb.write("It has not run yet; it will start in %s (arg %s).\n" % (
            u["fn"], u["arg"]))
        return
    if isinstance(saved, str):
        _die("ULT %d: cannot unwind: %s" % (int(u["id"]), saved))
    regs, sp, pc, label = saved
    if cmd.split(None, 1)[0] in _RESUMING:
        _die("'%s' would act on the borrowed kernel thread, not on the ULT; "
             "weft-thread only runs commands that inspect" % cmd)
    with _Selection():
        t = gdb.selected_thread()
        if t is None:
            _die("no thread to borrow (is the process running, or a core loaded?)")
        f0 = gdb.newest_frame()
        anchor = (int(f0.read_register("rsp")), int(f0.read_register("rip")))
        _unwinder.borrow = _Borrow(t.ptid, anchor, regs, sp, pc, label)
        gdb.frame_filters[_filter.name] = _filter
        gdb.invalidate_cached_frames()
        try:
            first = gdb.newest_frame().older()
            if first is not None:
                first.select()
            gdb.execute(cmd, from_tty)
        finally:
            _unwinder.borrow = None
            gdb.frame_filters.pop(_filter.name, None)
            gdb.invalidate_cached_frames()


def _run_on_worker(u, worker, threads, cmd, from_tty):
    t = threads.get(worker)
    if t is None:
        _die("ULT %d runs on worker %d, whose kernel thread gdb does not "
             "show" % (int(u["id"]), worker))
    with _Selection():
        t.switch()
        lo, hi = _stack_bounds(u)
        sp = int(_eval("$sp"))
        if lo and not lo <= sp < hi:
            gdb.write("warning: worker %d's stack pointer 0x%x is outside ULT "
                      "%d's stack: caught in the middle of a switch?\n"
                      % (worker, sp, int(u["id"])))
        gdb.execute(cmd, from_tty)


def _apply(u, cmd, from_tty, rt, workers, threads, states, reasons):
    state = int(u["state"])
    stext = states.get(state, "state %d" % state)
    on = _running_on(workers, u)
    where = ""
    if on is not None:
        lwp = threads[on].ptid[1] if on in threads else "?"
        where = "running on worker %d, LWP %s" % (on, lwp)
    elif stext == "parked":
        where = "parked: " + _describe_wait(u, reasons)
    else:
        lw = int(u["last_worker"])
        where = stext + ("" if lw < 0 else ", last on worker %d" % lw)
    gdb.write('\nULT %d "%s" (%s):\n' % (int(u["id"]), _name(u), where))
    if on is not None:
        _run_on_worker(u, on, threads, cmd, from_tty)
    elif stext == "exited":
        gdb.write("It has exited; its stack is no longer in use.\n")
    elif stext == "running":
        _die("ULT %d is marked running but no worker runs it: caught in the "
             "middle of a switch; try again" % int(u["id"]))
    else:
        _run_on_saved(u, cmd, from_tty)


class WeftThread(gdb.Command):
    """Run a gdb command in the context of a weft ULT.

Usage: weft-thread ID [COMMAND]
       weft-thread all [COMMAND]

ID is a ULT id (weft_t, as listed by info weft-threads), or any expression
that evaluates to one or to a descriptor address. COMMAND defaults to bt.
A running ULT's command runs on the kernel thread of its worker. For a
parked or runnable ULT, frames #1 and up are the ULT's own (unwound from its
saved registers); frame #0 stands for the context switch it is suspended in,
and frame #1 is selected when COMMAND starts. Commands that would resume the
borrowed kernel thread (step, finish, call, ...) are refused. Nothing in the
inferior is changed; the selected thread and frame are restored afterwards.
Works on core files too."""

    def __init__(self):
        super().__init__("weft-thread", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        argv = arg.strip().split(None, 1)
        if not argv:
            raise gdb.GdbError("usage: weft-thread ID|all [COMMAND]")
        cmd = argv[1] if len(argv) > 1 else "bt"
        rt = _runtime()
        workers = _workers(rt)
        threads = _worker_threads(rt)
        states = _enum_names("enum wf_ult_state", _STATE_FALLBACK, "WF_")
        reasons = _enum_names("enum wf_block_reason", _REASON_FALLBACK, "WF_BLOCK_")
        if argv[0] == "all":
            for u in _all_ults():
                try:
                    _apply(u, cmd, from_tty, rt, workers, threads, states, reasons)
                except (gdb.error, gdb.GdbError) as e:
                    gdb.write("%s\n" % e)
        else:
            _apply(_find_ult(argv[0]), cmd, from_tty, rt, workers, threads,
                   states, reasons)


class WeftUltFunction(gdb.Function):
    """$weft_ult(ID): the descriptor (wf_ult_t *) of the ULT with that id."""

    def __init__(self):
        super().__init__("weft_ult")

    def invoke(self, uid):
        return _find_ult(str(int(uid)))


InfoWeftThreads()
WeftThread()
WeftUltFunction()
