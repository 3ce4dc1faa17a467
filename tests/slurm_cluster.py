"""A real single-node SLURM cluster on this machine, for tests/test_slurm.py.

Everything lives in one temporary directory and nothing touches the system's own SLURM or MUNGE
setup: a private `munged` (own key, own socket), and `slurmctld` + `slurmd` run in the foreground
(`-D`) as root from a generated slurm.conf, on free TCP ports. Clients find it through SLURM_CONF.

No slurmdbd: accounting storage is off, so `sacct` has nothing to query. Job status comes from
`squeue` (the executor plugin's `status_command: squeue`), which sees finished jobs for MinJobAge
seconds (set to an hour), and every finished job is also written to a job-completion log
(jobcomp/filetxt) that `completed_jobs()` parses. The node advertises `gpus` GPUs (a GRES whose
device files are empty stand-ins), so a `--gpus=N` request is scheduled and allocated as on a GPU
node (no CUDA_VISIBLE_DEVICES is set: the files are not devices).

Jobs must find the config too. Real clusters keep it at /etc/slurm/slurm.conf or fetch it from
slurmctld (configless); here it is in the temporary directory, and SLURM_CONF reaches the job
through sbatch's --export=ALL. But snakemake-executor-plugin-slurm-jobstep (>= 0.6.1) strips every
SLURM_* variable, SLURM_CONF included, before it runs the job's `srun` step, so `bin_dir` holds an
`srun` that puts SLURM_CONF back and runs the real one: put it first on the PATH of the Snakemake
process that submits.
"""

from __future__ import annotations

import getpass
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import stop_process

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "squeue", "scontrol", "sinfo", "scancel")
PARTITION = "rankscale-cpu"  # the default partition
GPU_PARTITION = "rankscale-gpu"  # the same node again, for jobs sent elsewhere by the profile


