#!/usr/bin/env python3
"""The README's two commands: `bash scripts/bootstrap.sh demo|test` on a machine with nothing but bash.
apt-get, dpkg-query, sudo and make are replaced by stubs on PATH that log what they are asked, so the test
checks what would be installed and run without touching the machine's packages.
Usage: run_bootstrap_tests.py FMSIM SOURCE_DIR"""
import os
import re
import subprocess
import tempfile

from cli_support import SOURCE, run_tests, test

STUBS = {
    # dpkg-query -W -f='${Status}' PACKAGE: "installed" for the packages listed in $STUB_INSTALLED.
    "dpkg-query": 'for p in $STUB_INSTALLED; do [ "$p" = "${!#}" ] && { printf "install ok installed"; exit 0; }; done; exit 1',
    # apt-get prints a progress line on stdout, as the real one does, and logs its arguments.
    "apt-get": 'echo "apt-get $*" >> "$STUB_LOG"; echo "Unpacking stub-progress ($*)"',
    "sudo": 'exec "$@"',
    "make": 'echo "make $*" >> "$STUB_LOG"',
}


def stubbed(args, installed=()):
    """Runs ARGS (from the source directory) with the stubs first on PATH; returns (proc, logged lines)."""
    with tempfile.TemporaryDirectory() as d:
        bindir = os.path.join(d, "bin")
        os.mkdir(bindir)
        for name, body in STUBS.items():
            path = os.path.join(bindir, name)
            with open(path, "w") as f:
                f.write("#!/usr/bin/env bash\n" + body + "\n")
            os.chmod(path, 0o755)
        log = os.path.join(d, "log")
        open(log, "w").close()
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], STUB_LOG=log,
                   STUB_INSTALLED=" ".join(installed))
        proc = subprocess.run(args, cwd=SOURCE, env=env, capture_output=True, text=True, timeout=60)
        with open(log) as f:
            return proc, f.read().splitlines()


def installed_packages(log):
    lines = [l for l in log if l.startswith("apt-get install")]
    assert len(lines) == 1, log
    return lines[0].split()


BUILD_ONLY = ["make", "build-essential", "cmake", "ninja-build", "libsimgrid-dev", "libcli11-dev"]
TEST_ONLY = ["catch2", "python3", "chromium", "python3-jsonschema"]


@test
def demo_installs_make_and_the_build_packages_only():
    proc, log = stubbed(["bash", "scripts/bootstrap.sh", "demo"])
    assert proc.returncode == 0, proc.stderr
    packages = installed_packages(log)
    for p in BUILD_ONLY:
        assert p in packages, f"{p} not installed by the demo: {packages}"
    for p in TEST_ONLY:
        assert p not in packages, f"the demo installs the test-only package {p}"
    assert log[0] == "apt-get update" and log[-1] == "make demo", log


@test
def test_installs_the_test_packages_too():
    proc, log = stubbed(["bash", "scripts/bootstrap.sh", "test"])
    assert proc.returncode == 0, proc.stderr
    packages = installed_packages(log)
    for p in BUILD_ONLY + TEST_ONLY:
        assert p in packages, f"{p} not installed for the tests: {packages}"
    assert log[-1] == "make test", log


@test
def apt_progress_is_shown():
    proc, log = stubbed(["bash", "scripts/install-deps.sh"])
    assert proc.returncode == 0, proc.stderr
    for step in ("update", "install"):
        assert f"Unpacking stub-progress ({step}" in proc.stdout, f"the output of apt-get {step} is hidden"
    for line in log:
        assert not any(arg.startswith("-q") or arg == "--quiet" for arg in line.split()), f"apt-get runs quietly: {line}"


@test
def nothing_runs_when_everything_is_installed():
    everything = subprocess.run(["bash", "-c", "grep -o '[a-z0-9][a-z0-9.+-]*' scripts/install-deps.sh"],
                                cwd=SOURCE, capture_output=True, text=True).stdout.split()
    proc, log = stubbed(["bash", "scripts/install-deps.sh", "--test"], installed=everything)
    assert proc.returncode == 0, proc.stderr
    assert log == [], f"apt-get ran although nothing is missing: {log}"
    proc, log = stubbed(["bash", "scripts/bootstrap.sh", "test"], installed=everything)
    assert proc.returncode == 0 and log == ["make test"], log


@test
def a_wrong_argument_is_refused():
    for args in (["bash", "scripts/bootstrap.sh"], ["bash", "scripts/bootstrap.sh", "tests"],
                 ["bash", "scripts/install-deps.sh", "--tset"]):
        proc, log = stubbed(args)
        assert proc.returncode == 2 and "usage" in proc.stderr and log == [], (args, proc.stderr, log)


def readme_commands():
    """The README's first code block: its command lines, comments dropped."""
    with open(os.path.join(SOURCE, "README.md")) as f:
        block = re.search(r"```sh\n(.*?)```", f.read(), re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


@test
def readme_starts_with_the_two_commands_and_ci_runs_the_second():
    commands = readme_commands()
    assert commands == ["bash scripts/bootstrap.sh demo", "bash scripts/bootstrap.sh test"], commands
    with open(os.path.join(SOURCE, ".ci", "run")) as f:
        ci = [l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")]
    assert commands[1] in ci, f".ci/run does not run {commands[1]!r}: {ci}"


@test
def the_demo_builds_only_the_binary():
    proc = subprocess.run(["make", "-n", "demo", "BUILD_DIR=build-never"], cwd=SOURCE, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    builds = [l for l in proc.stdout.splitlines() if "cmake --build" in l]
    assert builds and all("--target fmsim" in l for l in builds), proc.stdout
    assert "-DFMSIM_BUILD_TESTS=OFF" in proc.stdout and "--test" not in proc.stdout, proc.stdout


if __name__ == "__main__":
    run_tests()
