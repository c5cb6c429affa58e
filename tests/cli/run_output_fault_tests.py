#!/usr/bin/env python3
"""Output faults: every case ends in exit 2 (or 1) with one clear message, or a correct result; never a
crash, a hang, a partial file or a leftover temporary file.
 - unwritable outputs (a missing directory, a directory, a read-only directory), full disks (/dev/full for
   streams, RLIMIT_FSIZE for files), stdout that cannot be written;
 - devices and pipes are written in place (`--json /dev/null` keeps /dev/null a device, as root);
 - two outputs: the first is not left behind when the second fails; SIGTERM/SIGINT remove temporaries;
 - sweeps: kill -9 during a sweep and during the resume rewrite (no finished line lost, none twice, no cut
   line), a second sweep on the same --out is refused, a foreign --out is refused untouched, a full disk
   stops the sweep with whole lines only, children die with a killed sweep or check;
 - `fmsim check`: a plan whose scenario stops fitting in HBM is a failing JUnit case (exit 1); a missing
   --baseline directory is refused.
Usage: run_output_fault_tests.py FMSIM SOURCE_DIR"""
import json
import os
import random
import resource
import signal
import stat
import subprocess
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

from cli_support import CONFIGS, FMSIM, TOPO, expect_bad_input, run, run_tests, test, write

TMP = tempfile.mkdtemp(prefix="fmsim-output-fault-tests-")
CLUSTER = os.path.join(TOPO, "p5-2node.json")
SERVING = os.path.abspath(os.path.join(CONFIGS, "serving", "llama3.3-70b-p5en.json"))
TRAINING = os.path.abspath(os.path.join(CONFIGS, "training", "llama3-70b-p5.json"))
IS_ROOT = os.geteuid() == 0


def sweep_file(name, rates, requests=40):
    """A small serving sweep: one point per rate (each point is a short child `fmsim serve`)."""
    return write(TMP, name + ".json", json.dumps({
        "schema": "fmsim.sweep/1", "name": name, "command": "serve", "scenario": SERVING,
        "set": [f"workload.requests={requests}"], "grid": {"workload.rate": [f"{r}/s" for r in rates]}}))


SWEEP = sweep_file("small", range(1, 25))
POINTS = 24


def sweep_lines(path):
    """The lines of a sweep output: every one whole JSON, each index once."""
    with open(path) as f:
        text = f.read()
    assert text == "" or text.endswith("\n"), f"{path}: cut last line {text[-80:]!r}"
    docs = [json.loads(line) for line in text.splitlines()]
    indices = [d["index"] for d in docs]
    assert len(indices) == len(set(indices)), f"{path}: a point written twice: {sorted(indices)}"
    return {d["index"]: d for d in docs}


def no_temporaries(directory=TMP):
    leftovers = [f for f in os.listdir(directory) if ".tmp." in f]
    assert not leftovers, f"temporary files left: {leftovers}"


def one_line_error(proc, code, *fragments):
    assert proc.returncode == code, f"exit {proc.returncode}, stderr: {proc.stderr!r}"
    lines = [l for l in proc.stderr.splitlines() if l.strip() and "[warning]" not in l]
    errors = [l for l in lines if l.startswith("fmsim: ")]
    assert len(errors) == 1 and "internal error" not in errors[0], f"expected one error line, got {lines!r}"
    for fragment in fragments:
        assert fragment in errors[0], f"{fragment!r} not in {errors[0]!r}"


def children_of(pid):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
        except (OSError, IndexError):
            pass
    return found