def missing_binaries() -> list[str]:
    """SLURM and MUNGE programs the cluster needs that are not installed."""
    found = {name: shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin") for name in DAEMONS + CLIENTS}
    return [name for name, path in found.items() if path is None]


def _which(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if path is None:
        raise FileNotFoundError(name)
    return path


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _node_hardware() -> dict[str, str]:
    """What `slurmd -C` detects on this machine (CPUs, sockets, cores, threads, RealMemory)."""
    out = subprocess.run([_which("slurmd"), "-C"], capture_output=True, text=True, check=True).stdout
    fields = dict(re.findall(r"(\w+)=(\S+)", out.splitlines()[0]))
    fields.pop("NodeName", None)
    return fields


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    node: str
    partition: str = PARTITION
    gpu_partition: str = GPU_PARTITION
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def bin_dir(self) -> Path:
        """Holds the `srun` wrapper that restores SLURM_CONF inside jobs (see the module docstring)."""
        return self.root / "bin"

    @property
    def env(self) -> dict[str, str]:
        """The environment that points SLURM clients (and the jobs they submit) at this cluster."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SQUEUE_"))}
        return {**env, "SLURM_CONF": str(self.conf)}

    def run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(cmd), env=self.env, capture_output=True, text=True, timeout=60, check=check)

    def jobs(self) -> list[dict[str, str]]:
        """Every job slurmctld still knows about (finished ones for MinJobAge), from `scontrol show job -o`."""
        out = self.run("scontrol", "show", "job", "-o", "--details").stdout
        return [_parse_record(line) for line in out.splitlines() if line.startswith("JobId=")]

    def completed_jobs(self) -> list[dict[str, str]]:
        """Every job that has ended, from the job-completion log."""
        path = self.root / "log" / "jobcomp.txt"
        if not path.exists():
            return []
        return [_parse_record(line) for line in path.read_text().splitlines() if line.strip()]

    def logs(self) -> str:
        """The daemons' logs, for failure messages."""
        parts = []
        for name in ("slurmctld.log", "slurmd.log", "munged.log"):
            path = self.root / "log" / name
            if path.exists():
                parts.append(f"--- {name} (last 3000 chars) ---\n{path.read_text(errors='replace')[-3000:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        """Cancel every job, let them end, then end the daemons this cluster started (slurmd first)."""
        if self.procs.get("slurmctld") and self.procs["slurmctld"].poll() is None:
            self.run("scancel", "--full", f"--user={getpass.getuser()}", check=False)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                active = self.run("squeue", "--noheader", "--states=PENDING,RUNNING,COMPLETING", check=False)
                if active.returncode != 0 or not active.stdout.strip():
                    break
                time.sleep(0.5)
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            stop_process(proc)
        for pid in self.stray_job_processes():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stray_job_processes(self) -> list[int]:
        """This cluster's slurmstepd processes still alive, and their descendants (the jobs).

        slurmstepd outlives slurmd by design; a normal stop leaves none (every job was cancelled
        and has ended). Recognised by the SLURM_CONF they inherited from this cluster's slurmd.
        """
        marker = f"SLURM_CONF={self.conf}".encode()
        children: dict[int, list[int]] = {}
        stepds = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(proc.name))
                if (proc / "comm").read_text().strip() == "slurmstepd" and marker in (
                    proc / "environ"
                ).read_bytes().split(b"\0"):
                    stepds.append(int(proc.name))
            except (OSError, IndexError, ValueError):
                continue
        found, todo = [], list(stepds)
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(children.get(pid, []))
        return found


def _parse_record(line: str) -> dict[str, str]:
    """`Key=value Key=value ...` as scontrol -o and jobcomp/filetxt write one job (values hold no spaces)."""
    return dict(re.findall(r"(\w+)=(\S*)", line))


def _wait(predicate, what: str, cluster: SlurmCluster, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, proc in cluster.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode} while waiting for {what}\n{cluster.logs()}")
        if predicate():
            return
        time.sleep(0.5)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}\n{cluster.logs()}")


def write_config(root: Path, gpus: int = 2) -> tuple[Path, str]:
    """Write slurm.conf and gres.conf for a one-node cluster under `root`; return (slurm.conf, node name)."""
    node = socket.gethostname().split(".")[0]
    hw = _node_hardware()
    ctld_port, slurmd_port = _free_ports(2)
    for sub in ("etc", "run", "log", "state", "spool", "dev"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    node_hw = " ".join(
        f"{k}={v}"
        for k, v in hw.items()
        if k in {"CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory"}
    )
    gres = f" Gres=gpu:{gpus}" if gpus else ""
    for i in range(gpus):
        (root / "dev" / f"nvidia{i}").touch()
    conf = root / "etc" / "slurm.conf"
    conf.write_text(
        f"""# generated by tests/slurm_cluster.py
ClusterName=rankscale
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/run/munge.sock
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# no cgroups: processes tracked through /proc, no task confinement
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# no slurmdbd: finished jobs stay visible to squeue/scontrol for MinJobAge seconds and are
# appended to a job-completion log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/log/jobcomp.txt
MinJobAge=3600
ReturnToService=2
SchedulerParameters=sched_interval=2
GresTypes=gpu
NodeName={node} NodeAddr=127.0.0.1 {node_hw}{gres} State=UNKNOWN
PartitionName={PARTITION} Nodes={node} Default=YES MaxTime=INFINITE State=UP
PartitionName={GPU_PARTITION} Nodes={node} MaxTime=INFINITE State=UP
"""
    )
    (root / "etc" / "gres.conf").write_text(
        # a GPU GRES needs device files: empty files stand in for /dev/nvidia0, /dev/nvidia1, ...
        "AutoDetect=off\n" + (f"NodeName={node} Name=gpu File={root}/dev/nvidia[0-{gpus - 1}]\n" if gpus else "")
    )
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    srun = bin_dir / "srun"
    srun.write_text(f'#!/bin/sh\nSLURM_CONF="${{SLURM_CONF:-{conf}}}" exec {_which("srun")} "$@"\n')
    srun.chmod(0o755)
    return conf, node


@contextmanager
def local_cluster(gpus: int = 2) -> Iterator[SlurmCluster]:
    """Start MUNGE, slurmctld and slurmd in a fresh temporary directory; stop them all on exit.

    Must run as root (slurmd runs jobs as their submitting user and needs to switch users).
    """
    if os.geteuid() != 0:
        raise PermissionError("a local SLURM cluster needs root (slurmd, munged with a private key)")
    # munged wants every directory above its socket searchable by everyone, so not under pytest's 0700 tmp
    root = Path(tempfile.mkdtemp(prefix="rankscale-slurm-"))
    root.chmod(0o755)
    cluster = None
    try:
        conf, node = write_config(root, gpus)
        (root / "run").chmod(0o755)
        (root / "etc").chmod(0o755)
        key_dir = root / "munge"
        key_dir.mkdir(mode=0o700)
        key = key_dir / "munge.key"
        subprocess.run([_which("mungekey"), "--create", f"--keyfile={key}"], check=True, capture_output=True)
        cluster = SlurmCluster(root=root, conf=conf, node=node)
        log = root / "log"

        def start(name: str, *args: str) -> None:
            out = open(log / f"{name}.stdout", "wb")
            cluster.procs[name] = subprocess.Popen(
                [_which(name), *args], env=cluster.env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
            out.close()

        start(
            "munged",
            "--foreground",
            f"--socket={root}/run/munge.sock",
            f"--key-file={key}",
            f"--log-file={log}/munged.log",
            f"--pid-file={root}/run/munged.pid",
            f"--seed-file={key_dir}/munged.seed",
        )
        _wait(lambda: (root / "run" / "munge.sock").exists(), "munged's socket", cluster, timeout=20)
        start("slurmctld", "-D", "-f", str(conf))
        _wait(lambda: cluster.run("scontrol", "ping", check=False).returncode == 0, "slurmctld", cluster)
        start("slurmd", "-D", "-f", str(conf), "-N", node)

        def node_idle() -> bool:
            out = cluster.run("sinfo", "--noheader", "--Node", "--format=%T", check=False).stdout
            states = {state.rstrip("*") for state in out.split()}
            return bool(states) and states <= {"idle", "mixed", "allocated"}

        _wait(node_idle, f"node {node} to come up idle", cluster)
        yield cluster
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