def descendants_of(pid):
    """Children, grandchildren...: a point's `fmsim serve` runs its simulation in a forked process."""
    found, frontier = [], [pid]
    while frontier:
        children = children_of(frontier.pop())
        found += children
        frontier += children
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(condition, timeout=30.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def limited_file_size(limit):
    """preexec_fn: files may grow to `limit` bytes; beyond, write() fails with EFBIG (SIGXFSZ ignored)."""
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


# ---- single outputs -------------------------------------------------------------------------------------

@test
def unwritable_outputs_exit_2_and_leave_nothing():
    out = os.path.join(TMP, "unwritable")
    os.mkdir(out)
    expect_bad_input(["topo", CLUSTER, "--json", os.path.join(out, "missing", "x.json")], ["x.json", "does not exist"],
                     os.path.join(out, "x.json"))
    os.mkdir(os.path.join(out, "a-dir"))
    proc = run("topo", CLUSTER, "--json", os.path.join(out, "a-dir"))
    one_line_error(proc, 2, "a-dir", "is a directory")
    assert os.listdir(out) == ["a-dir"] and os.listdir(os.path.join(out, "a-dir")) == []
    # A read-only directory. Root ignores permissions: then it runs as nobody, where nobody can read fmsim.
    readonly = os.path.join(out, "readonly")
    os.mkdir(readonly)
    os.chmod(readonly, 0o555)
    target = os.path.join(readonly, "x.json")
    if IS_ROOT:
        for directory in (TMP, out):
            os.chmod(directory, 0o755)
        proc = subprocess.run([FMSIM, "topo", CLUSTER, "--json", target], capture_output=True, text=True, timeout=60,
                              preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
        if "x.json" not in proc.stderr:
            print(f"  (read-only directory skipped: as nobody, fmsim cannot run here: {proc.stderr.strip()[:200]})")
            return
    else:
        proc = run("topo", CLUSTER, "--json", target)
    one_line_error(proc, 2, "x.json", "Permission denied")
    assert os.listdir(readonly) == []


@test
def full_disk_on_a_file_exits_2_without_a_partial_file():
    target = os.path.join(TMP, "big.json")
    proc = subprocess.run([FMSIM, "topo", CLUSTER, "--graph-json", target], capture_output=True, text=True,
                          preexec_fn=limited_file_size(4096), timeout=60)
    one_line_error(proc, 2, "big.json", "write failed", "File too large")
    assert not os.path.exists(target)
    no_temporaries()


@test
def full_stdout_or_device_exits_2():
    with open("/dev/full", "w") as full:
        proc = subprocess.run([FMSIM, "topo", CLUSTER], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    one_line_error(proc, 2, "standard output", "No space left on device")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([FMSIM, "topo", CLUSTER, "--json", "-"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    one_line_error(proc, 2, "standard output", "No space left on device")
    # fmsim check prints its last line with printf, after the table; its JUnit file is then not written.
    junit = os.path.join(TMP, "full-stdout.xml")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([FMSIM, "-q", "check", os.path.join(CONFIGS, "plans", "llama3.3-70b-p5en-serving.json"), "--junit", junit],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    one_line_error(proc, 2, "standard output", "No space left on device")
    assert not os.path.exists(junit)
    proc = run("topo", CLUSTER, "--json", "/dev/full")
    one_line_error(proc, 2, "/dev/full", "No space left on device")


@test
def devices_and_pipes_are_written_in_place():
    proc = run("topo", CLUSTER, "--json", "/dev/null")
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is no longer a character device"
    assert not [f for f in os.listdir("/dev") if f.startswith("null.tmp")]
    fifo = os.path.join(TMP, "fifo")
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(open(fifo).read()))
    reader.start()
    proc = run("topo", CLUSTER, "--json", fifo)
    reader.join(30)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the named pipe was replaced by a file"
    assert json.loads(received[0])["gpus"] == 16
    # /dev/stdout is this process's stdout, in order with the summary, even when it is a file.
    out = os.path.join(TMP, "stdout.txt")
    with open(out, "w") as f:
        proc = subprocess.run([FMSIM, "topo", CLUSTER, "--dot", "/dev/stdout"], stdout=f, stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = open(out).read()
    assert "graph" in text and text.index("graph") > 0, text[:200]


@test
def dev_null_survives_as_root():
    if not IS_ROOT:
        print("  (skipped: not root; --json /dev/null could not replace it anyway)")
        return
    before = os.stat("/dev/null")
    for args in (["topo", CLUSTER, "--json", "/dev/null"], ["topo", CLUSTER, "--dot", "/dev/null", "--graph-json", "/dev/null"]):
        proc = run(*args)
        assert proc.returncode == 0, proc.stderr
        after = os.stat("/dev/null")
        assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino


# ---- several outputs, signals ---------------------------------------------------------------------------

@test
def a_failed_second_output_leaves_no_first_file():
    first = os.path.join(TMP, "first.json")
    proc = run("topo", CLUSTER, "--json", first, "--graph-json", os.path.join(TMP, "no-such-dir", "g.json"))
    one_line_error(proc, 2, "g.json", "does not exist")
    assert not os.path.exists(first), "the first output was left behind"
    no_temporaries()
    proc = run("topo", CLUSTER, "--json", first, "--graph-json", os.path.join(TMP, "g.json"))
    assert proc.returncode == 0 and os.path.exists(first) and os.path.exists(os.path.join(TMP, "g.json")), proc.stderr
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(first).st_mode & 0o777 == 0o666 & ~mask, "outputs get the usual permissions, not mkstemp's 0600"


@test
def sigterm_and_sigint_remove_temporary_files():
    # The first output is staged as a temporary file; the second, a named pipe nobody reads, blocks.
    for number, sig in enumerate((signal.SIGTERM, signal.SIGINT)):
        directory = os.path.join(TMP, f"signal{number}")
        os.mkdir(directory)
        fifo = os.path.join(directory, "pipe")
        os.mkfifo(fifo)
        child = subprocess.Popen([FMSIM, "topo", CLUSTER, "--json", os.path.join(directory, "a.json"), "--graph-json", fifo],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert wait_for(lambda: any(".tmp." in f for f in os.listdir(directory))), "no temporary file staged"
        time.sleep(0.1)
        child.send_signal(sig)
        child.wait(30)
        assert child.returncode == -sig, child.returncode
        assert sorted(os.listdir(directory)) == ["pipe"], os.listdir(directory)


# ---- sweeps ---------------------------------------------------------------------------------------------

REFERENCE = os.path.join(TMP, "reference.jsonl")


@test
def sweep_reference_run():
    proc = run("-q", "sweep", SWEEP, "--out", REFERENCE, "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    assert sorted(sweep_lines(REFERENCE)) == list(range(POINTS))


def same_as_reference(path):
    got, want = sweep_lines(path), sweep_lines(REFERENCE)
    assert sorted(got) == sorted(want), f"points {sorted(set(want) - set(got))} missing"
    for index, doc in got.items():
        assert doc == want[index], f"point {index} differs from an uninterrupted sweep"


@test
def kill_9_during_sweeps_and_resumes_loses_nothing():
    path = os.path.join(TMP, "killed.jsonl")
    rng = random.Random(22)
    finished = {}
    for attempt in range(4):
        child = subprocess.Popen([FMSIM, "-q", "sweep", SWEEP, "--out", path, "--jobs", "2"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        goal = len(finished) + rng.randint(1, 3)
        wait_for(lambda: os.path.exists(path) and open(path).read().count("\n") >= goal, 30)
        time.sleep(rng.uniform(0, 0.05))
        child.kill()
        child.wait()
        wait_for(lambda: not children_of(child.pid), 5)
        now = sweep_lines(path) if open(path).read().endswith("\n") else None
        if now is None:  # killed while writing a line: every other line must be whole
            text = open(path).read()
            now = {json.loads(l)["index"]: json.loads(l) for l in text[:text.rfind("\n") + 1].splitlines()}
        assert set(finished) <= set(now), f"finished points lost: {sorted(set(finished) - set(now))}"
        finished = now
    no_temporaries()
    proc = run("-q", "sweep", SWEEP, "--out", path, "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    same_as_reference(path)
    no_temporaries()


@test
def kill_9_during_the_resume_rewrite_keeps_every_finished_line():
    # A long sweep whose output holds 400 finished points of ~40 kB each (16 MB) and a cut last line:
    # the resume rewrites the file, and a kill at any moment of it must keep every finished line.
    many = sweep_file("many", range(1, 2001))
    path = os.path.join(TMP, "rewrite.jsonl")
    padding = "x" * 40000
    kept = "".join(json.dumps({"index": i, "point": {"workload.rate": f"{i + 1}/s"}, "result": {"padding": padding}, "status": "ok"},
                              separators=(",", ":")) + "\n" for i in range(400))
    rng = random.Random(7)
    for attempt in range(6):
        with open(path, "w") as f:
            f.write(kept)
            f.write('{"index": 400, "point": {"workload.r')  # a line cut short: the resume rewrites the file
        child = subprocess.Popen([FMSIM, "-q", "sweep", many, "--out", path, "--jobs", "1"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        # Kill the moment the file is shorter than its finished lines (a rewrite in place: what used to
        # lose them), else at a random moment of the read-back, rewrite or first points.
        deadline = time.time() + rng.uniform(0.1, 1.0)
        while time.time() < deadline and os.path.getsize(path) >= len(kept):
            time.sleep(0.0005)
        child.kill()
        child.wait()
        with open(path) as f:
            text = f.read()
        assert text.startswith(kept), f"attempt {attempt}: finished lines lost in the rewrite ({text.count(chr(10))} lines left)"
        wait_for(lambda: not children_of(child.pid), 5)
    # A SIGKILL in the rewrite can leave its temporary file; the next sweep on the file removes it (here
    # a shard with nothing left to do).
    proc = run("-q", "sweep", many, "--out", path, "--shard-index", "0", "--shard-count", "2000")
    assert proc.returncode == 0, proc.stderr
    no_temporaries()
    os.remove(path)  # 16 MB


@test
def a_second_sweep_on_the_same_out_is_refused():
    path = os.path.join(TMP, "concurrent.jsonl")
    first = subprocess.Popen([FMSIM, "-q", "sweep", SWEEP, "--out", path, "--jobs", "1"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: os.path.exists(path) and children_of(first.pid)), "the first sweep did not start"
        second = run("-q", "sweep", SWEEP, "--out", path, "--jobs", "2", timeout=60)
        one_line_error(second, 2, "concurrent.jsonl", "another fmsim sweep")
    finally:
        first.wait(120)
    assert first.returncode == 0, first.stderr.read()
    same_as_reference(path)


@test
def a_foreign_out_file_is_refused_untouched():
    other = sweep_file("other", [5, 6])
    other_out = os.path.join(TMP, "other.jsonl")
    assert run("-q", "sweep", other, "--out", other_out).returncode == 0
    cases = {"notes.txt": "my notes\nsecond line\n", "cut.txt": "not a sweep", "json.jsonl": '{"a": 1}\n',
             "other.jsonl": open(other_out).read()}
    for name, text in cases.items():
        path = write(TMP, name, text)
        proc = run("-q", "sweep", SWEEP, "--out", path)
        one_line_error(proc, 2, name, "choose another --out")
        assert open(path).read() == text, f"{name} was changed"
    no_temporaries()


@test
def sweep_outputs_that_cannot_be_written_exit_2():
    proc = run("-q", "sweep", SWEEP, "--out", TMP)
    one_line_error(proc, 2, "is a directory")
    proc = run("-q", "sweep", SWEEP, "--out", os.path.join(TMP, "no-such-dir", "s.jsonl"))
    one_line_error(proc, 2, "s.jsonl", "does not exist")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([FMSIM, "-q", "sweep", SWEEP, "--jobs", "2"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    one_line_error(proc, 2, "standard output", "No space left on device")


@test
def a_full_disk_stops_a_sweep_with_whole_lines_then_it_resumes():
    path = os.path.join(TMP, "full.jsonl")
    size = os.path.getsize(REFERENCE)
    proc = subprocess.run([FMSIM, "-q", "sweep", SWEEP, "--out", path, "--jobs", "2"], capture_output=True, text=True,
                          preexec_fn=limited_file_size(size // 3), timeout=120)
    one_line_error(proc, 2, "full.jsonl", "write failed", "File too large", "resume")
    partial = sweep_lines(path)  # whole lines only
    assert 0 < len(partial) < POINTS
    proc = run("-q", "sweep", SWEEP, "--out", path, "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    same_as_reference(path)


@test
def children_die_with_a_killed_sweep_or_check():
    # Each point simulates 100,000 requests (about 10 s): the children must go with their parent at once.
    slow = sweep_file("slow", range(1, 5), requests=100000)
    for sig in (signal.SIGKILL, signal.SIGTERM):
        parent = subprocess.Popen([FMSIM, "-q", "sweep", slow, "--jobs", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert wait_for(lambda: len(children_of(parent.pid)) == 2), "the sweep started no children"
        wait_for(lambda: len(descendants_of(parent.pid)) >= 4, 5)
        children = descendants_of(parent.pid)
        parent.send_signal(sig)
        parent.wait()
        assert wait_for(lambda: not any(alive(c) for c in children), 3), f"children {children} outlived the sweep ({sig.name})"
    # Disaggregated serving simulates in a forked process: check -> serve -> its simulation (about 15 s).
    disaggregated = os.path.abspath(os.path.join(CONFIGS, "serving", "llama3.3-70b-p5en-disaggregated.json"))
    plan = write(TMP, "slow-plan.json", json.dumps({"name": "slow", "command": "serve", "scenario": disaggregated,
                                                    "set": ["workload.requests=200000", "workload.rate=5/s"],
                                                    "expect": [{"metric": "ttft_s.p99", "max": 9}]}))
    parent = subprocess.Popen([FMSIM, "-q", "check", plan], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_for(lambda: len(children_of(parent.pid)) == 1), "check started no child"
    assert wait_for(lambda: len(descendants_of(parent.pid)) >= 2, 10), "the serve point did not fork its simulation"
    children = descendants_of(parent.pid)
    parent.kill()
    parent.wait()
    assert wait_for(lambda: not any(alive(c) for c in children), 3), f"children {children} outlived fmsim check"


@test
def symbolic_links_are_followed_not_replaced():
    directory = os.path.join(TMP, "links")
    os.mkdir(directory)
    os.symlink("real.json", os.path.join(directory, "link.json"))
    proc = run("topo", CLUSTER, "--json", os.path.join(directory, "link.json"))
    assert proc.returncode == 0, proc.stderr
    assert os.path.islink(os.path.join(directory, "link.json")) and json.load(open(os.path.join(directory, "real.json")))["gpus"] == 16
    # A sweep resumed (and rewritten without its cut line) through a link.
    with open(REFERENCE) as f:
        reference = f.readlines()
    with open(os.path.join(directory, "real.jsonl"), "w") as f:
        f.writelines(reference[:POINTS - 2])
        f.write('{"index": 23, "point"')
    os.symlink("real.jsonl", os.path.join(directory, "link.jsonl"))
    proc = run("-q", "sweep", SWEEP, "--out", os.path.join(directory, "link.jsonl"), "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    assert os.path.islink(os.path.join(directory, "link.jsonl"))
    same_as_reference(os.path.join(directory, "real.jsonl"))
    no_temporaries(directory)


# ---- fmsim check ----------------------------------------------------------------------------------------

@test
def check_a_plan_that_stops_fitting_is_a_failing_junit_case():
    # Micro-batches of 8 x 8192 tokens: the activations (372 GB per GPU) cannot fit in 80 GB.
    sets = ["parallelism.micro_batch_size=8"]
    for name, command, expect in (("oom-named", "run", [{"metric": "oom", "equals": False}]),
                                  ("oom-implicit", "run", [{"metric": "mfu", "min": 0.0}]),
                                  ("oom-checkpoint", "checkpoint", [{"metric": "goodput", "min": 0.0}])):
        plan = write(TMP, name + ".json", json.dumps({"name": name, "command": command, "scenario": TRAINING, "set": sets, "expect": expect}))
        junit = os.path.join(TMP, name + ".xml")
        proc = run("-q", "check", plan, "--junit", junit)
        assert proc.returncode == 1, f"exit {proc.returncode}: {proc.stdout} {proc.stderr}"
        assert "FAIL" in proc.stdout and "oom" in proc.stdout, proc.stdout
        failures = [c for c in ET.parse(junit).getroot().iter("testcase") if c.find("failure") is not None]
        assert len(failures) == 1 and "oom" in failures[0].get("name"), ET.tostring(ET.parse(junit).getroot())


@test
def check_refuses_a_missing_baseline_directory():
    plan = os.path.join(CONFIGS, "plans", "llama3.3-70b-p5en-serving.json")
    junit = os.path.join(TMP, "baseline.xml")
    proc = run("-q", "check", plan, "--baseline", os.path.join(TMP, "no-such-baseline"), "--junit", junit)
    one_line_error(proc, 2, "no-such-baseline", "no such directory")
    assert not os.path.exists(junit)
    not_a_directory = write(TMP, "baseline-file", "{}")
    proc = run("-q", "check", plan, "--baseline", not_a_directory)
    one_line_error(proc, 2, "baseline-file", "not a directory")


if __name__ == "__main__":
    run_tests()
